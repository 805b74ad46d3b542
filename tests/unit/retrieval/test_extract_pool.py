"""The extraction pool with real worker processes: a tenant's share, the deadline and
cancellation (the worker is killed, never left working), the memory limit, reuse."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psutil
import pytest

from services.retrieval import ExtractionPool, ExtractionTimeout
from services.retrieval.extract import ExtractLimits, Reason, Unextractable
from tests.documents import amplified_docx, policy_docx

LIMITS = ExtractLimits()
SLOW = amplified_docx(90_000)  # seconds of CPU, within every limit


@pytest.fixture
async def pool() -> AsyncIterator[ExtractionPool]:
    made = ExtractionPool(workers=2, per_tenant=1, memory_bytes=1024 * 1024 * 1024)
    yield made
    await made.close()


@pytest.fixture
async def one() -> AsyncIterator[ExtractionPool]:
    """A pool of one worker, so "the worker" is one process."""
    made = ExtractionPool(workers=1, per_tenant=1, memory_bytes=1024 * 1024 * 1024)
    yield made
    await made.close()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def _ends(pid: int) -> bool:
    for _ in range(50):
        if _gone(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_workers_are_reused_across_files(one: ExtractionPool) -> None:
    pool = one
    first = await pool.extract("t", b"hello there", "a.txt", LIMITS, 10)
    pids = set(pool.worker_pids())
    second = await pool.extract("t", policy_docx(), "b.docx", LIMITS, 10)
    assert first.sections[0].text == "hello there" and second.title == "Refunds"
    assert set(pool.worker_pids()) == pids  # no new process for the second file
    with pytest.raises(Unextractable) as refused:
        await pool.extract("t", b"   ", "c.txt", LIMITS, 10)
    assert refused.value.reason is Reason.EMPTY
    assert set(pool.worker_pids()) == pids  # a refusal keeps its worker


async def test_a_tenant_waits_behind_its_own_files_and_another_does_not(
    pool: ExtractionPool,
) -> None:
    await asyncio.gather(*(pool.extract(t, b"warm", "w.txt", LIMITS, 30) for t in "ab"))
    heavy = [asyncio.create_task(pool.extract("a", SLOW, "a.docx", LIMITS, 60)) for _ in range(3)]
    try:
        await asyncio.sleep(0.2)
        share = pool.tenant_share("a")
        assert share == (1, 2), share  # one of its files runs, two wait
        light = await asyncio.wait_for(pool.extract("b", policy_docx(), "b.docx", LIMITS, 10), 5)
        assert light.title == "Refunds"
        busy = set(pool.worker_pids())
    finally:
        for task in heavy:
            task.cancel()
        await asyncio.gather(*heavy, return_exceptions=True)
    assert pool.tenant_share("a") == (0, 0)
    # The cancelled file's worker was killed, not left reading for nobody.
    assert any([await _ends(pid) for pid in busy])


async def test_the_deadline_kills_the_worker_and_a_replacement_starts(
    one: ExtractionPool,
) -> None:
    pool = one
    await pool.extract("t", b"warm", "w.txt", LIMITS, 10)
    (pid,) = pool.worker_pids()
    with pytest.raises(ExtractionTimeout):
        await pool.extract("t", SLOW, "slow.docx", LIMITS, 0.3)
    assert _gone(pid)
    extracted = await pool.extract("t", b"after", "a.txt", LIMITS, 10)
    assert extracted.sections[0].text == "after"
    assert pid not in pool.worker_pids()


async def test_a_file_past_the_memory_limit_is_too_large_and_its_worker_replaced() -> None:
    small = ExtractionPool(workers=1, per_tenant=1, memory_bytes=48 * 1024 * 1024)
    try:
        await small.extract("t", b"warm", "w.txt", LIMITS, 10)
        (pid,) = small.worker_pids()
        with pytest.raises(Unextractable) as refused:
            await small.extract("t", SLOW, "big.docx", LIMITS, 30)
        assert refused.value.reason is Reason.TOO_LARGE
        assert refused.value.message.startswith("needs more than 48 MiB of memory")
        assert await _ends(pid)
    finally:
        await small.close()


async def test_a_pool_closed_while_its_workers_start_leaves_no_process() -> None:
    # An eval stack closed right after start: close() used to cancel the starts without
    # waiting for them, and a worker created a moment before ran on, unreaped, past the
    # event loop (a ResourceWarning in a later test).
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    made = ExtractionPool(workers=2, per_tenant=1, memory_bytes=1024 * 1024 * 1024)
    made.start()
    await asyncio.sleep(0.005)  # the processes are being made; none has said READY yet
    await made.close()
    left = [
        c
        for c in psutil.Process().children(recursive=True)
        if c.pid not in before and not _gone(c.pid)
    ]
    assert left == []
