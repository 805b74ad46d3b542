"""Key changes as they commit: what lets the gateway serve a verified key from memory.

Migration 0003 announces every changed key on ``tandem_api_keys``. :class:`KeyChanges`
listens on a connection of its own and passes each key id to ``on_change``; ``""``
means any key may have changed (the table was truncated, or the connection was lost and
announcements with it). ``live`` is True only while it listens: the key memory trusts
nothing otherwise, and every call reads the database as before.

Postgres sends an announcement to the listener as the change commits, and this process
hears it when its listening task next runs: a call served in between would still find the
changed key in memory. :meth:`KeyChanges.caught_up`, asked before every memory answer,
first applies whatever announcements have already reached this process's socket, so the
remaining window is the announcement's trip from the database (milliseconds), not the
event loop's backlog on a loaded machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

CHANNEL = "tandem_api_keys"
_log = logging.getLogger("tandem.gateway.keys")

Connect = Callable[[str], Awaitable["psycopg.AsyncConnection[Any]"]]


async def _connect(conninfo: str) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(
        conninfo, autocommit=True, keepalives=1, keepalives_idle=10
    )


class KeyChanges:
    """Listens for changed keys; reconnects after ``retry_s`` when the connection drops."""

    def __init__(
        self,
        conninfo: str,
        on_change: Callable[[str], None],
        *,
        on_lost: Callable[[], None] | None = None,
        retry_s: float = 1.0,
        connect: Connect = _connect,
    ) -> None:
        self._conninfo = conninfo
        self._on_change = on_change
        self._connect = connect
        # Told when the connection drops (announcements may be missed from then on);
        # without it, the drop reads as "any key may have changed".
        self._on_lost = on_lost or (lambda: on_change(""))
        self.retry_s = retry_s
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self.live = False
        self._warned = False
        # The listening connection, while ``live`` (``caught_up`` reads what it holds).
        self._conn: psycopg.AsyncConnection[Any] | None = None
        # Announcements heard since start: what a test or an operator waits on to know
        # a change reached this gateway (each one is logged with its key id and count).
        self.heard = 0

    def caught_up(self) -> bool:
        """Whether the key memory may answer now: listening, with every announcement that
        has already reached this process applied first.

        One non-blocking read of the listening socket, no round trip: libpq's
        ``PQconsumeInput`` takes what the socket holds (it never blocks) and ``PQnotifies``
        hands out each parsed announcement, through psycopg's public ``pgconn``. It cannot
        upset the listening task: while ``live`` that task is parked in psycopg's
        ``notifies()`` waiting for the socket to be readable, and between its steps
        nothing else uses this connection (no statement is ever in flight on it).
        ``PQnotifies`` returns each announcement once, so what is read here the task never
        sees, and the reverse; a socket emptied here only leaves the task waiting (psycopg
        re-polls it every 0.1 s, and a ``PQconsumeInput`` with nothing to read is a no-op).
        A read that fails (the connection broke) answers False: the call reads the
        database, and the listening task finds the broken connection itself.
        """
        conn = self._conn
        if conn is None or not self.live:
            return False
        try:
            pgconn = conn.pgconn
            pgconn.consume_input()
            while (notice := pgconn.notifies()) is not None:
                self._hear(notice.extra.decode(conn.info.encoding))
        except psycopg.Error:
            return False
        return True

    def _hear(self, key_id: str) -> None:
        self.heard += 1
        self._on_change(key_id)
        _log.info(
            "key change heard",
            extra={"fields": {"api_key.id": key_id or "*", "key_changes.heard": self.heard}},
        )

    async def start(self, wait_s: float = 5.0) -> None:
        """Start listening; waits up to ``wait_s`` for the first LISTEN (a database that is
        down only means the memory stays off until it is back)."""
        self._task = asyncio.create_task(self._run(), name="key-changes")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), wait_s)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                conn = await self._connect(self._conninfo)
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    # Changes made before LISTEN were not announced to this connection.
                    self._on_change("")
                    self._conn = conn
                    self.live = True
                    self._warned = False
                    self._listening.set()
                    async for notice in conn.notifies():
                        self._hear(notice.payload)
            except psycopg.Error as exc:
                if self.live or not self._warned:  # once per outage, not once per retry
                    self._warned = True
                    _log.warning(
                        "not listening for key changes; every call reads the database",
                        extra={"fields": {"error.type": type(exc).__name__}},
                    )
            finally:
                self._conn = None
                if self.live:
                    self.live = False
                    self._on_lost()
            await asyncio.sleep(self.retry_s)
