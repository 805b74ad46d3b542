"""A key change that has reached the gateway is applied before the key memory answers.

Postgres announces a revocation as it commits, but the listening task reads the
announcement only when the event loop next runs it; a call in between must not be served
by a memory that still holds the revoked key. Here the listening connection is a fake
whose socket holds an announcement the task has not read (its ``notifies()`` never
yields), and the key store a fake that counts reads.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from gateway import ApiKeys
from gateway._key_changes import KeyChanges
from services.common import Unauthenticated

PEPPER = b"p" * 32
KEY_ID = "abcdefghijklmnop"
SECRET = "s" * 43
PRESENTED = f"tdm_{KEY_ID}_{SECRET}"


@dataclass
class _Notify:
    extra: bytes


@dataclass
class _PGconn:
    """libpq's side of the listening connection: ``socket`` is what the server sent and
    ``consume_input`` has not read yet, ``buffer`` what it read and ``notifies`` hands out."""

    socket: list[bytes] = field(default_factory=list)
    buffer: list[bytes] = field(default_factory=list)
    broken: bool = False

    def consume_input(self) -> None:
        if self.broken:
            raise psycopg.OperationalError("consuming input failed")
        self.buffer += self.socket
        self.socket.clear()

    def notifies(self) -> _Notify | None:
        return _Notify(self.buffer.pop(0)) if self.buffer else None


@dataclass
class _Info:
    encoding: str = "utf-8"


class _Listening:
    """The listener's connection; its ``notifies()`` waits for ever (the listening task
    has not run since the announcement arrived)."""

    def __init__(self) -> None:
        self.pgconn = _PGconn()
        self.info = _Info()
        self.statements: list[str] = []

    async def __aenter__(self) -> _Listening:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, statement: str) -> None:
        self.statements.append(statement)

    async def notifies(self) -> AsyncIterator[Any]:
        await asyncio.Event().wait()
        yield  # pragma: no cover (never reached)


class _Cursor:
    def __init__(self, row: tuple[Any, ...] | None) -> None:
        self._row = row

    async def fetchone(self) -> tuple[Any, ...] | None:
        return self._row


class _Store:
    """The ``api_keys`` table of one key; ``reads`` counts verifications that read it."""

    def __init__(self) -> None:
        self.revoked = False
        self.reads = 0
        self.hmac = b""

    @contextlib.asynccontextmanager
    async def autocommit(self) -> AsyncIterator[_Store]:
        yield self

    async def execute(self, query: str, params: Any, prepare: bool = False) -> _Cursor:
        self.reads += 1
        return _Cursor(None if self.revoked else ("acme", self.hmac, ["ask"]))


@pytest.fixture
async def memory() -> AsyncIterator[tuple[ApiKeys, KeyChanges, _Listening, _Store]]:
    store = _Store()
    keys = ApiKeys(store, PEPPER, cache_ttl_s=30.0)  # type: ignore[arg-type]
    store.hmac = keys._hmac(SECRET)
    listening = _Listening()

    async def connect(conninfo: str) -> Any:
        return listening

    changes = KeyChanges("postgresql://unused", keys.forget, on_lost=keys.lost, connect=connect)
    await changes.start()
    keys.listen(changes.caught_up)
    try:
        yield keys, changes, listening, store
    finally:
        await changes.close()


async def test_an_announcement_on_the_socket_is_applied_before_the_memory_answers(memory):
    keys, changes, listening, store = memory
    assert changes.live and listening.statements == ["LISTEN tandem_api_keys"]
    assert await keys.verify(PRESENTED) == "acme"
    assert await keys.verify(PRESENTED) == "acme"
    assert store.reads == 1  # the second answer came from memory
    # Revoked and announced; the listening task has not run since.
    store.revoked = True
    listening.pgconn.socket.append(KEY_ID.encode())
    with pytest.raises(Unauthenticated):
        await keys.verify(PRESENTED)
    assert store.reads == 2
    assert changes.heard == 1 and not listening.pgconn.buffer


async def test_an_announcement_for_another_key_keeps_the_memory_answering(memory):
    keys, changes, listening, store = memory
    await keys.verify(PRESENTED)
    listening.pgconn.socket.append(b"qrstuvwxyz234567")
    assert await keys.verify(PRESENTED) == "acme"
    assert store.reads == 1
    assert changes.heard == 1


async def test_a_listening_connection_that_fails_to_read_sends_the_call_to_the_database(memory):
    keys, _, listening, store = memory
    await keys.verify(PRESENTED)
    listening.pgconn.broken = True
    store.revoked = True
    with pytest.raises(Unauthenticated):
        await keys.verify(PRESENTED)
    assert store.reads == 2


async def test_not_listening_nothing_is_read_from_the_connection():
    changes = KeyChanges("postgresql://unused", lambda key_id: None)
    assert not changes.caught_up()
