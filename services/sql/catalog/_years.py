"""The span (least and greatest value) of an integer column named for a year.

A question's year ("in 2016") may bound an integer column (``year_id``, ``season_year``)
where no date column is in scope; the linker takes such a column only when every value
it holds is a plausible year (1800 to 2200: ``linker.PLAUSIBLE_YEARS``), since a column
named "year" may hold a count or an amount instead (``years_working``). What it holds is
read here, once per catalog load, from the data: the planner's statistics are a sample,
and absent until the table is analysed. Only integer columns one of whose name words is
"year" are read, so the load reads no more than it must; a read that fails (a timeout,
a column the role cannot read) leaves the column without a span, so the catalog still
loads, and the linker never reads its values as years.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import sql

from services.sql.words import name_words

_log = logging.getLogger("tandem.sql.catalog")

_INTEGER_TYPES = ("smallint", "integer", "bigint")


def names_year(name: str, data_type: str) -> bool:
    """An integer column one of whose name words is "year": the only columns whose span
    is read, so the catalog load reads no more than it must."""
    return data_type in _INTEGER_TYPES and "year" in name_words(name)


async def year_span(
    conn: psycopg.AsyncConnection[Any],
    schema: str,
    table: str,
    column: str,
    data_type: str,
    *,
    statement_timeout: str,
) -> tuple[int, int] | None:
    """The column's least and greatest value, read from the data under
    ``statement_timeout`` (the value index's); None for a column not named for a year,
    an empty one, or when the read fails."""
    if not names_year(column, data_type):
        return None
    statement = sql.SQL("SELECT min({col}), max({col}) FROM {tbl}").format(
        col=sql.Identifier(column), tbl=sql.Identifier(schema, table)
    )
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = '{statement_timeout}'")
            row = await (await conn.execute(statement)).fetchone()
    except psycopg.Error as exc:
        _log.info(
            "year span skipped a column",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return None
    if row is None or row[0] is None:
        return None
    return int(row[0]), int(row[1])
