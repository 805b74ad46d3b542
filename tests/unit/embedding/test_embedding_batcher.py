"""MicroBatcher: coalescing, batch bounds, kind separation, error isolation, shutdown."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

import numpy as np
import pytest

from services.embedding import EmbeddingUnavailableError, EmbedKind, MicroBatcher

if TYPE_CHECKING:
    from tests.unit.embedding.conftest import FakeModel


async def test_concurrent_requests_become_one_model_call(
    make_model: type[FakeModel],
) -> None:
    model = make_model()
    batcher = MicroBatcher(model, max_wait_s=0.05, max_batch=64)
    texts = [f"question {i}" for i in range(32)]

    results = await asyncio.gather(*(batcher.embed([t], EmbedKind.QUERY) for t in texts))

    assert len(model.calls) < len(texts)
    assert model.batch_sizes == [32]
    for text, result in zip(texts, results, strict=True):
        assert result.shape == (1, model.dim)
        np.testing.assert_array_equal(result[0], model.vector_for(text, EmbedKind.QUERY))
    stats = batcher.stats()
    assert (stats.requests, stats.texts, stats.batches, stats.largest_batch) == (32, 32, 1, 32)
    await batcher.close()


async def test_without_coalescing_each_request_is_a_call(make_model: type[FakeModel]) -> None:
    model = make_model()
    batcher = MicroBatcher(model, max_wait_s=0.0, max_batch=1)
    await asyncio.gather(*(batcher.embed([f"q{i}"], EmbedKind.QUERY) for i in range(8)))
    assert model.batch_sizes == [1] * 8
    await batcher.close()


async def test_batches_respect_max_batch_without_splitting_requests(
    make_model: type[FakeModel],
) -> None:
    model = make_model()
    batcher = MicroBatcher(model, max_wait_s=0.05, max_batch=8)
    requests = [[f"r{r}-t{t}" for t in range(3)] for r in range(10)]

    results = await asyncio.gather(*(batcher.embed(req, EmbedKind.PASSAGE) for req in requests))

    assert all(size <= 8 for size in model.batch_sizes)
    assert sum(model.batch_sizes) == 30
    assert len(model.calls) < len(requests)
    for request, result in zip(requests, results, strict=True):
        expected = np.stack([model.vector_for(t, EmbedKind.PASSAGE) for t in request])
        np.testing.assert_array_equal(result, expected)
    await batcher.close()


async def test_oversized_request_is_split_and_reassembled(make_model: type[FakeModel]) -> None:
    model = make_model()
    batcher = MicroBatcher(model, max_wait_s=0.01, max_batch=8)
    texts = [f"t{i}" for i in range(20)]
    result = await batcher.embed(texts, EmbedKind.PASSAGE)
    expected = np.stack([model.vector_for(t, EmbedKind.PASSAGE) for t in texts])
    np.testing.assert_array_equal(result, expected)
    assert model.batch_sizes == [8, 8, 4]
    assert batcher.stats().requests == 1
    await batcher.close()


async def test_query_waits_for_at_most_one_piece_of_a_big_passage_request(
    make_model: type[FakeModel],
) -> None:
    model = make_model()
    model.gate = threading.Event()
    batcher = MicroBatcher(model, max_wait_s=0.0, max_batch=4)
    ingest = asyncio.create_task(
        batcher.embed([f"chunk {i}" for i in range(16)], EmbedKind.PASSAGE)
    )
    # The first passage piece is in the model; the query arrives while it runs.
    assert await asyncio.to_thread(model.entered.wait, 10)
    query = asyncio.create_task(batcher.embed(["urgent question"], EmbedKind.QUERY))
    await asyncio.sleep(0)  # the query task runs up to its queued future
    assert batcher.stats().requests == 2
    model.gate.set()
    await query

    # the query ran right after the piece in flight, not after the whole request
    kinds = [kind for kind, _ in model.calls]
    assert kinds.index(EmbedKind.QUERY) <= 1
    assert (await ingest).shape == (16, model.dim)
    await batcher.close()


async def test_failed_piece_fails_the_request_once(make_model: type[FakeModel]) -> None:
    model = make_model(fail_on="bad")
    batcher = MicroBatcher(model, max_wait_s=0.0, max_batch=2)
    with pytest.raises(RuntimeError, match="fake model failure"):
        await batcher.embed(["a", "b", "bad", "c", "d", "bad"], EmbedKind.PASSAGE)
    assert len(model.calls) == 3
    await batcher.close()


async def test_wait_window_collects_a_late_request(make_model: type[FakeModel]) -> None:
    model = make_model()
    batcher = MicroBatcher(model, max_wait_s=0.5, max_batch=64)
    await batcher.embed(["traffic"], EmbedKind.QUERY)  # the model ran within the window

    async def late() -> np.ndarray:
        await asyncio.sleep(0.02)
        return await batcher.embed(["late"], EmbedKind.QUERY)

    await asyncio.gather(batcher.embed(["early"], EmbedKind.QUERY), late())
    assert model.batch_sizes == [1, 2]
    await batcher.close()


async def test_a_request_to_a_quiet_model_does_not_wait_for_the_window(
    make_model: type[FakeModel],
) -> None:
    model = make_model()
    # a window this long would time the test out if a lone request still waited for it
    batcher = MicroBatcher(model, max_wait_s=600, max_batch=64)
    async with asyncio.timeout(10):
        await batcher.embed(["alone"], EmbedKind.QUERY)
    assert model.batch_sizes == [1]
    await batcher.close()


async def test_full_batch_does_not_wait_for_the_window(make_model: type[FakeModel]) -> None:
    model = make_model()
    # a window this long would time the test out if a full batch still waited for it
    batcher = MicroBatcher(model, max_wait_s=600, max_batch=4)
    await asyncio.gather(*(batcher.embed([f"q{i}"], EmbedKind.QUERY) for i in range(4)))
    assert model.batch_sizes == [4]
    await batcher.close()


async def test_queries_and_passages_never_share_a_call(make_model: type[FakeModel]) -> None:
    model = make_model()
    batcher = MicroBatcher(model, max_wait_s=0.02, max_batch=64)
    kinds = [EmbedKind.QUERY, EmbedKind.PASSAGE] * 6

    results = await asyncio.gather(*(batcher.embed(["same text"], kind) for kind in kinds))

    assert sorted(kind for kind, _ in model.calls) == [EmbedKind.PASSAGE, EmbedKind.QUERY]
    for kind, result in zip(kinds, results, strict=True):
        np.testing.assert_array_equal(result[0], model.vector_for("same text", kind))
    await batcher.close()


async def test_a_query_never_waits_for_a_passage_call_in_flight(
    make_model: type[FakeModel],
) -> None:
    model = make_model()
    model.gate, model.gated = threading.Event(), EmbedKind.PASSAGE
    batcher = MicroBatcher(model, max_wait_s=0.0, max_batch=64)
    ingest = asyncio.create_task(
        batcher.embed([f"chunk {i}" for i in range(64)], EmbedKind.PASSAGE)
    )
    assert await asyncio.to_thread(model.entered.wait, 10)
    # The passage call holds its lane; the query has its own and is answered meanwhile.
    async with asyncio.timeout(5):
        query = await batcher.embed(["urgent question"], EmbedKind.QUERY)
    assert query.shape == (1, model.dim) and not ingest.done()
    model.gate.set()
    assert (await ingest).shape == (64, model.dim)
    await batcher.close()


async def test_model_runs_off_the_loop_one_call_at_a_time(make_model: type[FakeModel]) -> None:
    model = make_model(delay_s=0.01)
    batcher = MicroBatcher(model, max_wait_s=0.0, max_batch=2)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        for _ in range(5):
            await asyncio.sleep(0.001)
            ticks += 1

    kinds = [EmbedKind.QUERY, EmbedKind.PASSAGE]
    await asyncio.gather(ticker(), *(batcher.embed([f"t{i}"], kinds[i % 2]) for i in range(12)))

    assert ticks == 5
    # one call at a time per lane (queries and passages each have one)
    assert model.max_active_by_kind == {EmbedKind.QUERY: 1, EmbedKind.PASSAGE: 1}
    assert model.max_active <= 2
    assert all(name.startswith("embedding-model") for name in model.threads)
    await batcher.close()


async def test_failure_fails_only_that_batch(make_model: type[FakeModel]) -> None:
    model = make_model(fail_on="bad")
    batcher = MicroBatcher(model, max_wait_s=0.05, max_batch=2)

    results = await asyncio.gather(
        batcher.embed(["bad"], EmbedKind.QUERY),
        batcher.embed(["same batch"], EmbedKind.QUERY),
        batcher.embed(["next batch"], EmbedKind.QUERY),
        return_exceptions=True,
    )

    assert model.batch_sizes == [2, 1]
    assert isinstance(results[0], RuntimeError)
    assert isinstance(results[1], RuntimeError)
    assert isinstance(results[2], np.ndarray)
    assert batcher.stats().failed_batches == 1
    # the batcher keeps serving after a failure
    after = await batcher.embed(["after"], EmbedKind.QUERY)
    assert after.shape == (1, model.dim)
    await batcher.close()


async def test_cancelled_caller_does_not_disturb_others(make_model: type[FakeModel]) -> None:
    model = make_model()
    batcher = MicroBatcher(model, max_wait_s=0.05, max_batch=64)
    doomed = asyncio.create_task(batcher.embed(["cancelled"], EmbedKind.QUERY))
    kept = asyncio.create_task(batcher.embed(["kept"], EmbedKind.QUERY))
    await asyncio.sleep(0)
    doomed.cancel()

    result = await kept

    np.testing.assert_array_equal(result[0], model.vector_for("kept", EmbedKind.QUERY))
    assert doomed.cancelled()
    assert model.calls == [(EmbedKind.QUERY, ("kept",))]
    await batcher.close()


async def test_close_drains_queued_requests_then_refuses(make_model: type[FakeModel]) -> None:
    model = make_model(delay_s=0.01)
    batcher = MicroBatcher(model, max_wait_s=0.05, max_batch=2)
    pending = [asyncio.create_task(batcher.embed([f"q{i}"], EmbedKind.QUERY)) for i in range(5)]
    await asyncio.sleep(0)

    await batcher.close()

    assert all(task.done() and task.exception() is None for task in pending)
    assert sum(model.batch_sizes) == 5
    assert batcher.closed
    with pytest.raises(EmbeddingUnavailableError):
        await batcher.embed(["late"], EmbedKind.QUERY)


async def test_empty_request_needs_no_model_call(make_model: type[FakeModel]) -> None:
    model = make_model()
    batcher = MicroBatcher(model)
    result = await batcher.embed([], EmbedKind.QUERY)
    assert result.shape == (0, model.dim)
    assert model.calls == []
    await batcher.close()


def test_rejects_bad_bounds(make_model: type[FakeModel]) -> None:
    with pytest.raises(ValueError, match="max_batch"):
        MicroBatcher(make_model(), max_batch=0)
    with pytest.raises(ValueError, match="max_wait_s"):
        MicroBatcher(make_model(), max_wait_s=-1)
