"""The span (least and greatest value) of an integer column named for a year.

A question's year ("in 2016") may bound an integer column (``year_id``, ``season_year``)
where no date column is in scope; the linker takes such a column only when every value
it holds is a plausible year (1800 to 2200: ``linker.PLAUSIBLE_YEARS``), since a column
named "year" may hold a count or an amount instead (``years_working``). What it holds is
read once per catalog load with the column's extent (``_extents``): from the data where
the table is small enough to scan, from the planner's sample (``pg_stats``) where it is
not, since min()/max() over a warehouse's largest tables is a full scan per year column
per load. A sampled value is a stored one, so a sample showing a value no year can be
leaves the column no year however the rest is read; only a sample showing plausible
years may miss a later value outside them, the price of not scanning. Here the span is
read from the data only where neither gives one (a large table not yet analysed, or an
extent read that failed). Only integer columns one of whose name words is "year" are
read, so the load reads no more than it must; a read that fails (a timeout, a column the
role cannot read) leaves the column without a span, so the catalog still loads, and the
linker never reads its values as years.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from services.sql.catalog._bounded import bounded_row
from services.sql.words import name_words

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
    row = await bounded_row(
        conn, statement, statement_timeout=statement_timeout, skipped="year span skipped a column"
    )
    if row is None or row[0] is None:
        return None
    return int(row[0]), int(row[1])
