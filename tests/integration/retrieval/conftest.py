"""The real model and a real retrieval stack on the embedded Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.retrieval.stack import (
    EmbeddingService,
    Retrieval,
    start_embedding,
    start_retrieval,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def embedding_service(real_embedder, telemetry_sink) -> AsyncIterator[EmbeddingService]:
    service = await start_embedding(real_embedder, telemetry_sink("embedding").telemetry)
    yield service
    await service.close()


@pytest.fixture
async def retrieval(pg_url, embedding_service, telemetry_sink) -> AsyncIterator[Retrieval]:
    running = await start_retrieval(
        pg_url, embedding_service.server.address, telemetry_sink("retrieval").telemetry
    )
    yield running
    await running.close()
