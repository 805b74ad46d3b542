"""Issue 45 (s60): "and in December?" after "What was the lowest temperature at LGA in
January?", read as ``weather.month = 1``, moves the month on its number column. It was
refused ("'in December' names no year and the previous answer spans several"): the
statement has no date window to take a year from, but its rows hold the month as a
number, and the linker reads "in December" as ``month = 12`` as in any first question.
A month read on a date column is still refused: which year's December is unsaid."""

from __future__ import annotations

import pytest
import sqlglot

from services.sql.catalog import Catalog, ColumnInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, built

WEATHER = TableInfo(
    "public",
    "weather",
    columns=(
        ColumnInfo("reading_id", "integer", False),
        ColumnInfo("origin", "text", False, sample_values=("LGA", "JFK")),
        ColumnInfo("month", "integer", False),
        ColumnInfo("temp", "double precision", True),
    ),
    primary_key=("reading_id",),
)
ORDERS = TableInfo(
    "public",
    "orders",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("status", "text", False, sample_values=("shipped",)),
        ColumnInfo("placed_at", "timestamp without time zone", False),
    ),
    primary_key=("id",),
)
CATALOG = Catalog("air", (WEATHER, ORDERS))
JANUARY = (
    "SELECT MIN(t0.temp) AS min_temp FROM public.weather AS t0 "
    "WHERE (t0.month = 1) AND (t0.origin = 'LGA')"
)


class Linker:
    """The linker's seam: the statement it answers for a question containing a key."""

    def __init__(self, readings: dict[str, str]) -> None:
        self.readings = readings

    async def __call__(self, question: str) -> str | None:
        return next((sql for key, sql in self.readings.items() if key in question), None)


async def _shifted(sql: str, period: str, linker: Linker) -> str:
    return (await built(sql, Prior(sql, Relation.TIME_SHIFT, period=period), CATALOG, linker))[0]


async def test_a_month_without_a_year_moves_the_month_number():
    linker = Linker({"December": "SELECT * FROM public.weather AS t0 WHERE t0.month = 12"})
    shifted = sqlglot.parse_one(await _shifted(JANUARY, "in December", linker), dialect="postgres")
    where = shifted.args["where"].sql(dialect="postgres")
    assert "t0.month = 12" in where and "t0.month = 1)" not in where
    assert "t0.origin = 'LGA'" in where


async def test_a_month_the_linker_reads_on_a_date_column_is_still_refused():
    linker = Linker({
        "December": "SELECT * FROM public.orders AS t0 WHERE EXTRACT(MONTH FROM t0.placed_at) = 12"
    })  # fmt: skip
    shipped = "SELECT COUNT(*) FROM public.orders AS t0 WHERE t0.status = 'shipped'"
    with pytest.raises(FollowUpError, match="names no year"):
        await _shifted(shipped, "in December", linker)


async def test_a_month_the_linker_cannot_read_is_refused_as_before():
    with pytest.raises(FollowUpError, match="names no year"):
        await _shifted(JANUARY, "in December", Linker({}))
