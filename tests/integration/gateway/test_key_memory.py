"""Verified keys served from memory, and revocations that still stop a key at once.

A gateway listening for key changes (migration 0003, ``gateway/_key_changes.py``) answers
a key it verified within ``cache_ttl_s`` without reading the database; a change by any
path (another gateway or ``tandem keys``, an UPDATE or DELETE typed by hand) drops it
from memory as it commits. The database reads are counted on the wire (a protocol-
reading relay); a test waits for the change to be *heard* (``ApiKeys.changes``), never
retries the call it asserts on. An announcement that has reached the gateway but not yet
its listening task is applied before the memory answers (``KeyChanges.caught_up``).
"""

from __future__ import annotations

import asyncio
import select
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from gateway import ApiKeys, Scope
from gateway._key_changes import KeyChanges
from services.common import (
    Database,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    load_migrations,
)
from tests.integration.pg_waits import WaitCounter

pytestmark = pytest.mark.integration
PEPPER = b"p" * 32


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Heard:
    """The listener's callback: the keys forget, and a waiting test hears it."""

    def __init__(self, keys: ApiKeys) -> None:
        self.keys = keys
        self._event = asyncio.Event()

    def __call__(self, key_id: str) -> None:
        self.keys.forget(key_id)
        self._event.set()

    async def until(self, done: Callable[[], bool]) -> None:
        async with asyncio.timeout(5):
            while not done():
                self._event.clear()
                await self._event.wait()


@dataclass
class Memory:
    keys: ApiKeys
    db: Database  # the keys' database, behind the relay
    changes: KeyChanges
    relay: WaitCounter
    clock: _Clock
    admin: ApiKeys  # another gateway, or `tandem keys`, on the same database
    heard: _Heard


@pytest.fixture
async def memory(pg_url: str) -> AsyncIterator[Memory]:
    admin_db = Database(pg_url, min_size=1, max_size=1)
    await admin_db.open(load_migrations("gateway", "gateway.migrations"))
    relay = WaitCounter(pg_url)
    db = Database(await relay.start(), min_size=1, max_size=1, timeout_s=0.5)
    await db.open()
    clock = _Clock()
    keys = ApiKeys(db, PEPPER, cache_ttl_s=30.0, outage_grace_s=15.0, clock=clock)
    heard = _Heard(keys)

    def lost() -> None:
        keys.lost()
        heard._event.set()

    changes = KeyChanges(pg_url, heard, on_lost=lost, retry_s=0.05)
    await changes.start()
    keys.listen(changes.caught_up)  # as the gateway wires it
    try:
        yield Memory(keys, db, changes, relay, clock, ApiKeys(admin_db, PEPPER), heard)
    finally:
        await changes.close()
        await db.close()
        await admin_db.close()
        await relay.close()


async def _reads(memory: Memory, secret: str) -> int:
    """How many times one verify read the database."""
    memory.relay.waits = 0
    await memory.keys.verify(secret)
    return memory.relay.waits


async def test_a_verified_key_is_answered_from_memory_until_its_time_is_up(memory):
    issued = await memory.admin.create("acme")
    assert memory.changes.live
    await memory.keys.verify(issued.secret)  # read, and remembered
    assert await _reads(memory, issued.secret) == 0
    memory.clock.now += 29
    assert await _reads(memory, issued.secret) == 0
    memory.clock.now += 2  # past the 30 s: read again
    assert await _reads(memory, issued.secret) == 1
    # a wrong secret for the same key id is never answered from memory
    tampered = issued.secret[:-1] + ("A" if issued.secret[-1] != "A" else "B")
    with pytest.raises(Unauthenticated):
        await memory.keys.verify(tampered)


@pytest.mark.parametrize("how", ["revoke", "update", "delete"])
async def test_a_change_by_any_path_stops_the_remembered_key_at_once(memory, pg_url, how):
    issued = await memory.admin.create("acme")
    assert await memory.keys.verify(issued.secret) == "acme"
    assert await _reads(memory, issued.secret) == 0  # remembered
    before = memory.keys.changes
    if how == "revoke":  # another gateway, or `tandem keys revoke`
        await memory.admin.revoke(issued.key_id)
    else:
        statement = {
            "update": "UPDATE api_keys SET revoked_at = now() WHERE key_id = %s",
            "delete": "DELETE FROM api_keys WHERE key_id = %s",
        }[how]
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            await conn.execute(statement, (issued.key_id,))
    await memory.heard.until(lambda: memory.keys.changes > before)
    with pytest.raises(Unauthenticated):
        await memory.keys.verify(issued.secret)


async def test_an_announcement_not_yet_read_by_the_listener_stops_the_key(memory, pg_url):
    """The loop is held from the revocation to the call (a synchronous connection, then a
    blocking wait for the announcement to reach the listener's socket): the listening task
    never runs in between, and the memory reads the announcement off the socket itself."""
    issued = await memory.admin.create("acme")
    assert await memory.keys.verify(issued.secret) == "acme"
    assert await _reads(memory, issued.secret) == 0  # remembered
    heard = memory.changes.heard
    listener = memory.changes._conn
    assert listener is not None
    with psycopg.connect(pg_url, autocommit=True) as conn:  # `tandem keys revoke`, elsewhere
        conn.execute("UPDATE api_keys SET revoked_at = now() WHERE key_id = %s", (issued.key_id,))
    readable, _, _ = select.select([listener.pgconn.socket], [], [], 5.0)
    assert readable, "the announcement never reached the listener"
    assert memory.changes.heard == heard  # the listening task has not run
    with pytest.raises(Unauthenticated):
        await memory.keys.verify(issued.secret)
    assert memory.changes.heard == heard + 1


async def test_a_narrowed_scope_stops_the_remembered_key_at_once(memory):
    # Scope changes take effect as fast as a revocation: the UPDATE is a key change the
    # gateway hears, and the key's remembered scopes are dropped with it.
    issued = await memory.admin.create("acme", scopes=(Scope.ASK, Scope.TEACH))
    assert (await memory.keys.authorize(issued.secret, Scope.TEACH)).tenant == "acme"
    assert await _reads(memory, issued.secret) == 0  # remembered, scopes and all
    before = memory.keys.changes
    await memory.admin.set_scopes(issued.key_id, (Scope.ASK,))
    await memory.heard.until(lambda: memory.keys.changes > before)
    with pytest.raises(PermissionDenied) as caught:
        await memory.keys.authorize(issued.secret, Scope.TEACH)
    assert caught.value.metadata == {"scope": "teach"}
    assert (await memory.keys.authorize(issued.secret, Scope.ASK)).tenant == "acme"


async def _kill_the_listener(pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = %s",
            ("LISTEN tandem_api_keys",),
        )


async def test_without_the_listener_every_call_reads_the_database(memory, pg_url):
    issued = await memory.admin.create("acme")
    await memory.keys.verify(issued.secret)
    assert await _reads(memory, issued.secret) == 0
    memory.changes.retry_s = 60  # it stays down for the rest of the test
    before = memory.keys.changes
    await _kill_the_listener(pg_url)
    await memory.heard.until(lambda: memory.keys.changes > before)
    assert not memory.changes.live
    assert await _reads(memory, issued.secret) == 1
    assert await _reads(memory, issued.secret) == 1


async def test_the_listener_comes_back_and_starts_from_an_empty_memory(memory, pg_url):
    issued = await memory.admin.create("acme")
    await memory.keys.verify(issued.secret)
    before = memory.keys.changes
    await _kill_the_listener(pg_url)
    # down (one change heard), then listening again (another)
    await memory.heard.until(lambda: memory.keys.changes >= before + 2 and memory.changes.live)
    assert await _reads(memory, issued.secret) == 1  # anything may have changed meanwhile
    assert await _reads(memory, issued.secret) == 0


class _ChangeDuringFirstRead:
    """The keys' database, where a change is heard while the first read is in flight."""

    def __init__(self, inner: Database) -> None:
        self.inner = inner
        self.keys: ApiKeys | None = None

    def autocommit(self) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        if self.keys is not None:
            self.keys.forget("")
            self.keys = None
        return self.inner.autocommit()


async def test_a_read_that_overlaps_a_change_is_not_remembered(memory):
    issued = await memory.admin.create("acme")
    db = _ChangeDuringFirstRead(memory.db)
    keys = ApiKeys(db, PEPPER, cache_ttl_s=30.0)  # type: ignore[arg-type]
    db.keys = keys
    keys.listen(lambda: True)
    assert await keys.verify(issued.secret) == "acme"  # the caller raced the change
    memory.relay.waits = 0
    await keys.verify(issued.secret)
    assert memory.relay.waits == 1  # the overlapping read was not kept
    memory.relay.waits = 0
    await keys.verify(issued.secret)
    assert memory.relay.waits == 0


async def test_with_the_memory_off_every_call_reads_the_database(pg_url):
    relay = WaitCounter(pg_url)
    db = Database(await relay.start(), min_size=1, max_size=1)
    await db.open(load_migrations("gateway", "gateway.migrations"))
    try:
        keys = ApiKeys(db, PEPPER)  # cache_ttl_s=0, as GATEWAY_KEY_CACHE_TTL_S=0
        keys.listen(lambda: True)
        issued = await keys.create("acme")
        await keys.verify(issued.secret)
        relay.waits = 0
        await keys.verify(issued.secret)
        assert relay.waits == 1
    finally:
        await db.close()
        await relay.close()


async def _outage(memory: Memory, pg_url: str) -> None:
    """The listener lost and the keys' database unreachable (the relay gone): a failover's
    window, as the gateway sees it."""
    memory.changes.retry_s = 60  # it stays down for the rest of the test
    before = memory.keys.changes
    await _kill_the_listener(pg_url)
    await memory.heard.until(lambda: memory.keys.changes > before)
    await memory.relay.close()


async def test_through_a_database_outage_a_key_in_memory_answers_within_the_grace(memory, pg_url):
    issued = await memory.admin.create("acme", scopes=(Scope.ASK,))
    unseen = await memory.admin.create("acme")
    await memory.keys.verify(issued.secret)  # in memory at the loss
    await _outage(memory, pg_url)
    memory.clock.now += 14
    assert (await memory.keys.authorize(issued.secret, Scope.ASK)).tenant == "acme"
    with pytest.raises(PermissionDenied):  # its scopes as they were remembered
        await memory.keys.authorize(issued.secret, Scope.TEACH)
    tampered = issued.secret[:-1] + ("A" if issued.secret[-1] != "A" else "B")
    for refused in (tampered, unseen.secret):  # never from memory: the outage shows
        with pytest.raises(Unavailable):
            await memory.keys.verify(refused)
    memory.clock.now += 2  # past the grace
    with pytest.raises(Unavailable):
        await memory.keys.verify(issued.secret)


async def test_a_key_already_stale_at_the_loss_or_a_grace_of_zero_refuses(memory, pg_url):
    issued = await memory.admin.create("acme")
    await memory.keys.verify(issued.secret)
    memory.clock.now += 31  # the memory's 30 s were over before the loss
    await _outage(memory, pg_url)
    with pytest.raises(Unavailable):
        await memory.keys.verify(issued.secret)
    strict = ApiKeys(memory.db, PEPPER, cache_ttl_s=30.0, clock=memory.clock)
    strict._recent = memory.keys._recent  # the same memory, no grace
    strict.lost()
    with pytest.raises(Unavailable):
        await strict.verify(issued.secret)
