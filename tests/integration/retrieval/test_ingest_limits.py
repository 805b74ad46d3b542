"""The ingest's own limits, where they are used: the per-tenant embedding budget, the
extraction deadline and the file-size limit, each through the real retrieval server
(embedded Postgres, the real model served over gRPC), configured the way an operator
does (``RetrievalSettings.from_env`` with the ``RETRIEVAL_*`` variables).

The embedding server here is the real servicer on a server whose outermost interceptor
watches passage calls: how many are in flight per caller (the first word of each text is
its document's title, so the tenant's), and, when asked, holds one caller's calls until
released, so "at most N at once" is seen while every call is waiting, not guessed from
timing.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from services.common import RuntimeInterceptor, Telemetry
from services.embedding import Embedder, EmbeddingEngine, MicroBatcher, QueryCache
from services.embedding._server import EmbeddingDeps, EmbeddingServicer
from services.retrieval import RetrievalSettings
from tandem.v1 import embedding_service_pb2 as epb
from tandem.v1 import embedding_service_pb2_grpc as epb_grpc
from tandem.v1 import retrieval_service_pb2 as pb
from tests.documents import amplified_docx
from tests.integration.retrieval.stack import (
    Retrieval,
    ingest,
    new_tenant,
    query_one,
    start_retrieval,
)

pytestmark = pytest.mark.integration

WAIT_S = 20.0  # how long a step that takes a second may take on a busy machine


class PassageWatch(grpc.aio.ServerInterceptor):
    """Counts passage Embed calls in flight per caller (the first word of the call's
    first text) and their peak; ``hold(caller)`` keeps that caller's calls waiting at
    the door until ``release(caller)``."""

    def __init__(self) -> None:
        self.in_flight: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.peak_total = 0
        self.calls: Counter[str] = Counter()
        self._held: dict[str, asyncio.Event] = {}
        self._changed = asyncio.Condition()

    def hold(self, caller: str) -> None:
        self._held[caller] = asyncio.Event()

    def release(self, caller: str) -> None:
        self._held.pop(caller).set()

    async def reached(self, caller: str, count: int) -> None:
        """Returns once ``count`` of ``caller``'s calls are in flight together."""
        try:
            async with self._changed:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.in_flight[caller] >= count), WAIT_S
                )
        except TimeoutError:
            pytest.fail(
                f"{caller}: {count} passage calls never in flight together "
                f"(peak {self.peak[caller]} in {WAIT_S:g} s)"
            )

    async def _enter(self, caller: str) -> None:
        async with self._changed:
            self.calls[caller] += 1
            self.in_flight[caller] += 1
            self.peak[caller] = max(self.peak[caller], self.in_flight[caller])
            self.peak_total = max(self.peak_total, sum(self.in_flight.values()))
            self._changed.notify_all()

    async def _leave(self, caller: str) -> None:
        async with self._changed:
            self.in_flight[caller] -= 1
            self._changed.notify_all()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None or not handler_call_details.method.endswith("/Embed"):
            return handler
        inner = handler.unary_unary

        async def embed(request: epb.EmbedRequest, context: Any) -> Any:
            if request.input_type != epb.INPUT_TYPE_PASSAGE or not request.texts:
                return await inner(request, context)
            caller = request.texts[0].split(maxsplit=1)[0]
            await self._enter(caller)
            try:
                held = self._held.get(caller)
                if held is not None:
                    await held.wait()
                return await inner(request, context)
            finally:
                await self._leave(caller)

        return grpc.unary_unary_rpc_method_handler(
            embed, handler.request_deserializer, handler.response_serializer
        )


@dataclass
class Watched:
    address: str
    watch: PassageWatch


@pytest.fixture
async def watched_embedding(real_embedder: Embedder) -> AsyncIterator[Watched]:
    engine = EmbeddingEngine(
        model=real_embedder,
        cache=QueryCache(1000, 600),
        batcher=MicroBatcher(real_embedder, max_wait_s=0.002, max_batch=64),
    )
    await engine.warm_up()
    watch = PassageWatch()
    server = grpc.aio.server(interceptors=[watch, RuntimeInterceptor(30.0)])
    epb_grpc.add_EmbeddingServiceServicer_to_server(
        EmbeddingServicer(EmbeddingDeps(engine=engine)), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield Watched(f"127.0.0.1:{port}", watch)
    await server.stop(0)
    await engine.close()


@pytest.fixture
async def make_retrieval(
    pg_url: str, watched_embedding: Watched, telemetry_sink: Any
) -> AsyncIterator[Callable[..., Any]]:
    """``await make_retrieval(RETRIEVAL_X="…")``: a retrieval server with those settings,
    read from the environment the way the service reads them at start."""
    started: list[Retrieval] = []

    async def make(**environ: str) -> Retrieval:
        settings = RetrievalSettings.from_env(
            {"EMBEDDING_ADDR": watched_embedding.address, **environ}
        )
        telemetry: Telemetry = telemetry_sink("retrieval").telemetry
        started.append(
            await start_retrieval(pg_url, watched_embedding.address, telemetry, settings=settings)
        )
        return started[-1]

    yield make
    for retrieval in started:
        await retrieval.close()


def _results(events: list[pb.IngestDocumentsResponse]) -> dict[str, pb.DocumentResult]:
    return {
        e.document_finished.document_id: e.document_finished
        for e in events
        if e.HasField("document_finished")
    }


# -- the per-tenant embedding budget ---------------------------------------------------------


def _handbook(owner: str, number: int) -> pb.DocumentInput:
    """A document whose every chunk is embedded as "<owner> handbook …" (the title leads
    each passage), long enough for several batches of two."""
    paragraphs = [
        f"Section {n}: renewals, support escalations and the quarterly review of account "
        f"health for region {n} are described here in plain words for every reader."
        for n in range(24)
    ]
    return pb.DocumentInput(
        document_id=f"{owner}-{number}",
        title=f"{owner} handbook {number}",
        text="\n\n".join(paragraphs),
    )


async def test_a_tenants_calls_share_one_embedding_budget_and_another_tenant_is_not_queued(
    make_retrieval: Callable[..., Any], watched_embedding: Watched, pg_url: str
) -> None:
    retrieval = await make_retrieval(
        RETRIEVAL_EMBED_CONCURRENCY="2",
        RETRIEVAL_EMBED_BATCH_SIZE="2",
        RETRIEVAL_CHUNK_CHARS="200",
        RETRIEVAL_CHUNK_OVERLAP_CHARS="50",
    )
    watch = watched_embedding.watch
    tenant_a, tenant_b = new_tenant(pg_url, "budget-a"), new_tenant(pg_url, "budget-b")
    # Tenant A's passage calls wait at the embedding service, so every batch let through
    # is in flight together. One call alone keeps RETRIEVAL_EMBED_CONCURRENCY batches out.
    watch.hold("alpha")
    calls_a = [asyncio.create_task(ingest(retrieval.stub, tenant_a, [_handbook("alpha", 0)]))]
    try:
        await _shares_one_budget(retrieval, watch, tenant_a, tenant_b, calls_a)
    except BaseException:
        for call in calls_a:
            call.cancel()
        raise
    finally:
        watch.release("alpha")
    finished = await asyncio.wait_for(asyncio.gather(*calls_a), WAIT_S)
    assert [summary.documents_included for _, summary in finished] == [1, 1, 1]
    assert watch.peak["alpha"] == 2
    # Every call's batches went through the budget: 12+ chunks per document, two a batch.
    assert watch.calls["alpha"] >= 3 * 6


async def _shares_one_budget(
    retrieval: Retrieval,
    watch: PassageWatch,
    tenant_a: str,
    tenant_b: str,
    calls_a: list[asyncio.Task[Any]],
) -> None:
    await watch.reached("alpha", 2)
    # Two more calls of A: the tenant's budget is full, so they add nothing in flight.
    calls_a += [
        asyncio.create_task(ingest(retrieval.stub, tenant_a, [_handbook("alpha", n)]))
        for n in (1, 2)
    ]
    # Tenant B ingests meanwhile: its own budget, so it is served while A's is full.
    try:
        events_b, summary_b = await asyncio.wait_for(
            ingest(retrieval.stub, tenant_b, [_handbook("bravo", 0)]), WAIT_S
        )
    except TimeoutError:
        pytest.fail(f"tenant B's ingest was queued behind tenant A's for {WAIT_S:g} s")
    assert summary_b.documents_included == 1, _results(events_b)
    assert watch.calls["bravo"] >= 2 and watch.peak_total >= 3  # B ran beside A's two
    # A's later calls have long reached their embedding stage by now (B's, started after
    # them, finished): still two batches across all of A's calls, not two per call.
    assert (watch.in_flight["alpha"], watch.peak["alpha"]) == (2, 2)


# -- extraction: the deadline and the file-size limit ----------------------------------------


def _big_html(pairs: int) -> bytes:
    """A page that extracts to about twice ``pairs`` characters."""
    return ("<html><body><p>text</p>" + "</" * pairs).encode()


LIMIT_BYTES = 256 * 1024


async def test_a_slow_file_fails_at_the_extraction_deadline_and_nothing_of_it_is_embedded(
    make_retrieval: Callable[..., Any], watched_embedding: Watched, pg_url: str
) -> None:
    retrieval = await make_retrieval(
        RETRIEVAL_EXTRACT_TIMEOUT_S="0.2", RETRIEVAL_MAX_FILE_BYTES=str(LIMIT_BYTES)
    )
    tenant = new_tenant(pg_url, "deadline")
    # 20,000 paragraphs: within the size and paragraph limits, so it is read (about a
    # second of CPU), past the 0.2 s deadline.
    slow = amplified_docx(20_000)
    assert len(slow) < LIMIT_BYTES
    documents = [
        pb.DocumentInput(
            document_id="slow", title="slowpage report", content=slow, file_name="report.docx"
        ),
        pb.DocumentInput(document_id="fine", title="finepage notes", text="Refunds in 30 days."),
    ]
    events, summary = await ingest(retrieval.stub, tenant, documents)
    results = _results(events)
    failed = results["slow"]
    assert failed.outcome == pb.DOCUMENT_OUTCOME_FAILED
    assert (failed.error.code, failed.error.reason) == (
        grpc.StatusCode.DEADLINE_EXCEEDED.value[0],
        "EXTRACTION_TIMEOUT",
    )
    assert failed.error.message == "extracting the text took longer than 0.2 s"
    # The batch goes on; nothing of the slow file was embedded or stored.
    assert results["fine"].outcome == pb.DOCUMENT_OUTCOME_INCLUDED
    assert (summary.documents_included, summary.documents_failed) == (1, 1)
    assert watched_embedding.watch.calls["slowpage"] == 0
    assert watched_embedding.watch.calls["finepage"] == 1
    stored = "SELECT count(*) FROM retrieval_documents WHERE tenant_id = %s AND document_id = %s"
    assert query_one(pg_url, stored, (tenant, "slow")) == 0


async def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    make_retrieval: Callable[..., Any], watched_embedding: Watched, pg_url: str
) -> None:
    retrieval = await make_retrieval(
        RETRIEVAL_EXTRACT_TIMEOUT_S="0.2", RETRIEVAL_MAX_FILE_BYTES=str(LIMIT_BYTES)
    )
    tenant = new_tenant(pg_url, "oversize")
    # Read, this page would extract to 280,000 characters: TOO_LARGE naming the file's
    # size says it was never parsed.
    oversized = _big_html(140_000)
    assert len(oversized) > LIMIT_BYTES
    events, summary = await ingest(
        retrieval.stub,
        tenant,
        [pb.DocumentInput(document_id="big", content=oversized, file_name="big.html")],
    )
    refused = _results(events)["big"]
    assert refused.outcome == pb.DOCUMENT_OUTCOME_FAILED
    assert (refused.error.code, refused.error.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT.value[0],
        "TOO_LARGE",
    )
    assert refused.error.message == "is 273.5 KiB, over the 256 KiB limit for one file"
    assert [v.field for v in refused.error.field_violations] == ["documents[0].content"]
    assert summary.documents_failed == 1
    assert sum(watched_embedding.watch.calls.values()) == 0
