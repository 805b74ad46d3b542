"""One read of the data a catalog load may afford to lose: a statement under its own
time limit, inside a transaction so the limit (``SET LOCAL``) ends with it.

A catalog load reads the data for what the structure cannot tell (a numeric column's
extent, a year column's span). Such a read may be slow on a large table or refused to the
read-only role; the catalog must load all the same, so a failed read is logged (its error
type only: a statement's text and the data's values stay out of the log) and yields no
row, which the caller reads as "not known".
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import sql

_log = logging.getLogger("tandem.sql.catalog")


async def bounded_row(
    conn: psycopg.AsyncConnection[Any],
    statement: sql.Composed,
    *,
    statement_timeout: str,
    skipped: str,
) -> tuple[Any, ...] | None:
    """The statement's first row, read under ``statement_timeout``; None when it returns
    none or fails, the failure logged as ``skipped`` with its error type."""
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = '{statement_timeout}'")
            row: tuple[Any, ...] | None = await (await conn.execute(statement)).fetchone()
    except psycopg.Error as exc:
        _log.info(skipped, extra={"fields": {"error.type": type(exc).__name__}})
        return None
    return row


async def bounded_rows(
    conn: psycopg.AsyncConnection[Any],
    statement: sql.Composed,
    *,
    statement_timeout: str,
    skipped: str,
) -> list[tuple[Any, ...]]:
    """The statement's rows, read under ``statement_timeout``; none when it fails, the
    failure logged as ``skipped`` with its error type (a caller bounds the rows by its
    statement's LIMIT)."""
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = '{statement_timeout}'")
            rows: list[tuple[Any, ...]] = await (await conn.execute(statement)).fetchall()
    except psycopg.Error as exc:
        _log.info(skipped, extra={"fields": {"error.type": type(exc).__name__}})
        return []
    return rows
