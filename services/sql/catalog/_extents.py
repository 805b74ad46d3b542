"""The least and greatest value of each numeric column, read from the data.

A number said with a unit ("more than 3 hours") is compared raw only where the column
cannot hold a finer unit of the same measure: a delay column holding values up to 1301
may count minutes, so "3 hours" read as ``> 3`` is a confident wrong answer. Whether the
finer reading (180) is one the column can hold is read off its extent, once per catalog
load, in one statement per table. A read that fails (a timeout, a column the role cannot
read) leaves the table's columns without an extent, so the catalog still loads and a unit
is then judged by the column's name alone (``verify._units``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql

from services.sql.catalog._bounded import bounded_row

NUMERIC_TYPES = ("smallint", "integer", "bigint", "numeric", "real", "double precision")


def is_numeric(data_type: str) -> bool:
    """A column type whose values a number said with a unit may be compared with."""
    return data_type.startswith(NUMERIC_TYPES)


async def numeric_extents(
    conn: psycopg.AsyncConnection[Any],
    schema: str,
    table: str,
    columns: Sequence[tuple[str, str]],
    *,
    statement_timeout: str,
) -> dict[str, tuple[float, float]]:
    """``{column: (least, greatest)}`` for the numeric ones among ``columns`` (name,
    type) holding any value, read under ``statement_timeout``; empty when the read
    fails."""
    names = [name for name, data_type in columns if is_numeric(data_type)]
    if not names:
        return {}
    parts = [
        sql.SQL("min({c})::float8, max({c})::float8").format(c=sql.Identifier(name))
        for name in names
    ]
    statement = sql.SQL("SELECT {parts} FROM {tbl}").format(
        parts=sql.SQL(", ").join(parts), tbl=sql.Identifier(schema, table)
    )
    row = await bounded_row(
        conn,
        statement,
        statement_timeout=statement_timeout,
        skipped="numeric extents skipped a table",
    )
    if row is None:
        return {}
    found: dict[str, tuple[float, float]] = {}
    for i, name in enumerate(names):
        low, high = row[2 * i], row[2 * i + 1]
        if low is not None and high is not None:
            found[name] = (float(low), float(high))
    return found


def stat_extents(
    columns: Sequence[tuple[str, str]],
    stats: Mapping[str, tuple[float, list[str]] | None],
) -> dict[str, tuple[float, float]]:
    """``{column: (least, greatest)}`` for the numeric ones among ``columns`` read off
    the planner's sample (``pg_stats``' common values and histogram bounds, ``stats`` by
    column) instead of the data: a table too large to scan once per catalog load. The
    sample's bounds may fall inside the true extent, never outside it; a column with no
    statistics keeps none (a unit is then judged by its name alone)."""
    found: dict[str, tuple[float, float]] = {}
    for name, data_type in columns:
        stat = stats.get(name)
        if stat is None or not is_numeric(data_type):
            continue
        numbers = []
        for value in stat[1]:
            try:
                numbers.append(float(value))
            except ValueError:
                continue
        if numbers:
            found[name] = (min(numbers), max(numbers))
    return found
