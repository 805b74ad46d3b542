"""Principle 6 on the real retrieval and embedding services: a canary planted in a
document and in queries reaches no span, event, status, log line or metric label, while
every pipeline node still gets its span with metadata."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.protobuf import struct_pb2
from opentelemetry.sdk.trace import ReadableSpan

from services.common import GrpcServer
from services.embedding import Embedder, EmbeddingEngine, MicroBatcher, QueryCache
from services.embedding._server import EmbeddingDeps
from services.embedding._server import create_server as create_embedding_server
from services.embedding._server import ready as embedding_ready
from tandem.v1 import retrieval_service_pb2 as pb
from tests.conftest import TelemetrySink, server_settings
from tests.documents import image_only_pdf, pdf_pages
from tests.integration.retrieval.stack import ingest, new_tenant, start_retrieval
from tests.privacy import (
    assert_code_never_tries,
    assert_no_canary,
    captured_logs,
    new_canary,
    raw_spans,
)

pytestmark = pytest.mark.integration


@dataclass
class Observed:
    """Two real services, each with its sinks and a view of spans before the filter."""

    embedding: TelemetrySink
    retrieval: TelemetrySink
    embedding_address: str

    def __post_init__(self) -> None:
        self.raw = [
            raw_spans(self.embedding.telemetry.tracer_provider),
            raw_spans(self.retrieval.telemetry.tracer_provider),
        ]

    def spans(self) -> list[ReadableSpan]:
        return [
            *self.embedding.spans.get_finished_spans(),
            *self.retrieval.spans.get_finished_spans(),
        ]

    def unfiltered(self) -> list[ReadableSpan]:
        return [span for exporter in self.raw for span in exporter.get_finished_spans()]

    def assert_clean(self, canary: str, logs: Any) -> None:
        """Neither service's spans, metrics or logs hold the canary, and no code path
        even tried to record it (the spans before the filter)."""
        for sink in (self.embedding, self.retrieval):
            assert_no_canary(
                canary,
                spans=sink.spans.get_finished_spans(),
                metrics=sink.metrics.get_metrics_data(),
                logs=logs,
            )
        assert_code_never_tries(canary, self.unfiltered())

    def metric_names(self) -> set[str]:
        names: set[str] = set()
        for sink in (self.embedding, self.retrieval):
            data = sink.metrics.get_metrics_data()
            for rm in data.resource_metrics if data else ():
                for scope in rm.scope_metrics:
                    names.update(m.name for m in scope.metrics)
        return names


@pytest.fixture
async def observed(real_embedder: Embedder) -> AsyncIterator[Observed]:
    embedding_sink = TelemetrySink("embedding")
    engine = EmbeddingEngine(
        model=real_embedder,
        cache=QueryCache(1000, 600),
        batcher=MicroBatcher(real_embedder, max_wait_s=0.002, max_batch=64),
        tracer=embedding_sink.telemetry.tracer("tandem.embedding"),
        metrics=embedding_sink.telemetry.metrics,
    )
    server: GrpcServer
    server, servicer = await create_embedding_server(
        server_settings("embedding"), embedding_sink.telemetry
    )
    await embedding_ready(server, servicer, EmbeddingDeps(engine=engine))
    retrieval_sink = TelemetrySink("retrieval")
    yield Observed(embedding_sink, retrieval_sink, server.address)
    await server.stop(0)
    await engine.close()
    embedding_sink.telemetry.shutdown()
    retrieval_sink.telemetry.shutdown()


def _document(canary: str) -> pb.DocumentInput:
    metadata = struct_pb2.Struct()
    metadata.update({"owner": canary, "region": "emea"})
    text = (
        f"# Renewal notes for {canary}\n\n"
        f"The account {canary} asked about pricing tiers and a discount on renewal. "
        f"Contact {canary}@example.com or call +1 415 555 0199.\n\n"
        f"password: {canary}Secret99\n\n"
        "## Next steps\n\nSchedule a follow-up call about the enterprise plan."
    )
    return pb.DocumentInput(
        uri=f"https://docs.example.com/{canary}",
        title=f"Notes {canary}",
        category=f"cat-{canary}",
        metadata=metadata,
        text=text,
        content_type=pb.CONTENT_TYPE_MARKDOWN,
    )


async def test_ingest_and_search_leak_no_document_or_query_text(pg_url, observed):
    canary = new_canary()
    retrieval = await start_retrieval(
        pg_url, observed.embedding_address, observed.retrieval.telemetry
    )
    try:
        tenant = new_tenant(pg_url)
        with captured_logs() as logs:
            # A dry run lists what it would redact (the canary's address among it): to the
            # caller only, never to telemetry.
            _, dry = await ingest(retrieval.stub, tenant, [_document(canary)], dry_run=True)
            assert any(canary in f.preview for f in dry.documents[0].redaction_findings)
            _, summary = await ingest(retrieval.stub, tenant, [_document(canary)])
            assert summary.documents_included == 1 and summary.chunks_written >= 1
            query = f"what did {canary} ask about pricing?"
            first = await retrieval.stub.Search(
                pb.SearchRequest(tenant_id=tenant, query=query, rerank=True)
            )
            again = await retrieval.stub.Search(pb.SearchRequest(tenant_id=tenant, query=query))
            sparse = await retrieval.stub.Search(
                pb.SearchRequest(tenant_id=tenant, query=canary, mode=pb.SEARCH_MODE_SPARSE)
            )
        assert first.hits and again.hits and sparse.hits
        assert first.degraded  # rerank asked for, no reranker: visible, not silent
    finally:
        await retrieval.close()

    spans = observed.spans()
    names = {s.name for s in spans}
    assert {
        "retrieval.ingest",
        "retrieval.ingest.normalise",
        "retrieval.ingest.redact",
        "retrieval.ingest.chunk",
        "retrieval.ingest.embed",
        "retrieval.ingest.write",
        "retrieval.search",
        "retrieval.search.embed_query",
        "retrieval.search.db_query",
        "retrieval.search.rerank",
        "embedding.embed",
    } <= names
    redact = next(s for s in spans if s.name == "retrieval.ingest.redact")
    assert redact.attributes["tandem.redactions"] >= 2
    assert redact.attributes["tandem.redactions.labeled_secret"] >= 1
    search = next(
        s for s in spans if s.name == "retrieval.search" and s.attributes["tandem.mode"] == "SPARSE"
    )
    assert search.attributes["tandem.hits.sparse"] >= 1 and search.attributes["tandem.hits"] >= 1
    db_query = next(s for s in spans if s.name == "retrieval.search.db_query")
    assert db_query.attributes["tandem.hits"] >= 1
    cached = [
        s for s in spans if s.name == "embedding.embed" and s.attributes["tandem.kind"] == "QUERY"
    ]
    assert any(s.attributes["tandem.cache.hits"] == 1 for s in cached)
    assert {
        "tandem.retrieval.ingest.chunks_written",
        "tandem.embedding.cache.hits",
        "tandem.embedding.cache.misses",
        "tandem.degraded",
    } <= observed.metric_names()

    observed.assert_clean(canary, logs)


async def test_a_degraded_search_leaks_nothing_either(pg_url, unused_tcp_port):
    canary = new_canary()
    sink = TelemetrySink("retrieval")
    retrieval = await start_retrieval(pg_url, f"127.0.0.1:{unused_tcp_port}", sink.telemetry)
    raw = raw_spans(sink.telemetry.tracer_provider)
    try:
        tenant = new_tenant(pg_url)
        with captured_logs() as logs:
            reply = await retrieval.stub.Search(
                pb.SearchRequest(tenant_id=tenant, query=f"accounts like {canary}")
            )
        assert reply.degraded and not reply.hits
    finally:
        await retrieval.close()
        sink.telemetry.shutdown()
    search = next(s for s in sink.spans.get_finished_spans() if s.name == "retrieval.search")
    assert (search.attributes or {})["tandem.degraded_reason"] == "EMBEDDING_UNAVAILABLE"
    assert any("search degraded" in line for line in logs)
    assert_no_canary(
        canary,
        spans=sink.spans.get_finished_spans(),
        metrics=sink.metrics.get_metrics_data(),
        logs=logs,
    )
    assert_code_never_tries(canary, raw.get_finished_spans())


async def test_uploaded_files_leak_nothing_of_their_names_or_text(pg_url, observed):
    """A PDF holding the canary in its text and title, and a scan that fails, both under
    file names holding it: the extract span says the type, size and reason only."""
    canary = new_canary()
    retrieval = await start_retrieval(
        pg_url, observed.embedding_address, observed.retrieval.telemetry
    )
    pdf = pdf_pages([[f"Renewal notes for {canary}.", f"{canary} asked about pricing."]])
    files = [
        pb.DocumentInput(document_id="notes", content=pdf, file_name=f"{canary}.pdf"),
        pb.DocumentInput(
            document_id="scan", content=image_only_pdf(pages=1), file_name=f"{canary}-scan.pdf"
        ),
    ]
    try:
        tenant = new_tenant(pg_url)
        with captured_logs() as logs:
            request = pb.IngestDocumentsRequest(tenant_id=tenant, documents=files)
            events = [e async for e in retrieval.stub.IngestDocuments(request, timeout=60)]
        summary = events[-1].summary
        assert (summary.documents_included, summary.documents_failed) == (1, 1)
    finally:
        await retrieval.close()
    extracts = [s for s in observed.spans() if s.name == "retrieval.ingest.extract"]
    assert sorted(str(s.attributes.get("tandem.file.kind")) for s in extracts) == ["None", "PDF"]
    assert {s.attributes.get("tandem.extract.refused") for s in extracts} == {
        None,
        "NO_TEXT_LAYER",
    }
    observed.assert_clean(canary, logs)
