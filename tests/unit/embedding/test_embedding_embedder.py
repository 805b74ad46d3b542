"""Embedder's run planning: similar lengths together, padded size bounded, order restored."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from services.embedding import Embedder, ModelOrigin


class RecordingTextEmbedding:
    """Stands in for fastembed's TextEmbedding: vector [len(text), 0, 0] per text."""

    def __init__(self) -> None:
        self.runs: list[list[str]] = []

    def query_embed(self, texts: Iterable[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        return self.passage_embed(texts, batch_size=batch_size)

    def passage_embed(self, texts: Iterable[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        batch = list(texts)
        assert batch_size == len(batch)
        self.runs.append(batch)
        return iter([np.array([len(t), 0, 0], dtype=np.float32) for t in batch])


def make_embedder(fake: RecordingTextEmbedding, **kwargs: int) -> Embedder:
    return Embedder(
        fake,  # type: ignore[arg-type]
        name="fake",
        dim=3,
        origin=ModelOrigin.LOCAL_DIRECTORY,
        pooling="mean",
        normalized=False,
        source="test",
        load_seconds=0.0,
        **kwargs,
    )


def test_runs_group_similar_lengths_and_keep_request_order() -> None:
    fake = RecordingTextEmbedding()
    embedder = make_embedder(fake, batch_size=64, batch_char_budget=100)
    texts = ["a" * 40, "b", "c" * 45, "d" * 2, "e" * 3, "f" * 50]

    vectors = embedder.embed_passages(texts)

    np.testing.assert_array_equal(vectors[:, 0], [len(t) for t in texts])
    for run in fake.runs:
        assert len(run) * max(len(t) for t in run) <= 100 or len(run) == 1
    # longest first; a run closes when one more text would pad past the budget
    assert fake.runs == [["f" * 50, "c" * 45], ["a" * 40, "e" * 3], ["d" * 2, "b"]]


def test_runs_respect_the_count_cap() -> None:
    fake = RecordingTextEmbedding()
    embedder = make_embedder(fake, batch_size=4, batch_char_budget=10_000)
    vectors = embedder.embed_queries([f"q{i}" for i in range(10)])
    assert vectors.shape == (10, 3)
    assert [len(run) for run in fake.runs] == [4, 4, 2]


def test_text_longer_than_the_budget_runs_alone() -> None:
    fake = RecordingTextEmbedding()
    embedder = make_embedder(fake, batch_char_budget=10)
    embedder.embed_passages(["x" * 50, "y" * 40])
    assert [len(run) for run in fake.runs] == [1, 1]


def test_empty_input_makes_no_call() -> None:
    fake = RecordingTextEmbedding()
    assert make_embedder(fake).embed_passages([]).shape == (0, 3)
    assert fake.runs == []
