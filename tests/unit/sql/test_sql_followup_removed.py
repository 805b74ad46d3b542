"""A condition of an earlier statement removed ("drop the delay filter"): the WHERE
conjuncts the words name, by column or value, read through the statement's parts; the
follow-up is refused naming the conditions when the words name none or several."""

from __future__ import annotations

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, built
from tests.unit.sql.statements import assert_same_sql

FLIGHTS = TableInfo(
    "public", "flights",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("origin", "text", False, sample_values=("JFK", "LGA")),
        ColumnInfo("arr_delay", "integer", True),
        ColumnInfo("status", "text", False, sample_values=("cancelled", "landed")),
        ColumnInfo("flown_on", "date", False),
    ),
    primary_key=("id",),
)  # fmt: skip
CATALOG = Catalog("air", (FLIGHTS,))

LATE_PER_ORIGIN = (
    "SELECT f.origin, COUNT(*) AS n FROM flights AS f WHERE f.arr_delay > 120 "
    "AND f.status = 'landed' AND f.flown_on >= '2023-01-01' AND f.flown_on < '2024-01-01' "
    "GROUP BY f.origin ORDER BY n DESC"
)


async def _never(question: str) -> str | None:
    raise AssertionError("removing a condition links no words")


async def _removed(sql: str, words: str) -> str:
    prior = Prior(sql, Relation.FILTER, condition=words, remove=True)
    statement, _ = await built(sql, prior, CATALOG, _never)
    return statement


@pytest.mark.parametrize(
    ("words", "kept"),
    [
        # by a word of the column it compares
        (
            "delay",
            "f.status = 'landed' AND f.flown_on >= '2023-01-01' AND f.flown_on < '2024-01-01'",
        ),
        (
            "status",
            "f.arr_delay > 120 AND f.flown_on >= '2023-01-01' AND f.flown_on < '2024-01-01'",
        ),
        # by the value it compares with
        (
            "landed",
            "f.arr_delay > 120 AND f.flown_on >= '2023-01-01' AND f.flown_on < '2024-01-01'",
        ),
        # a date column's two bounds, by "date" or by the year they bound
        ("date", "f.arr_delay > 120 AND f.status = 'landed'"),
        ("2023", "f.arr_delay > 120 AND f.status = 'landed'"),
    ],
)
async def test_the_named_condition_goes_and_the_rest_of_the_statement_stays(words: str, kept: str):
    assert_same_sql(
        await _removed(LATE_PER_ORIGIN, words),
        "SELECT f.origin, COUNT(*) AS n FROM flights AS f WHERE "
        f"{' AND '.join(f'({part})' for part in kept.split(' AND '))} "
        "GROUP BY f.origin ORDER BY n DESC",
    )


async def test_the_filter_of_a_statement_with_one_condition_is_that_condition():
    assert_same_sql(
        await _removed(
            "SELECT f.origin, COUNT(*) FROM flights AS f WHERE f.arr_delay > 120 GROUP BY f.origin",
            "filter",
        ),
        "SELECT f.origin, COUNT(*) FROM flights AS f GROUP BY f.origin",
    )


async def test_a_table_joined_only_for_the_removed_condition_goes_with_it():
    """Kept, the join would still keep only (or repeat) the rows the condition kept; a
    table the statement also shows stays."""
    assert_same_sql(
        await _removed(
            "SELECT f.origin, COUNT(*) FROM flights AS f JOIN flights AS g ON g.id = f.id "
            "WHERE g.status = 'landed' GROUP BY f.origin",
            "landed",
        ),
        "SELECT f.origin, COUNT(*) FROM flights AS f GROUP BY f.origin",
    )
    assert_same_sql(
        await _removed(
            "SELECT g.status, COUNT(*) FROM flights AS f JOIN flights AS g ON g.id = f.id "
            "WHERE g.status = 'landed' GROUP BY g.status",
            "landed",
        ),
        "SELECT g.status, COUNT(*) FROM flights AS f JOIN flights AS g ON g.id = f.id "
        "GROUP BY g.status",
    )


@pytest.mark.parametrize(
    ("words", "named"),
    [
        ("carrier", "no condition on 'carrier'"),  # no column or value of its conditions
        ("filter", "more than one condition"),  # the conditions of three columns
    ],
)
async def test_words_naming_no_condition_or_several_are_refused_naming_them(words: str, named: str):
    with pytest.raises(FollowUpError, match=named) as refused:
        await _removed(LATE_PER_ORIGIN, words)
    assert "arr_delay" in str(refused.value)


async def test_a_statement_without_conditions_has_none_to_remove():
    with pytest.raises(FollowUpError, match="no condition to remove"):
        await _removed("SELECT f.origin, COUNT(*) FROM flights AS f GROUP BY f.origin", "delay")
