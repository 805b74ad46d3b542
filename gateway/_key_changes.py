"""Key changes as they commit: what lets the gateway serve a verified key from memory.

Migration 0003 announces every changed key on ``tandem_api_keys``. :class:`KeyChanges`
listens on a connection of its own and passes each key id to ``on_change``; ``""``
means any key may have changed (the table was truncated, or the connection was lost and
announcements with it). ``live`` is True only while it listens: the key memory trusts
nothing otherwise, and every call reads the database as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg

CHANNEL = "tandem_api_keys"
_log = logging.getLogger("tandem.gateway.keys")


class KeyChanges:
    """Listens for changed keys; reconnects after ``retry_s`` when the connection drops."""

    def __init__(
        self,
        conninfo: str,
        on_change: Callable[[str], None],
        *,
        on_lost: Callable[[], None] | None = None,
        retry_s: float = 1.0,
    ) -> None:
        self._conninfo = conninfo
        self._on_change = on_change
        # Told when the connection drops (announcements may be missed from then on);
        # without it, the drop reads as "any key may have changed".
        self._on_lost = on_lost or (lambda: on_change(""))
        self.retry_s = retry_s
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self.live = False
        self._warned = False

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
                conn = await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True, keepalives=1, keepalives_idle=10
                )
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    # Changes made before LISTEN were not announced to this connection.
                    self._on_change("")
                    self.live = True
                    self._warned = False
                    self._listening.set()
                    async for notice in conn.notifies():
                        self._on_change(notice.payload)
            except psycopg.Error as exc:
                if self.live or not self._warned:  # once per outage, not once per retry
                    self._warned = True
                    _log.warning(
                        "not listening for key changes; every call reads the database",
                        extra={"fields": {"error.type": type(exc).__name__}},
                    )
            finally:
                if self.live:
                    self.live = False
                    self._on_lost()
            await asyncio.sleep(self.retry_s)
