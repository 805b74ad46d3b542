"""Spelled-out nycflights13 first questions that were refused (ISSUE-45, s60, flights3),
through the real linker and verifier on the shared nycflights13-shaped catalog:

- a time of day said as HH:MM compared in the encoding of the column that holds it (an
  hhmm clock time ``dep_time``, an hour of the day ``weather.hour``), refused where the
  words name no one such column or an hour column cannot hold the time;
- a list of months ("in June, July or August") bounding the stored month, as one month;
- "not operated by <a stored name>": the one value the rows do not have, where each row
  has one (the name is of a table the rows reference), else refused;
- "planes with 2 engines … built before 1990": the number kept when another phrase sends
  the question past the clause reader.
"""

from __future__ import annotations

import pytest

from services.sql.linker import LinkError
from tests.unit.sql.flights import flights_refused as _refused
from tests.unit.sql.flights import flights_sql as _sql


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        (
            "How many flights did JetBlue Airways operate from JFK that departed before 12:00?",
            "t0.dep_time < 1200",
        ),
        ("How many flights from EWR departed at 18:00 or later?", "t0.dep_time >= 1800"),
        (
            "What was the average temp at EWR in February between 12:00 and 17:59?",
            "t0.hour BETWEEN 12 AND 17",
        ),
    ],
)
def test_a_time_of_day_is_compared_in_the_columns_encoding(question: str, condition: str) -> None:
    """12:00 is 1200 in a clock time kept as hhmm (its extent reaches 2400), and the hours
    12 to 17 in an hour of the day (0..23): refused before, "does not use the number 12"."""
    assert condition in _sql(question)


@pytest.mark.parametrize(
    ("question", "why"),
    [
        # "departed" names no more dep_time than sched_dep_time with no verb before it
        ("How many flights from JFK before 12:00?", "the question names none"),
        # whole hours cannot say half past
        ("What was the average temp at EWR before 12:30?", "whole hours"),
    ],
)
def test_a_time_of_day_no_one_column_can_hold_is_refused(question: str, why: str) -> None:
    assert why in _refused(question)


def test_a_list_of_months_bounds_the_stored_month() -> None:
    """ "in June, July or August" is the stored months 6, 7 and 8, as "in June" is 6:
    refused before, "the statement does not bound the month 'July'"."""
    sql = _sql("What was the total distance of flights from LGA to DEN in June, July or August?")
    assert "t0.month IN (6, 7, 8)" in sql


def test_a_single_month_is_still_equal() -> None:
    sql = _sql("What was the total distance of flights from LGA to DEN in June?")
    assert "t0.month = 6" in sql and " IN (" not in sql


def test_a_list_of_months_with_a_year_is_left_to_the_date_windows() -> None:
    """ "in June and July 2013": the year is July's alone, so June is not read as every
    June; left unread, the verifier refuses it rather than a guess."""
    assert "'June'" in _refused("How many flights left JFK in June and July 2013?")


def test_a_value_not_operated_by_is_the_one_value_the_rows_lack() -> None:
    """Each flight has one airline: "not operated by American Airlines Inc." keeps the
    flights whose airline's name is another; refused before ("does not apply 'not'")."""
    sql = _sql("How many flights not operated by American Airlines Inc. went from EWR to BOS?")
    assert "t1.name <> 'American Airlines Inc.'" in sql
    assert "t0.origin = 'EWR'" in sql and "t0.dest = 'BOS'" in sql


def test_a_negated_value_of_a_table_that_holds_many_per_row_is_refused() -> None:
    """A plane is flown by many airlines' flights: "not flown by United" is none of them
    or some other one; not guessed."""
    assert "'not'" in _refused("How many planes not flown by United Air Lines Inc. are there?")


def test_a_number_of_a_column_is_kept_beside_a_year_bound() -> None:
    """ "with 2 engines" sent past the clause reader by "built before 1990" was dropped
    (refused: "does not use the number 2")."""
    sql = _sql("How many planes with 2 engines made by BOEING were built before 1990?")
    assert "t0.engines = 2" in sql and "t0.year < 1990" in sql


def test_with_a_number_of_a_table_is_no_column_value() -> None:
    """ "with 2 flights" counts related rows, no column equal to 2: not read as one."""
    sql_or_refusal: str
    try:
        sql_or_refusal = _sql("How many planes with 2 flights were built before 1990?")
    except LinkError as refused:
        sql_or_refusal = str(refused)
    assert "= 2)" not in sql_or_refusal


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        (
            "How many flights that are morning departures did JetBlue Airways operate from JFK?",
            "t0.dep_time < 1200",
        ),
        ("How many flights from EWR are evening departures?", "t0.dep_time >= 1800"),
        ("What was the average temp at EWR in the afternoon?", "t0.hour BETWEEN 12 AND 17"),
    ],
)
def test_a_part_of_the_day_is_a_span_of_clock_hours(question: str, condition: str) -> None:
    """The morning is before noon, the afternoon noon to 17:59, the evening from 18:00,
    on the one clock column the words name (or the only one): refused before."""
    assert condition in _sql(question)


@pytest.mark.parametrize(
    "question",
    [
        # three clock columns, none named: was answered over the whole day
        "How many flights from JFK in the morning?",
        # no column holds a time of day
        "How many planes made by BOEING in the morning?",
    ],
)
def test_a_part_of_the_day_no_one_clock_column_holds_is_refused(question: str) -> None:
    assert "'morning'" in _refused(question)


def test_each_number_goes_to_the_column_its_own_noun_names() -> None:
    """ "planes with 2 engines had more than 100 seats": "engines" has its own number, so
    100 is the seats' (the noun said after it), not ``engines > 100`` (before: that
    reading, refused only by the verifier's check on "seats")."""
    sql = _sql("How many planes with 2 engines had more than 100 seats before 1990?")
    assert "t0.engines = 2" in sql and "t0.seats > 100" in sql and "t0.year < 1990" in sql
    assert "engines > 100" not in sql


def test_a_number_whose_own_noun_names_no_column_is_not_given_to_another() -> None:
    """The column before the comparison has its own number and the word after this one
    names no column of the planes ("100 passengers"): the number is left unread and the
    question refused, never compared with the engines."""
    refusal = _refused("How many planes with 2 engines had more than 100 passengers before 1990?")
    assert "engines > 100" not in refusal
