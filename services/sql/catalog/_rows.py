"""How many rows each table holds, counted, so a catalog reads a database the same way
whether or not Postgres has analysed it.

``pg_class.reltuples`` is -1 until a table is first analysed (vacuumed) and an estimate
after: the same restored warehouse was "rows unknown" to the generator one minute and
"~16 rows" the next, once autovacuum had visited, and whatever follows from the size
(which values a column gets, which copy of a table is meant) followed the planner's
schedule instead of the data. A count is exact and cheap where it matters, on the small
tables a question names: each is counted up to :data:`ROW_COUNT_CAP` rows (a bounded
read, never the whole of a large table), many tables per statement, each statement under
a short timeout. A table past the cap keeps the planner's estimate when that is larger
(the cap is only a lower bound); one whose count fails keeps whatever the catalog had.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import psycopg
from psycopg import sql

_log = logging.getLogger("tandem.sql.catalog")

# Counting stops here: a table with more rows is "large", and the planner's estimate (when
# Postgres has one) says how large.
ROW_COUNT_CAP = 100_000
# Tables counted per statement, and each statement's timeout.
_BATCH = 50
_COUNT_TIMEOUT = "2s"


class Counted(Protocol):
    """What counting needs of a table (a catalog's ``TableInfo``)."""

    @property
    def schema(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def qualified(self) -> str: ...


async def count_rows(
    conn: psycopg.AsyncConnection[Any], tables: Sequence[Counted]
) -> dict[str, int]:
    """Rows of each table (qualified name), counted up to :data:`ROW_COUNT_CAP`; a table
    whose batch failed (timed out, unreadable) is left out."""
    found: dict[str, int] = {}
    for start in range(0, len(tables), _BATCH):
        batch = tables[start : start + _BATCH]
        counts = sql.SQL(", ").join(
            sql.SQL("(SELECT count(*) FROM (SELECT 1 FROM {} LIMIT {}) AS s)").format(
                sql.Identifier(t.schema, t.name), sql.Literal(ROW_COUNT_CAP)
            )
            for t in batch
        )
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL statement_timeout = '{_COUNT_TIMEOUT}'")
                row = await (await conn.execute(sql.SQL("SELECT {}").format(counts))).fetchone()
        except psycopg.Error as exc:
            _log.info("row counts skipped", extra={"fields": {"error.type": type(exc).__name__}})
            continue
        if row is not None:
            found |= {t.qualified: int(n) for t, n in zip(batch, row, strict=True)}
    return found


def row_count(estimate: int, counted: int | None) -> int:
    """A table's rows as a catalog states them: the count below the cap, else the larger
    of the cap and the planner's ``estimate``; the estimate where nothing was counted."""
    if counted is None:
        return estimate
    if counted < ROW_COUNT_CAP:
        return counted
    return max(counted, estimate)
