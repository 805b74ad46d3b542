"""One real retrieval stack (embedded Postgres, the real model) for the demo-corpus module,
loaded once: ingesting the corpus with the real model is the expensive part."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest_asyncio

from services.demo import DemoCorpus, LoadReport, generate_documents, load_demo_documents
from services.embedding import Embedder
from tests.conftest import TelemetrySink
from tests.integration.retrieval.stack import (
    EmbeddingService,
    Retrieval,
    new_tenant,
    start_embedding,
    start_retrieval,
)


@dataclass
class LoadedDemo:
    """The stack, the corpus, the tenant it was loaded for and the first load's report."""

    retrieval: Retrieval
    corpus: DemoCorpus
    tenant: str
    first_load: LoadReport
    load_seconds: float


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def loaded_demo(pg_url: str, real_embedder: Embedder) -> AsyncIterator[LoadedDemo]:
    sinks = [TelemetrySink("embedding"), TelemetrySink("retrieval")]
    embedding: EmbeddingService = await start_embedding(real_embedder, sinks[0].telemetry)
    retrieval = await start_retrieval(pg_url, embedding.server.address, sinks[1].telemetry)
    try:
        corpus = generate_documents()
        tenant = new_tenant(pg_url, "demo")
        started = time.perf_counter()
        report = await load_demo_documents(retrieval.stub, tenant, documents=corpus.documents)
        elapsed = time.perf_counter() - started
        yield LoadedDemo(retrieval, corpus, tenant, report, elapsed)
    finally:
        await retrieval.close()
        await embedding.close()
        for sink in sinks:
            sink.telemetry.shutdown()
