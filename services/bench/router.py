"""Router latency benchmark: ``tandem bench router``.

Starts the real stack in-process on loopback (the embedding model served over gRPC,
retrieval on a scratch database of the embedded Postgres, SQL on the demo warehouse, the
router with the deterministic provider), ingests a small fixture corpus, and measures
through the router's stub: RETRIEVE, AGENTIC and AUTO on a two-step compound question
(p50/p95/p99), and the time from sending StreamAsk to its first event. The embedding
query cache is off so every request embeds its question. Targets (issue 7): RETRIEVE
p50 ≤ 60 ms, AGENTIC ≤ 250 ms, AUTO two-step ≤ 400 ms, first event ≤ 50 ms.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from services.common import (
    Database,
    DatabaseSettings,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    create_channel,
    resolve_url,
)
from services.common.llm import DeterministicProvider
from services.embedding._batcher import MicroBatcher
from services.embedding._cache import QueryCache
from services.embedding._logic import EmbeddingEngine
from services.embedding._model import Embedder
from services.embedding._server import EmbeddingDeps
from services.embedding._server import create_server as create_embedding_server
from services.embedding._server import ready as embedding_ready
from services.embedding._settings import EmbeddingSettings
from services.retrieval._server import RetrievalDeps, prepare_store
from services.retrieval._server import create_server as create_retrieval_server
from services.retrieval._server import ready as retrieval_ready
from services.retrieval._settings import RetrievalSettings
from services.router._server import build_deps as build_router_deps
from services.router._server import create_server as create_router_server
from services.router._server import ready as router_ready
from services.router._settings import RouterSettings
from services.sql._server import build_deps as build_sql_deps
from services.sql._server import create_server as create_sql_server
from services.sql._server import ready as sql_ready
from services.sql._settings import SqlSettings
from services.sql._targets import TargetConfig
from services.sql._warehouse import ensure_warehouse
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tandem.v1 import router_service_pb2 as pb
from tandem.v1 import router_service_pb2_grpc as pb_grpc

TENANT = "bench"
TARGETS_MS = {"retrieve": 60.0, "agentic": 250.0, "auto_two_step": 400.0, "first_event": 50.0}

CORPUS: tuple[tuple[str, str, str], ...] = (
    (
        "Meridian Health account brief",
        "brief",
        "Meridian Health operates forty outpatient clinics and is evaluating a healthcare "
        "analytics platform to reduce patient wait times. Their clinics need compliant "
        "reporting and the analytics budget was approved this year.",
    ),
    (
        "Northwind Logistics account brief",
        "brief",
        "Northwind Logistics runs regional warehouses and truck fleets and wants route "
        "optimisation and fuel reporting for its drivers.",
    ),
    (
        "Call notes: Globex onboarding review",
        "call_notes",
        "Globex said onboarding took too long because data migration stalled for three weeks. "
        "The onboarding call notes record that Globex wants a dedicated onboarding engineer.",
    ),
    (
        "Call notes: Initech renewal",
        "call_notes",
        "Initech praised the support team during the renewal call and asked about volume "
        "discounts for next year and a pilot in the finance department.",
    ),
    (
        "Discount policy",
        "policy",
        "Discounts above fifteen percent need approval from the regional sales director. "
        "Multi-year contracts may receive an additional five percent discount.",
    ),
    (
        "Security review checklist",
        "policy",
        "Security reviews cover single sign-on, audit logging, data residency and encryption "
        "at rest. Healthcare customers also ask for a signed business associate agreement.",
    ),
    (
        "Product sheet: Insights",
        "product",
        "Insights dashboards show pipeline health, churn risk and renewal forecasts. Customers "
        "use Insights to prioritise accounts that look like a good fit.",
    ),
    (
        "Call notes: Umbrella pricing objection",
        "call_notes",
        "Umbrella objected to pricing and compared us to a cheaper competitor. The champion "
        "asked for a case study from another manufacturing customer.",
    ),
)
RETRIEVE_QUESTIONS = (
    "healthcare analytics for clinics",
    "onboarding delays and data migration",
    "discount approval rules",
    "security review single sign-on",
    "pricing objection competitor",
)
AGENTIC_QUESTIONS = (
    "Which accounts look like a good fit for healthcare analytics?",
    "What did Globex say about onboarding?",
    "What is the policy for large discounts?",
    "What do healthcare customers ask for in security reviews?",
    "Why did Umbrella object to our pricing?",
)
COMPOUND_QUESTIONS = (
    "How many opportunities are there, and summarize the onboarding call notes?",
    "How many companies are there, and what does the discount policy say?",
    "How many contacts are there, and what did Umbrella say about pricing?",
)


def _pct(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.array(values), q)), 1) if values else float("nan")


def _dist(ms: Sequence[float]) -> dict[str, float]:
    return {"n": len(ms), "p50_ms": _pct(ms, 50), "p95_ms": _pct(ms, 95), "p99_ms": _pct(ms, 99)}


async def _measure(
    n: int, questions: Sequence[str], call: Callable[[str], Awaitable[Any]]
) -> list[float]:
    for question in questions:  # warm-up: connections, plans, catalog caches
        await call(question)
    timings: list[float] = []
    for index in range(n):
        started = time.perf_counter()
        await call(questions[index % len(questions)])
        timings.append((time.perf_counter() - started) * 1000)
    return timings


async def _run(n: int) -> dict[str, Any]:
    telemetry = Telemetry(TelemetrySettings("bench"))
    embedding_settings = EmbeddingSettings.from_env()
    model = await asyncio.to_thread(Embedder.from_settings, embedding_settings)
    server_url = await asyncio.to_thread(resolve_url, DatabaseSettings.from_env())
    warehouse = await ensure_warehouse(server_url)
    scratch = f"tandem_router_bench_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    database = Database(make_conninfo(server_url, dbname=scratch), min_size=1, max_size=4)
    closers: list[Callable[[], Awaitable[Any]]] = []
    try:
        engine = EmbeddingEngine(
            model=model,
            cache=QueryCache(0, 0),
            batcher=MicroBatcher(model, max_wait_s=0.001, max_batch=64),
        )
        embedding, servicer = await create_embedding_server(
            ServerSettings("embedding", port=0, grace_period_s=0.5), telemetry
        )
        await embedding_ready(embedding, servicer, EmbeddingDeps(engine))
        closers.append(lambda: embedding.stop(0))
        retrieval_settings = RetrievalSettings(embedding_addr=embedding.address, hnsw="off")
        await prepare_store(database, retrieval_settings, embedded=True)
        async with database.connection() as conn:
            await conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (TENANT,))
        embedding_channel = create_channel(embedding.address)
        closers.append(embedding_channel.close)
        retrieval, _ = await create_retrieval_server(
            ServerSettings("retrieval", port=0, grace_period_s=0.5),
            telemetry,
            RetrievalDeps(retrieval_settings, database, embedding_channel, None),
        )
        await retrieval_ready(retrieval)
        closers.append(lambda: retrieval.stop(0))
        sql_deps = await build_sql_deps(
            SqlSettings.from_env(),
            telemetry,
            configs=[TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({TENANT}))],
        )
        closers.append(sql_deps.close)
        sql_server, sql_servicer = await create_sql_server(
            ServerSettings("sql", port=0, grace_period_s=0.5), telemetry
        )
        await sql_ready(sql_server, sql_servicer, sql_deps)
        closers.append(lambda: sql_server.stop(0))
        router_settings = RouterSettings(
            retrieval_addr=retrieval.address, sql_addr=sql_server.address
        )
        router_deps = build_router_deps(router_settings, telemetry, llm=DeterministicProvider())
        closers.append(router_deps.close)
        router, router_servicer = await create_router_server(
            ServerSettings("router", port=0, grace_period_s=0.5), telemetry, router_settings
        )
        await router_ready(router, router_servicer, router_deps)
        closers.append(lambda: router.stop(0))

        retrieval_channel = create_channel(retrieval.address)
        closers.append(retrieval_channel.close)
        documents = [
            rpb.DocumentInput(document_id=f"doc-{i}", title=title, category=category, text=text)
            for i, (title, category, text) in enumerate(CORPUS)
        ]
        request = rpb.IngestDocumentsRequest(tenant_id=TENANT, documents=documents)
        async for _ in rpb_grpc.RetrievalServiceStub(retrieval_channel).IngestDocuments(
            request, timeout=120
        ):
            pass

        channel = create_channel(router.address)
        closers.append(channel.close)
        stub = pb_grpc.RouterServiceStub(channel)

        outcomes: dict[str, dict[str, int]] = {}

        def ask(mode: pb.AskMode.ValueType) -> Callable[[str], Awaitable[Any]]:
            async def call(question: str) -> Any:
                response = await stub.Ask(
                    pb.AskRequest(tenant_id=TENANT, question=question, mode=mode), timeout=30
                )
                seen = outcomes.setdefault(pb.AskMode.Name(mode), {})
                name = pb.AnswerOutcome.Name(response.answer.outcome)
                seen[name] = seen.get(name, 0) + 1
                return response

            return call

        async def first_event(question: str) -> Any:
            stream = stub.StreamAsk(
                pb.StreamAskRequest(tenant_id=TENANT, question=question), timeout=30
            )
            first = await stream.read()
            first_events.append((time.perf_counter() - sent[-1]) * 1000)
            async for _ in stream:
                pass
            return first

        sent: list[float] = []
        first_events: list[float] = []

        async def timed_first_event(question: str) -> Any:
            sent.append(time.perf_counter())
            return await first_event(question)

        results: dict[str, Any] = {"requests": n, "provider": "deterministic"}
        results["retrieve"] = _dist(
            await _measure(n, RETRIEVE_QUESTIONS, ask(pb.ASK_MODE_RETRIEVE))
        )
        results["agentic"] = _dist(await _measure(n, AGENTIC_QUESTIONS, ask(pb.ASK_MODE_AGENTIC)))
        sample = await stub.Ask(
            pb.AskRequest(tenant_id=TENANT, question=COMPOUND_QUESTIONS[0]), timeout=30
        )
        results["auto_two_step_plan"] = [pb.Tool.Name(s.tool) for s in sample.answer.plan.steps]
        results["auto_two_step"] = _dist(
            await _measure(n, COMPOUND_QUESTIONS, ask(pb.ASK_MODE_AUTO))
        )
        await _measure(n, COMPOUND_QUESTIONS, timed_first_event)
        results["first_event"] = _dist(first_events[len(COMPOUND_QUESTIONS) :])
        results["outcomes"] = outcomes
        return results
    finally:
        for closer in reversed(closers):
            await closer()
        await database.close()
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch))
            )
        telemetry.shutdown()


def render(results: dict[str, Any]) -> str:
    """The table printed on stdout."""
    lines = [
        f"router latency through gRPC ({results['provider']} provider, "
        f"{results['requests']} requests per row)",
        f"{'case':<16}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'target p50':>12}{'':>6}",
    ]
    for key, label in (
        ("retrieve", "RETRIEVE"),
        ("agentic", "AGENTIC"),
        ("auto_two_step", "AUTO two-step"),
        ("first_event", "first event"),
    ):
        row = results[key]
        target = TARGETS_MS[key]
        verdict = "ok" if row["p50_ms"] <= target else "MISS"
        lines.append(
            f"{label:<16}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}{row['p99_ms']:>10.1f}"
            f"{target:>12.0f}{verdict:>6}"
        )
    lines.append(f"AUTO two-step plan: {' + '.join(results['auto_two_step_plan'])}")
    for mode, counts in results["outcomes"].items():
        lines.append(f"outcomes {mode}: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    return "\n".join(lines)


def main(out: Path = Path("bench-results/router.json"), *, requests: int = 50) -> dict[str, Any]:
    """Run the benchmark, print the table, write JSON to ``out``."""
    results = asyncio.run(_run(requests))
    print(render(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return results
