"""Ingest never starves queries: tenant B's Search latency alone and while tenant A
ingests, on the stack as processes.

Two tests. The check in the suite (``test_search_keeps_its_pace_while_another_tenant_
ingests``) runs on the shared stack in seconds: phases interleaved, two rounds, a 16 KB
document per round; it fails when a search is degraded or empty, or when B's p99 while
A ingests passes ``CHECK_BOUND`` times its p99 alone. That bound is the CI-sized guard
against searches waiting behind an ingest's passages (queries and passages sharing the
embedding model's thread: 25-47x at this size, 24x in the benchmark), not the 2x target:
on two shared cores a few hundred searches put the ratio anywhere from 1.4x to 2.5x.

The benchmark (``make bench-neighbour``, ``NEIGHBOUR_BENCH=1``) judges the target with
a 900 KB document and 20 s windows: phases alternate (alone, during an ingest, alone, …)
so both see the same background, every round is printed, and it fails unless B's p99
while A ingests is within twice its p99 alone, pooled, with no search degraded or
empty; the ingest's throughput in chunks per second is reported beside. Numbers in
``bench-results/neighbour.json``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from services.common import TENANT_TOKEN_HEADER, TenantSigner, create_channel
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tests.integration.retrieval.stack import new_tenant
from tests.processes import REPO_ROOT, ProcessStack

BENCH = os.environ.get("NEIGHBOUR_BENCH") == "1"
ROUNDS = int(os.environ.get("NEIGHBOUR_ROUNDS", "2"))
WINDOW_S = float(os.environ.get("NEIGHBOUR_WINDOW_S", "20"))
CONCURRENCY = 2
RESULT_PATH = REPO_ROOT / "bench-results" / "neighbour.json"
QUERIES = (
    "security review", "discount approval", "pricing policy", "renewal risk",
    "audit log export", "onboarding call", "churn signals", "support escalation",
)  # fmt: skip
# Numbers the queries, so none repeats within a run.
_SERIAL = itertools.count()
UNLIMITED = {"GATEWAY_RATE_PER_S": "100000", "GATEWAY_BURST": "100000"}


def big_document(chars: int = 900_000, seed: int = 7) -> str:
    """About ``chars`` characters of prose in paragraphs (a long handbook)."""
    words = (
        "the", "quarterly", "revenue", "grew", "across", "regions", "while", "churn", "among",
        "small", "accounts", "rose", "and", "the", "support", "team", "escalated", "several",
        "incidents", "to", "engineering", "for", "review",
    )  # fmt: skip
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        paragraph = " ".join(rng.choice(words) for _ in range(150))
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


async def _searches(
    stub: gpb_grpc.GatewayServiceAsyncStub, key: str, seconds: float
) -> tuple[list[float], int]:
    metadata = (("authorization", f"Bearer {key}"),)
    latencies: list[float] = []
    degraded = 0

    async def one_caller() -> None:
        nonlocal degraded
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            # Every query new, as users' are: the embedding cache must not answer them.
            i = next(_SERIAL)
            query = f"{QUERIES[i % len(QUERIES)]} {i}"
            request = gpb.GatewayServiceSearchRequest(query=query, top_k=5)
            started = time.monotonic()
            reply = await stub.Search(request, metadata=metadata, timeout=10)
            latencies.append((time.monotonic() - started) * 1000)
            degraded += int(reply.degraded or not reply.hits)

    await asyncio.gather(*(one_caller() for _ in range(CONCURRENCY)))
    return latencies, degraded


async def _ingest(
    stub: gpb_grpc.GatewayServiceAsyncStub, key: str, document_id: str, text: str
) -> tuple[float, int]:
    request = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id=document_id, text=text)]
    )
    started = time.monotonic()
    summary = None
    async for event in stub.IngestDocuments(
        request, metadata=(("authorization", f"Bearer {key}"),), timeout=900
    ):
        if event.HasField("summary"):
            summary = event.summary
    assert summary is not None and summary.documents_included == 1
    return time.monotonic() - started, summary.chunks_written


def _phase(latencies: list[float], degraded: int) -> dict[str, Any]:
    return {
        "searches": len(latencies),
        "p50_ms": round(_percentile(latencies, 50), 1),
        "p99_ms": round(_percentile(latencies, 99), 1),
        "degraded_or_empty": degraded,
    }


@pytest.mark.e2e
@pytest.mark.timeout(3600)
@pytest.mark.skipif(not BENCH, reason="a benchmark: make bench-neighbour")
async def test_bench_search_while_another_tenant_ingests(
    make_stack: Callable[..., ProcessStack],
) -> None:
    stack = await asyncio.to_thread(make_stack, service_env={"gateway": UNLIMITED})
    a_key = await asyncio.to_thread(stack.create_key, "neighbour-a")
    b_key = await asyncio.to_thread(stack.create_key, "neighbour-b")
    await asyncio.to_thread(stack.load_demo_documents, "neighbour-b")
    text = big_document()
    pooled: dict[str, list[float]] = {"alone": [], "ingest": []}
    degraded = {"alone": 0, "ingest": 0}
    rounds: list[dict[str, Any]] = []
    ingests: list[dict[str, float]] = []
    async with grpc.aio.insecure_channel(stack.gateway_address) as channel:
        stub = gpb_grpc.GatewayServiceStub(channel)
        await _searches(stub, b_key, 3.0)  # warm caches and connections
        # The ingest on its own, nobody searching: its throughput when it has the machine.
        alone_took, alone_chunks = await _ingest(stub, a_key, "handbook-alone", text)
        print(f"ingest alone: {alone_chunks / alone_took:.1f} chunks/s", flush=True)
        for round_number in range(ROUNDS):
            alone, alone_bad = await _searches(stub, b_key, WINDOW_S)
            ingest = asyncio.create_task(_ingest(stub, a_key, f"handbook-{round_number}", text))
            await asyncio.sleep(2.0)  # the ingest is embedding by now
            during, during_bad = await _searches(stub, b_key, WINDOW_S)
            took, chunks = await ingest
            pooled["alone"] += alone
            pooled["ingest"] += during
            degraded["alone"] += alone_bad
            degraded["ingest"] += during_bad
            entry = {
                "round": round_number + 1,
                "alone": _phase(alone, alone_bad),
                "while_a_ingests": _phase(during, during_bad),
                "ingest_s": round(took, 1),
                "ingest_chunks_per_s": round(chunks / took, 1),
            }
            rounds.append(entry)
            ingests.append({"seconds": took, "chunks": chunks})
            print(json.dumps(entry), flush=True)
    alone_p99 = _percentile(pooled["alone"], 99)
    during_p99 = _percentile(pooled["ingest"], 99)
    result = {
        "document_chars": len(text),
        "concurrency": CONCURRENCY,
        "window_s": WINDOW_S,
        "rounds": rounds,
        "pooled": {
            "alone": _phase(pooled["alone"], degraded["alone"]),
            "while_a_ingests": _phase(pooled["ingest"], degraded["ingest"]),
        },
        "target": "p99 while A ingests <= 2 x p99 alone, 0 degraded",
        "met": during_p99 <= 2 * alone_p99 and degraded["ingest"] == 0,
        "ingest_alone_chunks_per_s": round(alone_chunks / alone_took, 1),
        "ingest_chunks_per_s": round(
            sum(i["chunks"] for i in ingests) / sum(i["seconds"] for i in ingests), 1
        ),
    }
    print(json.dumps(result["pooled"]), "met" if result["met"] else "NOT met", flush=True)
    await asyncio.to_thread(_write, result)
    assert degraded == {"alone": 0, "ingest": 0}, degraded
    assert during_p99 <= 2 * alone_p99, f"target missed: p99 {during_p99} vs {alone_p99} alone"


def _write(result: dict[str, Any]) -> None:
    RESULT_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULT_PATH.write_text(json.dumps(result, indent=2) + "\n")


# -- the check in the suite: small, bounded, judged -------------------------------------------

CHECK_ROUNDS = 2
CHECK_ALONE = 50  # B's searches alone, per round
CHECK_MIN_DURING = 10  # B's searches that must finish while A ingests, per round
CHECK_DOCUMENT_CHARS = 16_000  # about 30 chunks: one passage call of the model
# B's p99 while A ingests may be at most this many times its p99 alone. Measured on two
# shared cores: 1.4x-2.5x as built; 25x-47x with queries and passages on one model
# thread (the regression this guards); the 2x target is the benchmark's to judge.
CHECK_BOUND = 5.0


@dataclass
class Direct:
    """Retrieval's own port, called as the gateway calls it (its certificate, a token it
    signed for the tenant): the shared stack's gateway quota is sized for a few calls."""

    stub: rpb_grpc.RetrievalServiceAsyncStub
    signer: TenantSigner

    def token(self, tenant: str, rpc: str) -> tuple[tuple[str, str], ...]:
        """The token the gateway would send with its call of retrieval's ``rpc``."""
        entry = f"/tandem.v1.RetrievalService/{rpc}"
        return ((TENANT_TOKEN_HEADER, self.signer.token(tenant, entry)),)


@dataclass
class Phase:
    latencies: list[float] = field(default_factory=list)
    degraded: int = 0


async def _search(direct: Direct, tenant: str, phase: Phase, keep: Callable[[], bool]) -> None:
    i = next(_SERIAL)  # every query new: the embedding cache must not answer it
    request = rpb.SearchRequest(tenant_id=tenant, query=f"{QUERIES[i % len(QUERIES)]} {i}", top_k=5)
    started = time.monotonic()
    reply = await direct.stub.Search(request, metadata=direct.token(tenant, "Search"), timeout=10)
    took = (time.monotonic() - started) * 1000
    if keep():
        phase.latencies.append(took)
        phase.degraded += int(reply.degraded or not reply.hits)


async def _alone(direct: Direct, tenant: str, phase: Phase, count: int) -> None:
    target = len(phase.latencies) + count

    async def caller() -> None:
        while len(phase.latencies) < target:
            await _search(direct, tenant, phase, lambda: len(phase.latencies) < target)

    await asyncio.gather(*(caller() for _ in range(CONCURRENCY)))


async def _while_ingesting(
    direct: Direct, searcher: str, ingester: str, document: rpb.DocumentInput, phase: Phase
) -> tuple[int, Any]:
    """B's searches from the moment A's ingest call is made until its summary arrives (a
    search still running then is not counted); returns how many were counted and A's
    summary."""
    done = asyncio.Event()
    summary: list[Any] = []
    before = len(phase.latencies)

    async def ingest() -> None:
        request = rpb.IngestDocumentsRequest(tenant_id=ingester, documents=[document])
        try:
            async for event in direct.stub.IngestDocuments(
                request, metadata=direct.token(ingester, "IngestDocuments"), timeout=120
            ):
                if event.HasField("summary"):
                    summary.append(event.summary)
        finally:
            done.set()

    async def caller() -> None:
        while not done.is_set():
            await _search(direct, searcher, phase, lambda: not done.is_set())

    await asyncio.gather(ingest(), *(caller() for _ in range(CONCURRENCY)))
    return len(phase.latencies) - before, summary[0] if summary else None


def _b_documents() -> list[rpb.DocumentInput]:
    """Tenant B's notes, one on each topic its searches ask about."""
    return [
        rpb.DocumentInput(
            document_id=f"note-{n}",
            title=topic.capitalize(),
            text=f"Notes on {topic}: who owns it, what was agreed and what happens next.",
        )
        for n, topic in enumerate(QUERIES)
    ]


@pytest.mark.e2e
async def test_search_keeps_its_pace_while_another_tenant_ingests(
    process_stack: ProcessStack,
) -> None:
    """Tenant B searches (two callers, every query new) alone and while tenant A
    ingests, phases interleaved over two rounds, on retrieval's own port as the gateway
    calls it: no search is degraded or empty, and B's p99 while A ingests stays within
    ``CHECK_BOUND`` times its p99 alone (the 2x target: ``make bench-neighbour``)."""
    trust = process_stack.trust("gateway")
    assert trust.signer is not None
    a = new_tenant(process_stack.database_url(), "neighbour-a")
    b = new_tenant(process_stack.database_url(), "neighbour-b")
    text = big_document(CHECK_DOCUMENT_CHARS)
    alone, during = Phase(), Phase()
    async with create_channel(
        process_stack.address("retrieval"), trust=trust, peer="retrieval"
    ) as channel:
        direct = Direct(rpb_grpc.RetrievalServiceStub(channel), trust.signer)
        request = rpb.IngestDocumentsRequest(tenant_id=b, documents=_b_documents())
        events = [
            e
            async for e in direct.stub.IngestDocuments(
                request, metadata=direct.token(b, "IngestDocuments"), timeout=60
            )
        ]
        assert events[-1].summary.documents_included == len(QUERIES), events[-1]
        await _alone(direct, b, Phase(), 10)  # warm connections and the query lane
        rounds = []
        for number in range(CHECK_ROUNDS):
            await _alone(direct, b, alone, CHECK_ALONE)
            document = rpb.DocumentInput(document_id=f"handbook-{number}", text=text)
            counted, summary = await _while_ingesting(direct, b, a, document, during)
            assert summary is not None and summary.documents_included == 1, summary
            rounds.append((counted, summary.chunks_written))
    alone_p99, during_p99 = _percentile(alone.latencies, 99), _percentile(during.latencies, 99)
    print(
        f"neighbour check: B alone p50 {_percentile(alone.latencies, 50):.1f} ms "
        f"p99 {alone_p99:.1f} ms ({len(alone.latencies)}); while A ingests p50 "
        f"{_percentile(during.latencies, 50):.1f} ms p99 {during_p99:.1f} ms "
        f"({len(during.latencies)}); rounds (searches, chunks) {rounds}"
    )
    assert (alone.degraded, during.degraded) == (0, 0)
    assert during_p99 <= CHECK_BOUND * alone_p99, (alone_p99, during_p99)
    # The check measured something: B kept searching through each of A's ingests.
    assert all(counted >= CHECK_MIN_DURING for counted, _ in rounds), rounds
