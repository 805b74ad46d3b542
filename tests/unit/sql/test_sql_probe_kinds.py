"""Wrong-answer kinds found by the probe set on a fresh real database (the Lahman
baseball database, bench/results/ISSUE-45-probes-lahman): each statement below was an
answer the engine gave, wrong, and is now refused naming why; the right statement for
the same question passes. The catalog is the shape of the real one: a table of people
(players and managers), and a table of awards whose name says "players" because each
row refers to a player."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, Vocabulary, read_question, unexplained
from services.sql.verify._phrases import verify_statement


def _col(name: str, data_type: str = "text") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


TO_PEOPLE = (ForeignKeyInfo(("player_id",), "public.people", ("player_id",)),)
BASEBALL = Catalog(
    "baseball",
    (
        TableInfo(
            "public",
            "people",
            comment="Players and managers, one row per person",
            columns=(
                _col("player_id"),
                _col("name_first"),
                _col("name_last"),
                _col("weight", "integer"),
                _col("throws"),
                _col("debut", "date"),
            ),
            primary_key=("player_id",),
        ),
        TableInfo(
            "public",
            "awards_players",
            columns=(
                _col("player_id"),
                _col("award_id"),
                _col("year_id", "integer"),
                _col("lg_id"),
                _col("tie"),
            ),
            primary_key=("award_id", "year_id", "lg_id", "player_id"),
            foreign_keys=TO_PEOPLE,
        ),
        TableInfo(
            "public",
            "salaries",
            columns=(_col("player_id"), _col("year_id", "integer"), _col("salary", "integer")),
            primary_key=("player_id", "year_id"),
            foreign_keys=TO_PEOPLE,
        ),
    ),
)
VOCABULARY = Vocabulary(BASEBALL, JoinGraph(BASEBALL))
PEOPLE_AWARDS = (
    "public.people AS t0 JOIN public.awards_players AS t1 ON t1.player_id = t0.player_id"
)


def _verify(question: str, sql: str) -> None:
    verify_statement(read_question(question, VOCABULARY, date(2026, 11, 29)), sql)


@pytest.mark.parametrize(
    ("question", "wrong", "right", "reason"),
    [
        (  # the rows of a table that refer to the noun counted
            "How many players are there?",
            "SELECT COUNT(*) AS count FROM public.awards_players AS t0",
            "SELECT COUNT(t0.player_id) AS count FROM public.people AS t0",
            "not the rows that refer to them",
        ),
        (  # … the same when a verb follows the noun
            "How many players won an award?",
            "SELECT COUNT(*) AS count FROM public.awards_players AS t0",
            "SELECT COUNT(DISTINCT t0.player_id) AS count FROM public.awards_players AS t0",
            "not the rows that refer to them",
        ),
        (  # a join that only keeps the players with an award, unasked
            "What is the lowest weight of any player?",
            f"SELECT MIN(t0.weight) AS w FROM {PEOPLE_AWARDS}",
            "SELECT MIN(t0.weight) AS w FROM public.people AS t0",
            "the question says nothing of award",
        ),
        (  # a count of a column no word names counts its non-NULL values
            "For each award, how many times was it given?",
            "SELECT t0.award_id AS a, COUNT(t0.tie) AS n FROM public.awards_players AS t0 "
            "GROUP BY t0.award_id",
            "SELECT t0.award_id AS a, COUNT(*) AS n FROM public.awards_players AS t0 "
            "GROUP BY t0.award_id",
            "a column the question does not name",
        ),
        (  # the year of the award, bounded on the player's debut
            "Which players won an award in 2016? Give their last names and the award.",
            f"SELECT t0.name_last AS n, t1.award_id AS a FROM {PEOPLE_AWARDS} "
            "WHERE (t0.debut >= '2016-01-01' AND t0.debut < '2017-01-01')",
            f"SELECT t0.name_last AS n, t1.award_id AS a FROM {PEOPLE_AWARDS} "
            "WHERE (t1.year_id = 2016)",
            "a date no word of the question names",
        ),
    ],
)
def test_a_probe_kind_is_refused_and_the_right_statement_passes(
    question: str, wrong: str, right: str, reason: str
) -> None:
    with pytest.raises(LinkError, match=reason):
        _verify(question, wrong)
    _verify(question, right)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        # the table's own noun counted: its rows are what is asked
        ("How many awards are there?", "SELECT COUNT(*) AS c FROM public.awards_players AS t0"),
        # the join asked for: "who won an award"
        (
            "What is the lowest weight of any player who won an award?",
            f"SELECT MIN(t0.weight) AS w FROM {PEOPLE_AWARDS}",
        ),
        # the column counted is the one named
        (
            "How many salaries are there?",
            "SELECT COUNT(t0.salary) AS c FROM public.salaries AS t0",
        ),
        # the date bounded is the one the question names
        (
            "Which players made their debut in 2016 and won an award? Give their last names "
            "and the award.",
            f"SELECT t0.name_last AS n, t1.award_id AS a FROM {PEOPLE_AWARDS} "
            "WHERE (t0.debut >= '2016-01-01' AND t0.debut < '2017-01-01')",
        ),
    ],
)
def test_what_the_question_says_passes(question: str, sql: str) -> None:
    _verify(question, sql)


def test_a_hyphened_compound_is_a_condition_not_a_relation() -> None:
    """ "left-handed" qualifies the players: answered with every player counted, its
    words are left unexplained (a relation verb's "-ed" or past form is not forgiven in
    a compound), while a plain "-ed" verb still relates tables."""
    people = ["public.people"]
    throws = {("public.people", "throws")}
    question = "How many players throw left-handed?"
    assert unexplained(question, VOCABULARY, people, [], columns=throws) == "handed"
    assert unexplained("Which players retired?", VOCABULARY, people, []) is None
