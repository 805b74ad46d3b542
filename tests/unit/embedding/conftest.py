"""Fakes of the embedding model interface for the embedding unit tests."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from services.embedding import EmbedKind, ModelOrigin, Vectors


class FakeModel:
    """Deterministic vectors per (kind, text); records every call, its thread and overlap."""

    def __init__(
        self,
        *,
        dim: int = 4,
        delay_s: float = 0.0,
        fail_on: str | None = None,
        name: str = "fake/model",
        wrong_dim: bool = False,
    ) -> None:
        self.name = name
        self.dim = dim
        self.origin = ModelOrigin.LOCAL_DIRECTORY
        self.pooling = "mean"
        self.normalized = True
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.wrong_dim = wrong_dim
        self.calls: list[tuple[EmbedKind, tuple[str, ...]]] = []
        self.threads: set[str] = set()
        self.max_active = 0
        # ``entered`` is set as a call starts; a call waits while ``gate`` is set and closed.
        self.entered = threading.Event()
        self.gate: threading.Event | None = None
        # When set, only calls of this kind wait on ``gate``.
        self.gated: EmbedKind | None = None
        self.max_active_by_kind: dict[EmbedKind, int] = {}
        self._active_by_kind: dict[EmbedKind, int] = {}
        self._active = 0
        self._lock = threading.Lock()

    @property
    def batch_sizes(self) -> list[int]:
        return [len(texts) for _, texts in self.calls]

    def vector_for(self, text: str, kind: EmbedKind) -> Vectors:
        seed = int.from_bytes(hashlib.sha256(f"{kind}:{text}".encode()).digest()[:8], "big")
        vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, EmbedKind.QUERY)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, EmbedKind.PASSAGE)

    def _embed(self, texts: Sequence[str], kind: EmbedKind) -> Vectors:
        with self._lock:
            self._active += 1
            self.max_active = max(self.max_active, self._active)
            self._active_by_kind[kind] = self._active_by_kind.get(kind, 0) + 1
            self.max_active_by_kind[kind] = max(
                self.max_active_by_kind.get(kind, 0), self._active_by_kind[kind]
            )
            self.calls.append((kind, tuple(texts)))
            self.threads.add(threading.current_thread().name)
        self.entered.set()
        try:
            if self.gate is not None and self.gated in (None, kind):
                self.gate.wait(timeout=10)
            if self.delay_s:
                time.sleep(self.delay_s)
            if self.fail_on is not None and self.fail_on in texts:
                raise RuntimeError("fake model failure")
            if self.wrong_dim:
                return np.zeros((len(texts), self.dim + 1), dtype=np.float32)
            return np.stack([self.vector_for(text, kind) for text in texts])
        finally:
            with self._lock:
                self._active -= 1
                self._active_by_kind[kind] -= 1


@pytest.fixture
def make_model() -> type[FakeModel]:
    """The fake's class, so each test builds one with the behaviour it needs."""
    return FakeModel
