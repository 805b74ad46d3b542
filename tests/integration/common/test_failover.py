"""Issue 51 items 1-2 on real servers: what ``tandem run --pg-standby`` starts (the
embedded primary and its synchronous standby in a temporary directory, the failover
monitor in a thread printing on a console), writes through ``Database`` with the
multi-host URL it gives the services. SIGKILL the primary's postmaster; the
standby is promoted and writes succeed again within the bound, every acknowledged write
is on the new primary, no two-statement write is half there, a pool that sat idle through
the failover answers its first request, and a read whose connection breaks is retried."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services.cli._run import _Console, _PostgresPair
from services.common import DATABASE_UNAVAILABLE, Database, Unavailable

# Measured on the 2-core dev machine: 2.3-3.2 s from SIGKILL to the first acknowledged
# write (grace 2 s, probes every 0.5 s); the bound leaves room for a loaded CI runner.
WRITES_BACK_WITHIN_S = 10.0


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[_PostgresPair, dict[str, str], io.StringIO]]:
    """What ``tandem run --pg-standby`` starts: the pair, the services' two URLs, and the
    monitor in a thread of the supervisor, printing on a console."""
    out = io.StringIO()
    pg = _PostgresPair(tmp_path / "data", _Console(out), {"PG_MONITOR_INTERVAL_S": "0.25"})
    env: dict[str, str] = {}
    try:
        pg.start(env)
        yield pg, env, out
    finally:
        pg.stop()


def _wait(condition: object, timeout_s: float) -> None:
    ends = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < ends, "timed out"
        time.sleep(0.05)


async def _write(db: Database, n: int) -> None:
    """One acknowledged write = two rows in one transaction (half of it must never be
    there); a write that fails must fail as UNAVAILABLE for the lost database."""
    async with db.connection() as conn, conn.transaction():
        await conn.execute("INSERT INTO acked (n, part) VALUES (%s, 1)", (n,))
        await conn.execute("INSERT INTO acked (n, part) VALUES (%s, 2)", (n,))


async def test_sigkill_of_the_primary_loses_no_acknowledged_write(
    running: tuple[_PostgresPair, dict[str, str], io.StringIO],
) -> None:
    pg, env, console = running
    embedded, monitor, info = pg.pair, pg.monitor, pg.info
    assert monitor is not None and info is not None
    assert env == {"DATABASE_URL": info.writer_url, "DATABASE_READ_URL": info.reader_url}
    with psycopg.connect(info.writer_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE acked (n int, part int, PRIMARY KEY (n, part))")
    _wait(lambda: monitor.synchronous_standbys == {info.standby}, 10)

    writer = Database(info.writer_url, min_size=1, max_size=4, timeout_s=2.0, vector=False)
    # A pool that sits idle through the failover: every connection it holds dies.
    idle = Database(info.writer_url, min_size=2, max_size=2, timeout_s=2.0, vector=False)
    await writer.open()
    await idle.open()
    try:
        acked: list[int] = []
        failed: list[int] = []
        for n in range(20):
            await _write(writer, n)
            acked.append(n)

        old = embedded.nodes[info.primary]
        pid = old.postmaster_pid()
        assert pid is not None
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        back_after: float | None = None
        n = 100
        while back_after is None:
            n += 1
            try:
                await _write(writer, n)
            except Unavailable as exc:
                assert exc.reason == DATABASE_UNAVAILABLE
                failed.append(n)
                assert time.monotonic() - killed < WRITES_BACK_WITHIN_S, "writes not back"
                await asyncio.sleep(0.1)
                continue
            acked.append(n)
            # A write the dying primary's backends still took (both nodes confirmed it
            # before they noticed the death) is acknowledged, but not "back".
            if failed:
                back_after = time.monotonic() - killed
        assert back_after < WRITES_BACK_WITHIN_S
        assert monitor.primary == info.standby
        assert [(e.old_primary, e.new_primary) for e in monitor.failovers] == [
            (info.primary, info.standby)
        ]
        failover_lines = [line for line in console.getvalue().splitlines() if "FAILOVER" in line]
        assert len(failover_lines) == 1
        assert f"promoted {info.standby}" in failover_lines[0]
        assert "writes refused for" in failover_lines[0]

        # The idle pool's first request after the failover is answered, not failed.
        async with idle.connection() as pooled:
            fetched = await pooled.execute("SELECT pg_is_in_recovery()")
            assert await fetched.fetchone() == (False,)

        # A read whose connection is ended under it (a fenced node's sessions, a
        # restarted server) is answered on a fresh connection.
        ended = 0

        async def read_count(conn: psycopg.AsyncConnection[Any]) -> int:
            nonlocal ended
            if not ended:
                ended += 1
                pid = conn.info.backend_pid
                with psycopg.connect(info.writer_url, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            counted = await conn.execute("SELECT count(*) FROM acked")
            row = await counted.fetchone()
            assert row is not None
            return int(row[0])

        assert await writer.read(read_count) >= 2 * len(acked)
        assert ended == 1

        async with writer.connection() as pooled:
            grouped = await pooled.execute("SELECT n, count(*) FROM acked GROUP BY n")
            present = dict(await grouped.fetchall())
        missing = [n for n in acked if present.get(n) != 2]
        assert not missing, f"acknowledged writes lost: {missing}"
        halves = [n for n, parts in present.items() if parts != 2]
        assert not halves, f"half-applied writes: {halves}"
        print(f"writes back {back_after:.2f} s after SIGKILL; {len(failed)} refused meanwhile")
    finally:
        await writer.close()
        await idle.close()
