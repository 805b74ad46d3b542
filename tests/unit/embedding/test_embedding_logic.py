"""EmbeddingEngine: validation naming the field, the query cache, readiness."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import numpy as np
import pytest

from services.embedding import (
    REASON_BATCH_TOO_LARGE,
    REASON_EMPTY_TEXT,
    REASON_INVALID_ARGUMENT,
    REASON_TEXT_TOO_LONG,
    EmbeddingEngine,
    EmbeddingInputError,
    EmbeddingLimits,
    EmbeddingModelError,
    EmbeddingModelMismatchError,
    EmbeddingSettings,
    EmbedKind,
    MicroBatcher,
    ModelInfo,
    ModelOrigin,
    QueryCache,
    create_engine,
)

if TYPE_CHECKING:
    from tests.unit.embedding.conftest import FakeModel

EngineFactory = Callable[..., EmbeddingEngine]


@pytest.fixture
async def build_engine() -> AsyncIterator[EngineFactory]:
    engines: list[EmbeddingEngine] = []

    def build(model: FakeModel, **limits: int) -> EmbeddingEngine:
        engine = EmbeddingEngine(
            model=model,
            cache=QueryCache(100, 60),
            batcher=MicroBatcher(model, max_wait_s=0.001, max_batch=64),
            limits=EmbeddingLimits(**limits),
        )
        engines.append(engine)
        return engine

    yield build
    for engine in engines:
        await engine.close()


InvalidCase = tuple[list[str] | str, str, str, str, dict[str, str]]


@pytest.mark.parametrize(
    "case",
    [
        ([], "texts", "at least one", REASON_INVALID_ARGUMENT, {}),
        (
            ["x"] * 257,
            "texts",
            "at most 256 texts",
            REASON_BATCH_TOO_LARGE,
            {"limit": "256", "actual": "257"},
        ),
        (["ok", "fine", ""], "texts[2]", "empty", REASON_EMPTY_TEXT, {}),
        (["ok", " \t\n"], "texts[1]", "whitespace", REASON_EMPTY_TEXT, {}),
        (
            ["ok", "x" * 8193],
            "texts[1]",
            "at most 8192 characters",
            REASON_TEXT_TOO_LONG,
            {"limit": "8192", "actual": "8193"},
        ),
        (
            ["x" * 8192] * 129,
            "texts",
            "at most 1048576 characters in all",
            REASON_BATCH_TOO_LARGE,
            {"limit": "1048576", "actual": str(8192 * 129)},
        ),
        ("a single string", "texts", "not a single string", REASON_INVALID_ARGUMENT, {}),
    ],
    ids=["empty", "count", "empty-text", "blank-text", "long-text", "batch-chars", "str"],
)
async def test_invalid_input_names_field_and_limit(
    make_model: type[FakeModel], build_engine: EngineFactory, case: InvalidCase
) -> None:
    texts, field, fragment, reason, metadata = case
    model = make_model()
    engine = build_engine(model)
    for kind in EmbedKind:
        with pytest.raises(EmbeddingInputError) as caught:
            await engine.embed(texts, kind, tenant="acme")
        assert caught.value.field == field
        assert fragment in caught.value.description
        assert caught.value.reason == reason
        assert caught.value.metadata == metadata
    assert model.calls == []


async def test_limits_are_inclusive_and_configurable(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    engine = build_engine(make_model(), max_batch=3, max_text_chars=10, max_batch_chars=12)
    result = await engine.embed(["x" * 10, "y", "z"], EmbedKind.PASSAGE, tenant="acme")
    assert result.vectors.shape == (3, 4)
    with pytest.raises(EmbeddingInputError, match="at most 12 characters in all"):
        await engine.embed(["x" * 10, "y", "zz"], EmbedKind.PASSAGE, tenant="acme")
    with pytest.raises(EmbeddingInputError, match="at most 3 texts"):
        await engine.embed(["a"] * 4, EmbedKind.PASSAGE, tenant="acme")
    with pytest.raises(EmbeddingInputError, match="at most 10 characters"):
        await engine.embed(["x" * 11], EmbedKind.PASSAGE, tenant="acme")


async def test_unknown_kind_is_rejected(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    engine = build_engine(make_model())
    with pytest.raises(EmbeddingInputError) as caught:
        await engine.embed(["x"], "query", tenant="acme")  # type: ignore[arg-type]
    assert caught.value.field == "input_type"


async def test_expected_model_must_match(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    engine = build_engine(model)
    with pytest.raises(EmbeddingModelMismatchError) as caught:
        await engine.embed(["x"], EmbedKind.QUERY, expected_model="other/model", tenant="acme")
    assert (caught.value.expected, caught.value.actual) == ("other/model", "fake/model")
    assert model.calls == []
    result = await engine.embed(["x"], EmbedKind.QUERY, expected_model="fake/model", tenant="acme")
    assert result.model == "fake/model"


async def test_query_cache_hit_does_no_model_work(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    engine = build_engine(model)

    first = await engine.embed(["where is the invoice"], EmbedKind.QUERY, tenant="acme")
    calls_after_first = len(model.calls)
    second = await engine.embed(["where is the invoice"], EmbedKind.QUERY, tenant="acme")

    assert (first.cache_hits, second.cache_hits) == (0, 1)
    assert len(model.calls) == calls_after_first == 1
    np.testing.assert_array_equal(first.vectors, second.vectors)
    stats = engine.stats()
    assert (stats.cache.hits, stats.batcher.batches) == (1, 1)


async def test_another_tenants_cached_query_is_a_miss(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    engine = build_engine(model)

    await engine.embed(["confidential merger"], EmbedKind.QUERY, tenant="victim")
    other = await engine.embed(["confidential merger"], EmbedKind.QUERY, tenant="attacker")

    assert other.cache_hits == 0
    assert len(model.calls) == 2  # the attacker's query ran the model like any fresh one


async def test_no_tenant_bypasses_the_cache(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    engine = build_engine(model)

    for _ in range(2):
        result = await engine.embed(["where is the invoice"], EmbedKind.QUERY, tenant=None)
        assert result.cache_hits == 0
    assert len(model.calls) == 2
    assert engine.stats().cache.size == 0


async def test_mixed_hits_and_misses_keep_request_order(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    engine = build_engine(model)
    await engine.embed(["b"], EmbedKind.QUERY, tenant="acme")

    result = await engine.embed(["a", "b", "c", "a"], EmbedKind.QUERY, tenant="acme")

    assert result.cache_hits == 1
    # "a" appears twice but is computed once; "b" comes from the cache
    assert model.calls[-1] == (EmbedKind.QUERY, ("a", "c"))
    expected = np.stack([model.vector_for(t, EmbedKind.QUERY) for t in ["a", "b", "c", "a"]])
    np.testing.assert_array_equal(result.vectors, expected)
    assert (result.model, result.dim) == ("fake/model", 4)


async def test_passages_are_never_cached(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    engine = build_engine(model)
    for _ in range(2):
        result = await engine.embed(["a chunk of a document"], EmbedKind.PASSAGE, tenant="acme")
        assert result.cache_hits == 0
    assert model.batch_sizes == [1, 1]
    assert engine.stats().cache.size == 0


async def test_model_failure_is_not_cached(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model(fail_on="bad")
    engine = build_engine(model)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await engine.embed(["bad"], EmbedKind.QUERY, tenant="acme")
    assert model.batch_sizes == [1, 1]


async def test_warm_up_makes_ready_after_probing_both_kinds(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    engine = build_engine(model)
    assert not engine.ready

    info = await engine.warm_up()

    assert engine.ready
    assert sorted(kind for kind, _ in model.calls) == [EmbedKind.PASSAGE, EmbedKind.QUERY]
    assert info == ModelInfo(
        name="fake/model",
        dim=4,
        origin=ModelOrigin.LOCAL_DIRECTORY,
        pooling="mean",
        normalized=True,
        max_batch=256,
        max_text_chars=8192,
        max_batch_chars=1_048_576,
        query_cache_capacity=100,
        query_cache_ttl_s=60,
        query_cache_capacity_per_tenant=100,
    )
    assert engine.stats().cache.size == 0


async def test_warm_up_rejects_a_model_with_the_wrong_dim(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    engine = build_engine(make_model(wrong_dim=True))
    with pytest.raises(EmbeddingModelError, match="shape"):
        await engine.warm_up()
    assert not engine.ready


async def test_warm_up_rejects_unnormalised_vectors_from_a_normalised_model(
    make_model: type[FakeModel], build_engine: EngineFactory
) -> None:
    model = make_model()
    model.vector_for = lambda text, kind: np.full(4, 2.0, dtype=np.float32)  # type: ignore[method-assign]
    engine = build_engine(model)
    with pytest.raises(EmbeddingModelError, match="norm"):
        await engine.warm_up()
    assert not engine.ready


async def test_create_engine_applies_settings(make_model: type[FakeModel]) -> None:
    settings = EmbeddingSettings(max_batch=2, max_text_chars=5, cache_size=0)
    model = make_model()
    engine = create_engine(settings, model)
    try:
        assert engine.model_info().max_batch == 2
        with pytest.raises(EmbeddingInputError, match="at most 5 characters"):
            await engine.embed(["toolong"], EmbedKind.QUERY, tenant="acme")
        await engine.embed(["q"], EmbedKind.QUERY, tenant="acme")
        second = await engine.embed(["q"], EmbedKind.QUERY, tenant="acme")
        assert second.cache_hits == 0  # a zero-size cache is off
        assert engine.model_info().query_cache_capacity == 0
    finally:
        await engine.close()
