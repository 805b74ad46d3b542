"""What key and join inference may read at one catalog load: counted work, not seconds.

Inference was bounded by 20 s of wall clock (ISSUE-45, s66): on a busy server the reads of
the first tables spent the budget and the tables and candidates after them were left as
their names said (a keyless database with fewer keys and joins), so the same database
loaded a different catalog on a loaded machine and a question was answered or refused by
the load. The bound is now the work itself: at most :data:`INFERENCE_READS_MAX` reads and
:data:`INFERENCE_ROWS_MAX` rows scanned per load, each read costing the rows of the tables
it reads as the catalog counted them (``_rows``; a table of unknown size costs
:data:`ROW_COUNT_CAP`, the least a count past the cap says), capped by the read's own
``LIMIT`` where it has one. A read that does not fit what is left is not made — the
candidate keeps the names' word for it, as one whose data cannot be read — and a later,
cheaper read still is: which reads are made follows from the data, on any server.

Seconds remain only as a guard against a server that cannot do that work at all
(:data:`INFERENCE_GUARD_SECONDS`, and each read's statement timeout): when either stops
a read the load is marked incomplete — a warning with the counts, and the catalog's
``incomplete`` line that ``tandem sql-check`` prints — never a silently smaller catalog.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import errors, sql

from services.sql.catalog._catalog import Catalog
from services.sql.catalog._rows import ROW_COUNT_CAP

_log = logging.getLogger("tandem.sql.joins")

# The work one load's inference may do: reads, and rows those reads scan. About five times
# what the largest dev-set load asks (defog's car_dealership beside a thousand look-alikes:
# 957 reads, 34 k rows; the plain dev sets at most 109 reads; ISSUE-45 s66), so only a
# warehouse far larger reaches it: seconds of reads on an idle server, minutes on a busy one.
INFERENCE_READS_MAX = 5_000
INFERENCE_ROWS_MAX = 500_000_000
# The guard: a server too slow to do the counted work in this long stops inference, and
# the catalog says so. Generous: reaching it is a fault to see, not the bound.
INFERENCE_GUARD_SECONDS = 300.0
# Each read's statement timeout, a guard too: a read it stops is counted and reported.
READ_TIMEOUT = "30s"


class InferenceReads:
    """The data reads of one inference: a connection, the work left, and what stopped a
    read (the work bound, a guard). Every read goes through :meth:`one`."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        catalog: Catalog,
        *,
        clock: Callable[[], float],
    ) -> None:
        self._conn = conn
        self._database = catalog.database
        self._rows = {t.qualified: t.row_estimate for t in catalog.tables}
        self._clock = clock
        self._guard_at = clock() + INFERENCE_GUARD_SECONDS
        self._started = clock()
        self.reads_left = INFERENCE_READS_MAX
        self.rows_left = INFERENCE_ROWS_MAX
        self.made = 0
        # reads the work bound did not make (deterministic: the data decides them)
        self.over_work = 0
        # reads a guard stopped (the server's speed decided them): the load is incomplete
        self.timed_out = 0
        self.past_guard = 0

    def cost(self, tables: Sequence[str], limit: int | None = None) -> int:
        """Rows a read of ``tables`` scans: each table's counted rows (unknown:
        :data:`ROW_COUNT_CAP`), at most ``limit`` each where the read has a ``LIMIT``."""
        total = 0
        for table in tables:
            rows = self._rows.get(table, -1)
            rows = rows if rows >= 0 else ROW_COUNT_CAP
            total += rows if limit is None else min(rows, limit)
        return total

    def stopped(self) -> int:
        """How many reads were not made or not finished so far, for any reason (a caller
        that needs every read of a set compares this before and after)."""
        return self.over_work + self.timed_out + self.past_guard

    async def one(
        self,
        statement: sql.Composed,
        params: tuple[Any, ...],
        tables: Sequence[str],
        *,
        limit: int | None = None,
    ) -> tuple[Any, ...] | None:
        """The read's first row, or None when it is not made (the work left does not
        cover it, the guard passed) or fails."""
        if self._clock() >= self._guard_at:
            self.past_guard += 1
            return None
        cost = self.cost(tables, limit)
        if self.reads_left <= 0 or cost > self.rows_left:
            self.over_work += 1
            return None
        self.reads_left -= 1
        self.rows_left -= cost
        self.made += 1
        try:
            async with self._conn.transaction():
                await self._conn.execute(f"SET LOCAL statement_timeout = '{READ_TIMEOUT}'")
                return await (await self._conn.execute(statement, params)).fetchone()
        except errors.QueryCanceled:
            self.timed_out += 1
            return None
        except psycopg.Error as exc:
            _log.info(
                "join inference skipped a read",
                extra={"fields": {"error.type": type(exc).__name__}},
            )
            return None

    def incomplete(self) -> str:
        """The catalog's note when a guard stopped reads ("" when none did), logged as a
        warning with the counts: the catalog then holds fewer keys and joins than the
        data shows, and says so."""
        fields: dict[str, object] = {
            "database": self._database,
            "reads": self.made,
            "reads.over_work": self.over_work,
            "reads.timed_out": self.timed_out,
            "reads.past_guard": self.past_guard,
            "seconds": round(self._clock() - self._started, 2),
        }
        if not self.timed_out and not self.past_guard:
            _log.info("join inference done", extra={"fields": fields})
            return ""
        _log.warning("join inference incomplete", extra={"fields": fields})
        return (
            f"key and join inference incomplete: {self.timed_out} reads timed out, "
            f"{self.past_guard} not made after {INFERENCE_GUARD_SECONDS:.0f} s; keys and "
            "joins those reads would have confirmed are missing or kept unchecked"
        )
