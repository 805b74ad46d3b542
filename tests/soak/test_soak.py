"""Soak: mixed load through the edge and the gateway on the whole stack as processes,
while the memory, open file descriptors and database connections of every process are
sampled; after a warm-up they must stay flat. ``make test-soak`` runs it (``-m soak``;
``make test`` skips it). Ten minutes by default; ``SOAK_DURATION_S`` / ``SOAK_WARMUP_S``
/ ``SOAK_SAMPLE_S`` shorten it for a quick run. The curves' start and end values (and
every sample) go to ``bench-results/soak.json`` and are printed.

Flat means, comparing the median of the first three samples after the warm-up with the
median of the last three:
- resident memory of each service: at most +20% and +30 MB (Python's allocator keeps
  freed arenas, so small steps are not leaks; a leak grows with requests served);
- Postgres private memory (USS, summed over its processes): at most +20% and +30 MB;
- open file descriptors of each process: at most +10;
- database connections (pg_stat_activity), per user and application: at most +2, and
  never above the pool bounds.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psutil
import psycopg
import pytest

from services.bench.ingest_memory import postgres_private_bytes
from services.demo import generate_documents
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tests.processes import REPO_ROOT, ProcessStack

DURATION_S = float(os.environ.get("SOAK_DURATION_S", "600"))
WARMUP_S = float(os.environ.get("SOAK_WARMUP_S", str(min(60.0, DURATION_S / 4))))
SAMPLE_S = float(os.environ.get("SOAK_SAMPLE_S", "5"))
WORKERS = int(os.environ.get("SOAK_WORKERS", "4"))
# Each worker's pause between calls: a steady load the shared 2-core machine sustains.
PAUSE_S = float(os.environ.get("SOAK_PAUSE_S", "0.05"))
RESULT_PATH = REPO_ROOT / "bench-results" / "soak.json"

RSS_GROWTH = 0.20
RSS_SLACK_MB = 30.0
FD_SLACK = 10
CONNECTION_SLACK = 2
POOL_BOUND = 8  # DB_POOL_MAX_SIZE default per process and database

pytestmark = [pytest.mark.soak, pytest.mark.timeout(int(DURATION_S + WARMUP_S + 900))]

TENANT = "soak"
SERVICES = ("embedding", "retrieval", "sql", "router", "gateway", "edge")
# Sampled with their children: the edge is a small supervisor plus nginx's master/worker.
TREES = frozenset({"edge"})


# -- sampling -------------------------------------------------------------------------


def _tree(pid: int) -> list[psutil.Process]:
    proc = psutil.Process(pid)
    return [proc, *proc.children(recursive=True)]


def sample_processes(stack: ProcessStack) -> dict[str, dict[str, float]]:
    """RSS (MB) and open fds of each service; private memory outside the shared segment
    (MB) and fds summed over Postgres (``postgres_private_bytes`` says why not USS)."""
    out: dict[str, dict[str, float]] = {}
    for name in SERVICES:
        pid = stack.pid(name)
        if pid is None:
            continue
        procs = _tree(pid) if name in TREES else [psutil.Process(pid)]
        out[name] = {
            "rss_mb": sum(p.memory_info().rss for p in procs) / 2**20,
            "fds": float(sum(p.num_fds() for p in procs)),
        }
    pid = stack.pid("postgres")
    if pid is not None:
        private = postgres_private_bytes(pid) / 2**20
        fds = 0.0
        backends = 0
        for proc in _tree(pid):
            try:
                fds += proc.num_fds()
                backends += 1
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        out["postgres"] = {"private_mb": private, "fds": fds, "processes": float(backends)}
    return out


async def sample_connections(stack: ProcessStack) -> dict[str, float]:
    """Client connections by user/database/application (pg_stat_activity)."""
    async with await psycopg.AsyncConnection.connect(stack.database_url()) as conn:
        cur = await conn.execute(
            "SELECT coalesce(usename, '?') || '@' || coalesce(datname, '?') || "
            "coalesce('/' || nullif(application_name, ''), ''), count(*) "
            "FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid() GROUP BY 1"
        )
        return {str(key): float(count) for key, count in await cur.fetchall()}


# -- load -----------------------------------------------------------------------------


@dataclass
class Load:
    """What the load generator sent and how each call ended."""

    outcomes: Counter[str] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=dict)

    def record(self, kind: str, outcome: str, seconds: float) -> None:
        self.outcomes[f"{kind}:{outcome}"] += 1
        self.latencies.setdefault(kind, []).append(seconds)


def _operations(
    stub: gpb_grpc.GatewayServiceAsyncStub, metadata: tuple[tuple[str, str], ...]
) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    async def ask() -> Any:
        return await stub.Ask(
            gpb.GatewayServiceAskRequest(
                question="Which accounts look like a good fit for healthcare analytics?"
            ),
            metadata=metadata,
            timeout=30,
        )

    async def ask_compound() -> Any:
        return await stub.Ask(
            gpb.GatewayServiceAskRequest(
                question="How many opportunities are in Negotiation, and what did customers "
                "say about onboarding?",
                options=qpb.AskOptions(include_trajectory=True),
            ),
            metadata=metadata,
            timeout=30,
        )

    async def stream_ask() -> Any:
        request = gpb.GatewayServiceStreamAskRequest(
            question="What did customers say about pricing?"
        )
        return [e async for e in stub.StreamAsk(request, metadata=metadata, timeout=30)]

    async def search() -> Any:
        return await stub.Search(
            gpb.GatewayServiceSearchRequest(query="onboarding delays data migration", top_k=5),
            metadata=metadata,
            timeout=30,
        )

    async def ask_sql() -> Any:
        return await stub.AskSql(
            gpb.GatewayServiceAskSqlRequest(question="top 5 opportunities by amount"),
            metadata=metadata,
            timeout=30,
        )

    async def intent() -> Any:
        return await stub.RunSqlIntent(
            gpb.GatewayServiceRunSqlIntentRequest(
                intent=spb.SqlIntent(kind=spb.INTENT_KIND_COUNT, table="companies")
            ),
            metadata=metadata,
            timeout=30,
        )

    async def validate() -> Any:
        return await stub.ValidateSql(
            gpb.GatewayServiceValidateSqlRequest(sql="SELECT name FROM companies LIMIT 5"),
            metadata=metadata,
            timeout=30,
        )

    async def describe() -> Any:
        return await stub.DescribeSchema(
            gpb.GatewayServiceDescribeSchemaRequest(), metadata=metadata, timeout=30
        )

    async def ingest_and_delete() -> Any:
        document_id = f"soak-{uuid.uuid4().hex[:12]}"
        document = rpb.DocumentInput(
            document_id=document_id,
            title="Soak note",
            category="call_notes",
            text="A short call note written during the soak test about renewal timing. " * 5,
        )
        events = [
            e
            async for e in stub.IngestDocuments(
                gpb.GatewayServiceIngestDocumentsRequest(documents=[document]),
                metadata=metadata,
                timeout=60,
            )
        ]
        await stub.DeleteDocument(
            gpb.GatewayServiceDeleteDocumentRequest(document_id=document_id),
            metadata=metadata,
            timeout=30,
        )
        return events

    # Weighted by repetition: reads dominate, as in a product backend.
    return [
        ("ask", ask),
        ("ask_compound", ask_compound),
        ("stream_ask", stream_ask),
        ("search", search),
        ("search", search),
        ("ask_sql", ask_sql),
        ("intent", intent),
        ("validate", validate),
        ("describe", describe),
        ("ingest_delete", ingest_and_delete),
    ]


async def run_load(
    stub: gpb_grpc.GatewayServiceAsyncStub,
    metadata: tuple[tuple[str, str], ...],
    until: float,
    load: Load,
) -> None:
    operations = _operations(stub, metadata)

    async def worker(offset: int) -> None:
        index = offset
        while time.monotonic() < until:
            kind, call = operations[index % len(operations)]
            index += 1
            started = time.monotonic()
            try:
                await call()
                outcome = "OK"
            except grpc.aio.AioRpcError as exc:
                outcome = exc.code().name
            load.record(kind, outcome, time.monotonic() - started)
            await asyncio.sleep(PAUSE_S)

    await asyncio.gather(*(worker(i * 3) for i in range(WORKERS)))


# -- the test -------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _curves(samples: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    curves: dict[str, dict[str, list[float]]] = {}
    for sample in samples:
        for process, values in sample["processes"].items():
            for metric, value in values.items():
                curves.setdefault(process, {}).setdefault(metric, []).append(value)
    keys = sorted({key for sample in samples for key in sample["connections"]})
    curves["db_connections"] = {
        key: [sample["connections"].get(key, 0.0) for sample in samples] for key in keys
    }
    curves["db_connections"]["total"] = [sum(s["connections"].values()) for s in samples]
    return curves


async def test_memory_fds_and_connections_stay_flat_under_mixed_load(tmp_path: Path) -> None:
    stack = ProcessStack(
        tmp_path / "stack",
        service_env={
            name: {"GATEWAY_RATE_PER_S": "1000", "GATEWAY_BURST": "1000"}
            for name in ("gateway", "edge")
        },
    )
    await asyncio.to_thread(stack.start)
    try:
        corpus = generate_documents(accounts=12)
        report = await asyncio.to_thread(stack.load_demo_documents, TENANT, corpus.documents)
        key = await asyncio.to_thread(stack.create_key, TENANT)
        metadata = (("authorization", f"Bearer {key}"),)
        load = Load()
        samples: list[dict[str, Any]] = []
        started = time.monotonic()
        until = started + WARMUP_S + DURATION_S
        async with grpc.aio.insecure_channel(stack.edge_address) as channel:
            stub = gpb_grpc.GatewayServiceStub(channel)
            load_task = asyncio.create_task(run_load(stub, metadata, until, load))
            while not load_task.done():
                elapsed = time.monotonic() - started
                samples.append(
                    {
                        "t_s": round(elapsed, 1),
                        "warm": elapsed >= WARMUP_S,
                        "requests": sum(load.outcomes.values()),
                        "processes": await asyncio.to_thread(sample_processes, stack),
                        "connections": await sample_connections(stack),
                    }
                )
                await asyncio.wait({load_task}, timeout=SAMPLE_S)
            await load_task
        assert all(stack.is_running(name) for name in SERVICES)
    finally:
        await asyncio.to_thread(stack.close)

    warm = [s for s in samples if s["warm"]]
    assert len(warm) >= 6, f"too few samples after the warm-up: {len(warm)}"
    curves = _curves(warm)
    summary: dict[str, dict[str, dict[str, float]]] = {}
    problems: list[str] = []
    for process, metrics in curves.items():
        for metric, values in metrics.items():
            start, end = _median(values[:3]), _median(values[-3:])
            summary.setdefault(process, {})[metric] = {
                "start": round(start, 1),
                "end": round(end, 1),
                "max": round(max(values), 1),
            }
            if metric in ("rss_mb", "private_mb") and end > start * (1 + RSS_GROWTH) + RSS_SLACK_MB:
                problems.append(f"{process} {metric}: {start:.1f} -> {end:.1f}")
            if metric == "fds" and process != "postgres" and end > start + FD_SLACK:
                problems.append(f"{process} fds: {start:.0f} -> {end:.0f}")
            if process == "db_connections":
                # Pools grow on demand up to their bound; the total gets each pool's slack.
                pools = len(metrics) - 1 if metric == "total" else 1
                if end > start + CONNECTION_SLACK * pools:
                    problems.append(f"db connections {metric}: {start:.0f} -> {end:.0f}")
                if max(values) > POOL_BOUND * 2 * pools:
                    problems.append(f"db connections {metric}: peaked at {max(values):.0f}")
    total = sum(load.outcomes.values())
    failures = {k: v for k, v in load.outcomes.items() if not k.endswith(":OK")}
    result = {
        "duration_s": DURATION_S,
        "warmup_s": WARMUP_S,
        "sample_s": SAMPLE_S,
        "workers": WORKERS,
        "documents_loaded": report.documents,
        "requests": total,
        "requests_per_s": round(total / (DURATION_S + WARMUP_S), 1),
        "outcomes": dict(sorted(load.outcomes.items())),
        "latency_p50_ms": {
            k: round(1000 * _median(v), 1) for k, v in sorted(load.latencies.items())
        },
        "tolerances": {
            "memory": f"+{RSS_GROWTH:.0%} and +{RSS_SLACK_MB:.0f} MB",
            "fds": f"+{FD_SLACK}",
            "db_connections": f"+{CONNECTION_SLACK}",
        },
        "start_end": summary,
        "samples": samples,
    }
    RESULT_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULT_PATH.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{total} requests in {DURATION_S + WARMUP_S:.0f}s; failures: {failures or 'none'}")
    print("| process | metric | start | end | max |\n|---|---|---|---|---|")
    for process, by_metric in summary.items():
        for metric, value in by_metric.items():
            print(f"| {process} | {metric} | {value['start']} | {value['end']} | {value['max']} |")

    assert not problems, problems
    # The load was real and healthy: every kind ran, and almost nothing failed.
    assert {k.split(":")[0] for k in load.outcomes} >= {
        "ask",
        "search",
        "ask_sql",
        "intent",
        "validate",
        "describe",
        "ingest_delete",
    }
    assert sum(failures.values()) <= 0.01 * total, failures
