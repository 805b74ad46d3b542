"""Read routing: staleness-tolerant reads on a standby, everything else on the primary.

With ``DATABASE_READ_URL`` set, a second pool reads from a streaming standby; unset, every
read takes the primary pool, as before (no monitor, no extra statement, no cost). A read
goes to the standby only when both hold:

- **bounded staleness** — the standby had replayed everything the primary had written no
  more than ``DB_READ_MAX_LAG_S`` ago. A background monitor samples, every
  ``max_lag / 4`` (at most 250 ms), the primary's WAL write position and then the
  standby's replay position. The standby is fresh as of the latest primary sample its
  replay has reached. ``now() - pg_last_xact_replay_timestamp()`` would not do: it grows
  on an idle primary (no transaction to replay) and calls an up-to-date standby stale.
  Comparing positions is right whether the primary is idle or busy, and a standby
  that stops answering ages out of use on its own. The write position, not the insert
  position: at a page boundary the insert position points past the page header, which
  a caught-up standby never reports having replayed.
- **spread** — of the two nodes, the one with fewer reads in flight (the standby on a
  tie): reads scale out over both under load, and all go to the standby otherwise.
- **read-your-writes** — the standby has replayed the caller's last write. A write marks
  its tenant with the primary's WAL position after its commit (``mark_written``), and
  the position also leaves the service in the ``x-tandem-lsn`` trailer, so that a caller
  may send it back with its next read (``read_after``), whichever replica serves that.
  A read whose position the standby has not reached (by the monitor's last sample, which
  only ever lags the real position) goes to the primary: no wait, no extra round trip.

The alternative, ``synchronous_commit = remote_apply``, makes every acknowledged commit
visible on the synchronous standby, so reads need no positions at all; but each write
then waits for the standby to replay it (a round trip plus replay, on every commit), and
a standby whose replay stalls (a long query holding a conflict, a paused replay) stalls
every write of the primary. Positions cost one small statement per write, only when a
standby is configured.

What reads where is the caller's decision (``reader``); API keys, ACL checks and writes
never ask, so they never see a standby.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from services.common._db import Database
from services.common._errors import TandemError
from services.common._lsn import MAX_LSN, WritePositions, parse_lsn, read_after
from services.common._settings import Env

_log = logging.getLogger("tandem.db.reads")


@dataclass(frozen=True)
class ReadSettings:
    """Where reads may go and how stale they may be."""

    url: str | None = None
    max_lag_s: float = 1.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReadSettings:
        env = Env(environ)
        return cls(
            url=env.get_optional("DATABASE_READ_URL"),
            max_lag_s=env.get_float("DB_READ_MAX_LAG_S", 1.0, minimum=0.01),
        )


class ReadRouting:
    """Chooses the pool a read runs on; see the module docstring for the rules.

    ``standby`` is a pool opened without migrations (a standby is read-only); the routing
    opens and closes it, and runs the monitor, but never the primary's pool, which its
    owner opens and closes.
    """

    def __init__(
        self,
        primary: Database,
        standby: Database | None = None,
        *,
        max_lag_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.primary = primary
        self.standby = standby
        self.max_lag_s = max_lag_s
        self.interval_s = min(0.25, max_lag_s / 4)
        self._clock = clock
        self._written = WritePositions()
        # (monotonic time, primary write position) samples not yet reached by the standby.
        self._samples: deque[tuple[float, int]] = deque()
        self._fresh_at: float | None = None
        self._replayed = 0
        self._task: asyncio.Task[None] | None = None
        # How many reads each side served: for the benchmark and the tests.
        self.reads = {"primary": 0, "standby": 0}
        # Reads in flight on [primary, standby].
        self._in_flight = [0, 0]
        # Tenants whose last write's position could not be read, and since when.
        self._unplaced: dict[str, float] = {}

    @property
    def replicated(self) -> bool:
        return self.standby is not None

    async def open(self) -> None:
        """Open the standby's pool and start measuring it (nothing without a standby)."""
        if self.standby is None:
            return
        await self.standby.pool.open(wait=False)
        self._task = asyncio.create_task(self._monitor(), name="standby-lag")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.standby is not None:
            await self.standby.close()

    # -- writes ------------------------------------------------------------------------

    async def mark_written(self, tenant_id: str) -> int:
        """After a commit: remember the primary's WAL position for ``tenant_id`` and return
        it (0, and no statement, without a standby)."""
        if self.standby is None:
            return 0
        try:
            async with self.primary.autocommit() as conn:
                cur = await conn.execute("SELECT pg_current_wal_lsn()::text")
                row = await cur.fetchone()
            lsn = parse_lsn(row[0]) if row else 0
        except TandemError as exc:
            lsn = 0
            _log.warning("write position unknown", extra={"fields": {"error": exc.reason}})
        if not lsn:
            # The write is committed, its position unknown (the primary went away just
            # after): the tenant's reads stay on the primary until the monitor's next
            # sample of the primary's position, taken after this, stands in for it.
            self._unplaced[tenant_id] = self._clock()
            return 0
        self._written.note(tenant_id, lsn)
        return lsn

    def written(self, tenant_id: str) -> int:
        """The last write position remembered for ``tenant_id`` (0: none)."""
        return self._written.get(tenant_id)

    # -- reads -------------------------------------------------------------------------

    def staleness_s(self) -> float | None:
        """How far behind the standby may be (None: not measured yet, or no standby)."""
        if self._fresh_at is None:
            return None
        return self._clock() - self._fresh_at

    @contextlib.contextmanager
    def reading(self, tenant_id: str) -> Iterator[Database]:
        """The pool for one staleness-tolerant read of ``tenant_id``'s data, held for the
        read's duration. The primary when the standby is past the bound, or has not
        replayed the tenant's (or the caller's) last write; otherwise whichever node has
        fewer reads in flight, the standby on a tie: one read at a time all go to the
        standby, leaving the primary its writes, and under load the reads split between
        the two nodes, so together they serve about twice what one does."""
        database = self.primary
        standby = self.standby
        if standby is not None:
            stale = self.staleness_s()
            needed = max(read_after.get(), self._written.get(tenant_id))
            if (
                stale is not None
                and stale <= self.max_lag_s
                and self._replayed >= needed
                and tenant_id not in self._unplaced
                and self._in_flight[1] <= self._in_flight[0]
            ):
                database = standby
        side = 1 if database is standby else 0
        self.reads["standby" if side else "primary"] += 1
        self._in_flight[side] += 1
        try:
            yield database
        finally:
            self._in_flight[side] -= 1

    def reader(self, tenant_id: str) -> Database:
        """Where one read of ``tenant_id`` would go now (counted; not held in flight)."""
        with self.reading(tenant_id) as database:
            return database

    # -- the monitor -------------------------------------------------------------------

    async def _monitor(self) -> None:
        while True:
            try:
                await self.sample()
            except TandemError as exc:
                # Unmeasured, the standby ages past the bound and reads return to the
                # primary by themselves; the next sample restores it.
                _log.debug("standby lag not measured", extra={"fields": {"error": exc.reason}})
            await asyncio.sleep(self.interval_s)

    async def sample(self) -> None:
        """One measurement: the primary's write position, then the standby's replay
        position (in that order: a replay at or past the primary's position means the
        standby held everything committed when that position was read)."""
        assert self.standby is not None
        taken = self._clock()
        async with self.primary.autocommit() as conn:
            cur = await conn.execute("SELECT pg_current_wal_lsn()::text")
            row = await cur.fetchone()
        written = parse_lsn(row[0]) if row else 0
        async with self.standby.autocommit() as conn:
            cur = await conn.execute(
                "SELECT pg_is_in_recovery(), coalesce(pg_last_wal_replay_lsn()::text, '0/0')"
            )
            row = await cur.fetchone()
        if row is None:
            return
        recovering, replay = row
        # A "standby" that is not in recovery is a primary (a multi-host read URL that
        # found no standby, or one promoted): it is current by definition.
        self.observe(taken, written, parse_lsn(replay) if recovering else MAX_LSN)

    def observe(self, taken: float, written: int, replayed: int) -> None:
        """Fold one (primary position at ``taken``, standby replay) pair in."""
        self._replayed = replayed
        for tenant_id, since in list(self._unplaced.items()):
            if since < taken:  # a position read after the write committed covers it
                self._written.note(tenant_id, written)
                del self._unplaced[tenant_id]
        self._samples.append((taken, written))
        while self._samples and self._samples[0][1] <= replayed:
            self._fresh_at = self._samples.popleft()[0]
        # Samples older than the bound can only say the standby is too stale, which
        # ``_fresh_at`` already says: bounded memory while replay is stopped.
        horizon = self._clock() - 2 * self.max_lag_s
        while len(self._samples) > 1 and self._samples[0][0] < horizon:
            self._samples.popleft()
