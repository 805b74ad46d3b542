"""Answers' records written together (``services.sql.memory._record.RecordQueue``): the
records that arrive while one is being written share the next write (one transaction,
one commit), every caller still returns only once its own record is stored, and a
failure reaches exactly the callers whose records it concerns."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence

import pytest

from services.common import Unavailable
from services.sql.memory._record import Params, RecordQueue

_CALLER = contextvars.ContextVar("caller", default="")


class _Store:
    """A fake write: each call is one transaction, held open until ``release``."""

    def __init__(self, *, bad: bytes | None = None, down: bool = False) -> None:
        self.batches: list[list[bytes | None]] = []
        self.stored: list[bytes | None] = []
        self.callers: list[str] = []
        self.gate = asyncio.Event()
        self._bad, self._down = bad, down

    async def write(self, batch: Sequence[Params]) -> None:
        self.batches.append([p[0] for p in batch])
        self.callers.append(_CALLER.get())
        await self.gate.wait()
        if self._down:
            raise Unavailable("the answer memory is unreachable")
        if any(p[0] == self._bad for p in batch):
            raise ValueError("a record the table refuses")  # all or none: nothing stored
        self.stored += [p[0] for p in batch]


async def _settled() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_records_arriving_during_a_write_share_the_next_one():
    store = _Store()
    queue = RecordQueue(store.write)
    first = asyncio.create_task(queue.record([b"a"]))
    await _settled()
    rest = [asyncio.create_task(queue.record([name])) for name in (b"b", b"c", b"d")]
    await _settled()
    assert not any(t.done() for t in [first, *rest])  # nobody returns before its commit
    store.gate.set()
    await asyncio.gather(first, *rest)
    # the first alone (nothing was in flight), the three that waited in one transaction
    assert store.batches == [[b"a"], [b"b", b"c", b"d"]]
    assert store.stored == [b"a", b"b", b"c", b"d"]


async def test_a_bad_record_fails_alone_and_the_others_are_stored():
    store = _Store(bad=b"c")
    queue = RecordQueue(store.write)
    first = asyncio.create_task(queue.record([b"a"]))
    await _settled()
    rest = [asyncio.create_task(queue.record([name])) for name in (b"b", b"c", b"d")]
    store.gate.set()
    outcomes = await asyncio.gather(first, *rest, return_exceptions=True)
    assert outcomes[:2] == [None, None] and outcomes[3] is None
    assert isinstance(outcomes[2], ValueError)  # only the bad record's caller sees it
    assert sorted(s for s in store.stored if s is not None) == [b"a", b"b", b"d"]


async def test_an_unreachable_store_fails_the_batch_at_once():
    store = _Store(down=True)
    queue = RecordQueue(store.write)
    first = asyncio.create_task(queue.record([b"a"]))
    await _settled()
    rest = [asyncio.create_task(queue.record([name])) for name in (b"b", b"c")]
    store.gate.set()
    outcomes = await asyncio.gather(first, *rest, return_exceptions=True)
    assert all(isinstance(o, Unavailable) for o in outcomes)
    # not tried again record by record: each would wait for the same unreachable store
    assert store.batches == [[b"a"], [b"b", b"c"]]


async def test_a_caller_that_stops_waiting_does_not_stop_the_write():
    # The write in flight holds others' records too: cancelling the caller that
    # started it leaves it running to its commit.
    store = _Store()
    queue = RecordQueue(store.write)
    first = asyncio.create_task(queue.record([b"a"]))
    await _settled()
    kept = asyncio.create_task(queue.record([b"b"]))
    await _settled()
    first.cancel()
    await _settled()
    store.gate.set()
    await kept
    with pytest.raises(asyncio.CancelledError):
        await first
    assert store.stored == [b"a", b"b"]


async def test_the_writer_carries_no_callers_context():
    # The first caller's deadline (a context variable) must not bound the records that
    # later callers queue behind it: the writer runs in a context of its own.
    store = _Store()
    queue = RecordQueue(store.write)

    async def as_caller(name: bytes) -> None:
        _CALLER.set(name.decode())
        await queue.record([name])

    first = asyncio.create_task(as_caller(b"a"))
    await _settled()
    second = asyncio.create_task(as_caller(b"b"))
    store.gate.set()
    await asyncio.gather(first, second)
    assert store.callers == ["", ""]


async def test_a_closing_store_waits_for_the_records_queued():
    store = _Store()
    queue = RecordQueue(store.write)
    first = asyncio.create_task(queue.record([b"a"]))
    await _settled()
    second = asyncio.create_task(queue.record([b"b"]))
    await _settled()
    drained = asyncio.create_task(queue.drained())
    await _settled()
    assert not drained.done()  # a write in flight, another queued
    store.gate.set()
    await drained
    assert store.stored == [b"a", b"b"]
    await asyncio.gather(first, second)
