"""The embedded primary and synchronous standby of ``services.pgha`` (what ``tandem run
--pg-standby`` starts), with what tests and ``tandem bench replicas`` do to it: pause and
resume the standby's replay, wait until it has caught up, find each node's postmaster.

One way to make a pair: this wraps ``EmbeddedPair``, it does not make its own.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from services.pgha import EmbeddedPair, PairInfo, node_conninfo


@dataclass
class PgPair:
    """``primary_url`` / ``standby_url``: each node alone, as the superuser;
    ``writer_url`` / ``reader_url``: the multi-host conninfos services get
    (``DATABASE_URL``, ``DATABASE_READ_URL``)."""

    pair: EmbeddedPair
    info: PairInfo

    @property
    def primary_url(self) -> str:
        return node_conninfo(self.info.addresses[self.info.primary])

    @property
    def standby_url(self) -> str:
        return node_conninfo(self.info.addresses[self.info.standby])

    @property
    def writer_url(self) -> str:
        return self.info.writer_url

    @property
    def reader_url(self) -> str:
        return self.info.reader_url

    def postmaster_pid(self, role: str) -> int | None:
        """The postmaster of the ``primary`` or the ``standby``."""
        name = self.info.primary if role == "primary" else self.info.standby
        return self.pair.nodes[name].postmaster_pid()

    def pause(self) -> None:
        """Stop the standby's replay (what a standby busy with a long query, or behind on
        a slow disk, looks like to a reader); WAL still arrives, so commits still return."""
        with psycopg.connect(self.standby_url, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        with psycopg.connect(self.standby_url, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")

    def catch_up(self, timeout_s: float = 10.0) -> None:
        """Wait until the standby has replayed everything the primary has written."""
        with psycopg.connect(self.primary_url, autocommit=True) as primary:
            row = primary.execute("SELECT pg_current_wal_lsn()").fetchone()
        target = row[0] if row else "0/0"
        deadline = time.monotonic() + timeout_s
        with psycopg.connect(self.standby_url, autocommit=True) as standby:
            while True:
                done = standby.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError("the standby did not catch up")
                time.sleep(0.02)

    def stop(self, *, remove: bool = False) -> None:
        self.pair.stop()
        if remove:
            shutil.rmtree(self.pair.data_dir, ignore_errors=True)


def start_pair(data_dir: Path) -> PgPair:
    """Start (or join) the pair under ``data_dir`` (``pg`` and ``pg-standby``)."""
    pair = EmbeddedPair(data_dir)
    return PgPair(pair, pair.start())
