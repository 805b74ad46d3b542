"""Round e of the Lahman probes (bench/results/ISSUE-45-probes-lahman): a schema that keeps
its time as an integer year (``year_id``) and refers to a team-season by the pair
``(year_id, team_id)``. A year said in the question bounds the year column whose stored
values are all years; a reference of two columns joins when both are joined; and the
wrong answers these unblocked (a value said only in part, somebody else's name shown)
are refused."""

from __future__ import annotations

from datetime import date

import pytest
import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, read_question
from services.sql.verify import verify_statement
from services.sql.verify._joins import join_pairs, join_refusal
from services.sql.verify._statement import read_statement

TODAY = date(2026, 11, 29)
YEARS = (2014, 2016)


def _col(name: str, data_type: str = "text", span: tuple[int, int] | None = None) -> ColumnInfo:
    return ColumnInfo(name, data_type, name not in ("year_id", "team_id", "player_id"), span=span)


TEAM_SEASON = ForeignKeyInfo(("year_id", "team_id"), "public.teams", ("year_id", "team_id"))
TO_PEOPLE = ForeignKeyInfo(("player_id",), "public.people", ("player_id",))


def _baseball(span: tuple[int, int] | None = YEARS) -> Catalog:
    return Catalog(
        "baseball",
        (
            TableInfo(
                "public",
                "teams",
                columns=(
                    _col("year_id", "integer", span),
                    _col("team_id"),
                    _col("name"),
                    _col("park"),
                    _col("attendance", "integer"),
                ),
                primary_key=("year_id", "team_id"),
            ),
            TableInfo(
                "public",
                "people",
                columns=(_col("player_id"), _col("name_first"), _col("name_last")),
                primary_key=("player_id",),
            ),
            TableInfo(
                "public",
                "salaries",
                columns=(
                    _col("year_id", "integer", span),
                    _col("team_id"),
                    _col("player_id"),
                    _col("salary", "integer"),
                ),
                primary_key=("year_id", "team_id", "player_id"),
                foreign_keys=(TEAM_SEASON, TO_PEOPLE),
            ),
            TableInfo(
                "public",
                "awards_players",
                columns=(
                    _col("player_id"),
                    _col("award_id"),
                    _col("year_id", "integer", span),
                ),
                primary_key=("award_id", "year_id", "player_id"),
                foreign_keys=(TO_PEOPLE,),
            ),
        ),
    )


def _sql(question: str, catalog: Catalog) -> str:
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    linked = QuestionLinker(question, vocabulary, TODAY, check=verify_statement).link()
    return " ".join(linked.sql.split())


# --- a year said, an integer year column --------------------------------------------

ATTENDANCE = "Which teams had an attendance of more than 3000000 in {}? Give their names."


def test_a_year_said_bounds_the_year_column_whose_values_are_years() -> None:
    sql = _sql(ATTENDANCE.format("2015"), _baseball())
    assert "t0.year_id = 2015" in sql and "'2015-01-01'" not in sql


@pytest.mark.parametrize(
    ("when", "condition"),
    [
        ("between 2014 and 2015", "t0.year_id BETWEEN 2014 AND 2015"),
        ("from 2014 to 2016", "t0.year_id BETWEEN 2014 AND 2016"),
        ("after 2014", "t0.year_id > 2014"),
        ("before 2016", "t0.year_id < 2016"),
        ("since 2015", "t0.year_id >= 2015"),
    ],
)
def test_a_range_of_years_is_a_range_of_the_year_column(when: str, condition: str) -> None:
    assert condition in _sql(ATTENDANCE.format(when), _baseball())


def test_two_bounds_joined_by_or_are_not_both_required() -> None:
    """ "after 2015 or before 2014": either bound, never both on one row (which keeps
    nothing); not read as two conditions, the question stays refused."""
    with pytest.raises(LinkError):
        _sql(ATTENDANCE.format("after 2015 or before 2014"), _baseball())


@pytest.mark.parametrize(
    ("span", "when"),
    [
        (None, "2015"),  # the values were never read: nothing says they are years
        ((1, 40), "2015"),  # a column named for years that holds small counts
        (YEARS, "March 2015"),  # a month: a year column cannot say it
    ],
)
def test_no_year_column_or_a_window_inside_a_year_is_still_refused(
    span: tuple[int, int] | None, when: str
) -> None:
    with pytest.raises(LinkError, match="no date column is in scope"):
        _sql(ATTENDANCE.format(when), _baseball(span))


# --- a reference of two columns ------------------------------------------------------


def _why(sql: str) -> list[str]:
    catalog = _baseball()
    nodes = read_statement(sqlglot.parse_one(sql, dialect="postgres"), catalog)
    pairs = join_pairs(nodes)
    return [join_refusal(pair, JoinGraph(catalog), pairs) for pair in pairs]


def test_a_reference_of_two_columns_joins_when_both_are_joined() -> None:
    both = (
        "SELECT t.name, SUM(s.salary) FROM salaries s JOIN teams t "
        "ON t.year_id = s.year_id AND t.team_id = s.team_id GROUP BY t.name"
    )
    assert _why(both) == ["", ""]


def test_one_column_of_a_reference_of_two_is_refused() -> None:
    alone = (
        "SELECT t.name, SUM(s.salary) FROM salaries s JOIN teams t ON t.team_id = s.team_id "
        "GROUP BY t.name"
    )
    (reason,) = _why(alone)
    assert "neither of which is a key" in reason
    # the same pair, but between two readings of teams: not the reference's columns joined
    split = (
        "SELECT a.name FROM salaries s JOIN teams a ON a.year_id = s.year_id "
        "JOIN teams b ON b.team_id = s.team_id"
    )
    assert all("neither of which is a key" in r for r in _why(split))


# --- what the unblocked questions answered wrong -------------------------------------


def _verify(question: str, sql: str, catalog: Catalog | None = None) -> None:
    catalog = catalog or _baseball()
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    verify_statement(read_question(question, vocabulary, TODAY), sql)


AWARDED = "FROM public.people AS t0 JOIN public.awards_players AS t1 ON t1.player_id = t0.player_id"


@pytest.mark.parametrize(
    ("question", "value"),
    [
        # one word of a title of three
        ("What are the last names of the players who won pitcher?", "TSN Pitcher of the Year"),
    ],
)
def test_a_value_said_only_in_part_is_refused(question: str, value: str) -> None:
    sql = f"SELECT DISTINCT t0.name_last AS n {AWARDED} WHERE (t1.award_id = '{value}')"
    with pytest.raises(LinkError, match="said only in part"):
        _verify(question, sql)


def test_a_value_said_whole_or_by_its_head_passes() -> None:
    sql = f"SELECT DISTINCT t0.name_last AS n {AWARDED} WHERE (t1.award_id = 'Cy Young Award')"
    _verify("What are the last names of the players who won the Cy Young Award?", sql)
    # a name said by its distinctive word, half of the value ("Honolulu" for 'Honolulu Intl')
    sql = f"SELECT DISTINCT t0.name_last AS n {AWARDED} WHERE (t1.award_id = 'Honolulu Intl')"
    _verify("What are the last names of the players who won Honolulu?", sql)


def test_a_bridge_by_a_reference_of_two_columns_must_be_said() -> None:
    """ "the teams that won the World Series" answered through the salaries the teams
    paid to players who won an award: the bridge's own noun ("salaries") unsaid."""
    through = (
        "SELECT DISTINCT t0.name AS name FROM public.teams AS t0 JOIN public.salaries AS t1 "
        "ON t1.year_id = t0.year_id AND t1.team_id = t0.team_id JOIN public.people AS t2 "
        "ON t2.player_id = t1.player_id JOIN public.awards_players AS t3 "
        "ON t3.player_id = t2.player_id WHERE (t3.award_id = 'World Series MVP')"
    )
    with pytest.raises(LinkError, match="says nothing of salar"):
        _verify("What are the names of the teams that won the World Series MVP?", through)
    _verify("What are the names of the teams that paid a salary to a World Series MVP?", through)
