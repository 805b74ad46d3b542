"""Issue 45 item 5: a follow-up and its spelled-out question show the same columns. A
listing shows, after what it asks, the columns that chose its rows (the column a ranking
cut by a LIMIT is ordered by, a number compared by a range); a follow-up about the
earlier rows shows the columns that chose those rows, as the question spelled out does.
The real linker and verifier read each question; statements are compared by what they
show."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.conversation import deciding, labels, restrict, subject
from services.sql.conversation._followup import with_limit
from services.sql.results import with_deciding
from tests.unit.sql.schemas import col, key, linked_statement

TODAY = date(2026, 11, 30)

CARS = Catalog(
    "cars",
    (
        TableInfo(
            "public",
            "cars_data",
            columns=(col("id"), col("mpg"), col("cylinders"), col("weight"), col("year")),
            primary_key=("id",),
        ),
    ),
)
MUSEUMS = Catalog(
    "museums",
    (
        TableInfo(
            "public",
            "museum",
            columns=(
                col("museum_id"),
                col("name", "text", ("Plaza Museum", "Capital Plaza Museum")),
                col("num_of_staff"),
                col("open_year"),
            ),
            primary_key=("museum_id",),
        ),
    ),
)


def _shown(tree: exp.Expr) -> list[str]:
    return [e.unalias().name for e in tree.expressions if isinstance(e.unalias(), exp.Column)]


def test_a_result_reference_shows_what_chose_the_earlier_rows_as_spelled_out():
    """ "what year is it from?" after the heaviest car shows the year and the weight that
    made it the heaviest, as "What year is the heaviest car from?" does: the same rows."""
    alone = linked_statement("What year is the heaviest car from?", CARS, TODAY)
    earlier = with_limit(
        linked_statement("Which 5 cars are the heaviest?", CARS, TODAY).sql(dialect="postgres"), 1
    )
    about = subject(earlier, CARS)
    asked = linked_statement("What is the year of the cars?", CARS, TODAY).sql(dialect="postgres")
    sql = restrict(
        asked, earlier, about, labels(earlier, about, CARS), deciding(earlier, about, CARS)
    )
    follow_up = sqlglot.parse_one(sql, dialect="postgres")
    assert isinstance(follow_up, exp.Select)
    assert _shown(follow_up) == _shown(alone) == ["year", "weight"]


def test_a_listing_filtered_by_a_range_shows_the_numbers_in_the_tables_order():
    """Whatever order the words give the conditions, the numbers they compared are shown
    after what was asked, in the table's own order, so two phrasings show alike."""
    one = linked_statement("List the museums that opened after 2009.", MUSEUMS, TODAY)
    # after the museums' key and name (results.with_labels)
    assert _shown(one) == ["museum_id", "name", "open_year"]
    first = linked_statement(
        "List the museums with more than 16 staff that opened after 2009.", MUSEUMS, TODAY
    )
    second = linked_statement(
        "List the museums that opened after 2009 with more than 16 staff.", MUSEUMS, TODAY
    )
    assert _shown(first) == _shown(second) == ["museum_id", "name", "num_of_staff", "open_year"]


def test_what_the_question_states_or_a_grouping_shows_nothing_more():
    """An equality's value is the one the question said; a grouped statement's rows are
    groups, whose numbers no single row chose, as are a DISTINCT listing's; a text
    compared is no number; an order with no cut chooses no rows."""
    for sql in (
        "SELECT t0.name FROM public.museum AS t0 WHERE t0.open_year = 2010",
        "SELECT t0.open_year, COUNT(*) FROM public.museum AS t0 WHERE t0.num_of_staff > 5 "
        "GROUP BY t0.open_year",
        "SELECT t0.museum_id FROM public.museum AS t0 WHERE t0.name > 'M'",
        "SELECT t0.name FROM public.museum AS t0 ORDER BY t0.num_of_staff DESC",
        # the distinct years asked for: each staff count beside them would split a year
        "SELECT DISTINCT t0.open_year FROM public.museum AS t0 WHERE t0.num_of_staff > 5",
    ):
        assert with_deciding(sql, MUSEUMS) == sql
    # the staff count ranked the museums; the name after it only breaks ties at the cut
    ranked = (
        "SELECT t0.name FROM public.museum AS t0 ORDER BY t0.num_of_staff DESC, t0.name LIMIT 2"
    )
    assert _shown(sqlglot.parse_one(with_deciding(ranked, MUSEUMS))) == ["name", "num_of_staff"]


SINGERS = Catalog(
    "singers",
    (
        TableInfo(
            "public",
            "singer",
            columns=(
                key("singer_id"),
                col("name", "text", ("Joe Sharp", "Rose White")),
                col("age"),
            ),
            primary_key=("singer_id",),
        ),
        TableInfo(
            "public",
            "concert",
            columns=(
                key("concert_id"),
                col("concert_name", "text", ("Auditions", "Super bootcamp")),
                col("year"),
            ),
            primary_key=("concert_id",),
        ),
        TableInfo(
            "public",
            "singer_in_concert",
            columns=(key("concert_id"), key("singer_id")),
            primary_key=("concert_id", "singer_id"),
            foreign_keys=(
                ForeignKeyInfo(("concert_id",), "public.concert", ("concert_id",)),
                ForeignKeyInfo(("singer_id",), "public.singer", ("singer_id",)),
            ),
        ),
    ),
)


def test_a_distinct_over_joins_shows_its_rows_deciding_column_as_the_follow_up_does():
    """ "List the names of singers older than 30 who sang at the Auditions concert." is
    read over the joins to the concerts and written as the singers having one (an
    EXISTS, ``results.with_semijoins``), one row per singer: each singer's age is one
    value of that row, so it is shown, as the follow-up that narrows "singers older than
    30" to that concert (an EXISTS, the earlier columns) shows it."""
    alone = linked_statement(
        "List the names of singers older than 30 who are in the Auditions concert.", SINGERS, TODAY
    )
    assert alone.find(exp.Exists) is not None and not alone.args.get("joins")
    first = linked_statement("List the names of singers older than 30.", SINGERS, TODAY)
    assert _shown(alone) == _shown(first) == ["singer_id", "name", "age"]


def test_a_distinct_over_joins_shows_no_column_of_a_joined_table():
    """ "singers who sang at a concert held after 2014": the year is a concert's, one
    value per concert a singer sang at; shown, it would split a singer into a row per
    year, so the DISTINCT's rows (one per singer) show no year."""
    tree = sqlglot.parse_one(
        "SELECT DISTINCT t0.singer_id, t0.name FROM public.singer AS t0 JOIN"
        " public.singer_in_concert AS t1 ON t1.singer_id = t0.singer_id JOIN public.concert AS t2"
        " ON t2.concert_id = t1.concert_id WHERE t2.year > 2014 AND t0.age > 30",
        dialect="postgres",
    )
    shown = _shown(
        sqlglot.parse_one(with_deciding(tree.sql("postgres"), SINGERS), dialect="postgres")
    )
    assert shown == ["singer_id", "name", "age"]
    # a DISTINCT of values the question asked for (no joins that repeat a row) stays as is
    plain = "SELECT DISTINCT t0.name FROM public.singer AS t0 WHERE t0.age > 30"
    assert with_deciding(plain, SINGERS) == plain
