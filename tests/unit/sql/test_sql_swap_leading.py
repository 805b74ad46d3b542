"""Issue 45 (s60): a value swap said by a name's leading words ("what about Delta
instead?" after the flights of 'United Air Lines Inc.') replaces the compared name with
the one stored value those words begin, as the linker reads "Delta" in a first question.
It was refused: no compared column stores 'Delta' as said. Nothing is guessed: words that
begin several values of the compared column, or that would stand for a code, swap
nothing."""

from __future__ import annotations

import pytest

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, edited


def _col(name: str, data_type: str = "integer", samples: tuple[str, ...] = ()) -> ColumnInfo:
    return ColumnInfo(name, data_type, True, sample_values=samples)


AIRLINES = (
    "United Air Lines Inc.",
    "Delta Air Lines Inc.",
    "American Airlines Inc.",
    "American Eagle Airlines Inc.",
)
FLIGHTS = Catalog(
    "air",
    (
        TableInfo(
            "public",
            "flights",
            columns=(
                _col("flight_id"),
                _col("carrier", "text", ("UA", "DL", "AA")),
                _col("origin", "text", ("JFK", "LGA", "EWR")),
                _col("month"),
            ),
            primary_key=("flight_id",),
            foreign_keys=(ForeignKeyInfo(("carrier",), "airlines", ("carrier",)),),
        ),
        TableInfo(
            "public",
            "airlines",
            columns=(_col("carrier", "text", ("UA", "DL", "AA")), _col("name", "text", AIRLINES)),
            primary_key=("carrier",),
        ),
    ),
)
UNITED = (
    "SELECT COUNT(*) AS count FROM public.flights AS t0 JOIN public.airlines AS t1 "
    "ON t1.carrier = t0.carrier WHERE (t0.month = 3) AND (t0.origin = 'JFK') "
    "AND (t1.name = 'United Air Lines Inc.')"
)


def _swap(sql: str, value: str) -> str:
    return edited(sql, Prior(sql, Relation.VALUE_SWAP, value=value), FLIGHTS)[0]


@pytest.mark.parametrize("said", ["Delta", "Delta instead", "Delta Air Lines"])
def test_a_name_said_by_its_leading_words_replaces_the_compared_name(said: str):
    sql = _swap(UNITED, said)
    assert "'Delta Air Lines Inc.'" in sql and "'United" not in sql
    assert "'JFK'" in sql  # the other compared value stays


def test_a_name_said_whole_is_still_swapped_as_stored():
    assert "'Delta Air Lines Inc.'" in _swap(UNITED, "Delta Air Lines Inc.")


def test_words_leading_two_stored_names_swap_nothing():
    # 'American Airlines Inc.' and 'American Eagle Airlines Inc.': which is unsaid
    with pytest.raises(FollowUpError, match="stores 'American'"):
        _swap(UNITED, "American")


def test_leading_words_of_a_column_the_statement_does_not_compare_swap_nothing():
    # the statement compares the origin and the month, no airline's name
    by_origin = "SELECT COUNT(*) FROM public.flights AS t0 WHERE t0.origin = 'JFK'"
    with pytest.raises(FollowUpError, match="stores 'Delta'"):
        _swap(by_origin, "Delta")
