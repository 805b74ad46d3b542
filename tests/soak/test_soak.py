"""Soak: mixed load through the edge and the gateway on the whole stack as processes,
while the memory, open file descriptors and database connections of every process are
sampled; after a warm-up they must stay flat. ``make test-soak`` runs it (``-m soak``;
``make test`` skips it). Ten minutes by default; ``SOAK_DURATION_S`` / ``SOAK_WARMUP_S``
/ ``SOAK_SAMPLE_S`` shorten it for a quick run. The curves' start and end values (and
every sample) go to ``bench-results/soak.json`` and are printed.

Flat means, over the samples after the warm-up:
- resident memory of each service: the slope of a least-squares line through the
  samples at most ``MEMORY_SLOPE_MB_PER_MIN`` (a leak grows with requests served, here
  about 40 a second; measured 0.0-0.3 MB/min);
- Postgres's private memory per process (its sum grows by ~2 MB with each backend a pool
  opens on demand, and backends are bounded below): the slope at most
  ``BACKEND_SLOPE_MB_PER_MIN`` (measured within +-0.015 MB/min);
- open file descriptors of each process: the median of the last three samples at most
  +10 over that of the first three;
- database connections (pg_stat_activity), per user, database and application: never
  above the pool that connects as them (``pool_bound``), at any sample.
The load must be healthy: every kind of call succeeded, and at most 1% failed.
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

MEMORY_SLOPE_MB_PER_MIN = 1.0
BACKEND_SLOPE_MB_PER_MIN = 0.05
FD_SLACK = 10
POOL_BOUND = 8  # DB_POOL_MAX_SIZE's default: each service's pool on the Tandem database
# The SQL service reads the warehouse through its own pool (SQL_POOL_MAX_SIZE, 4), and
# loads a catalog on a connection of its own.
WAREHOUSE_READER = "tandem_reader@tandem_warehouse/tandem-sql"
WAREHOUSE_BOUND = 4 + 1

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
        out["postgres"] = {
            "private_mb": private,
            "private_mb_per_process": private / max(backends, 1),
            "fds": fds,
            "processes": float(backends),
        }
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


def slope_per_min(times_s: list[float], values: list[float]) -> float:
    """The least-squares slope of ``values`` over ``times_s``, per minute."""
    fitted = statistics.linear_regression(times_s, values)
    return 60.0 * fitted.slope


def pool_bound(key: str) -> int:
    """The most connections the configured pools may hold as ``key``'s user/application."""
    return WAREHOUSE_BOUND if key == WAREHOUSE_READER else POOL_BOUND


def connection_keys(samples: list[dict[str, Any]]) -> list[str]:
    return sorted({key for sample in samples for key in sample["connections"]})


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
    times = [float(s["t_s"]) for s in warm]
    summary: dict[str, dict[str, dict[str, float]]] = {}
    problems: list[str] = []
    for process, metrics in curves.items():
        for metric, values in metrics.items():
            start, end = _median(values[:3]), _median(values[-3:])
            slope = slope_per_min(times, values)
            summary.setdefault(process, {})[metric] = {
                "start": round(start, 1),
                "end": round(end, 1),
                "max": round(max(values), 1),
                "slope_per_min": round(slope, 3),
            }
            if metric == "rss_mb" and slope > MEMORY_SLOPE_MB_PER_MIN:
                problems.append(f"{process} {metric}: {slope:+.2f} MB/min")
            if metric == "private_mb_per_process" and slope > BACKEND_SLOPE_MB_PER_MIN:
                problems.append(f"{process} {metric}: {slope:+.3f} MB/min")
            if metric == "fds" and process != "postgres" and end > start + FD_SLACK:
                problems.append(f"{process} fds: {start:.0f} -> {end:.0f}")
    # Connections at every sample, warm-up included: a pool never exceeds its bound.
    for key, values in _curves(samples)["db_connections"].items():
        bound = (
            sum(map(pool_bound, connection_keys(samples))) if key == "total" else pool_bound(key)
        )
        if max(values) > bound:
            problems.append(f"db connections {key}: peaked at {max(values):.0f} > {bound}")
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
            "memory": f"slope <= {MEMORY_SLOPE_MB_PER_MIN} MB/min a service, "
            f"<= {BACKEND_SLOPE_MB_PER_MIN} MB/min a Postgres process",
            "fds": f"+{FD_SLACK}",
            "db_connections": f"<= {POOL_BOUND} per pool ({WAREHOUSE_BOUND} for the warehouse)",
        },
        "start_end": summary,
        "samples": samples,
    }
    RESULT_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULT_PATH.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{total} requests in {DURATION_S + WARMUP_S:.0f}s; failures: {failures or 'none'}")
    print("| process | metric | start | end | max | slope/min |\n|---|---|---|---|---|---|")
    for process, by_metric in summary.items():
        for metric, v in by_metric.items():
            print(
                f"| {process} | {metric} | {v['start']} | {v['end']} | {v['max']} "
                f"| {v['slope_per_min']} |"
            )

    assert not problems, problems
    # The load was real and healthy: every kind succeeded, and almost nothing failed.
    assert {k.split(":")[0] for k, n in load.outcomes.items() if k.endswith(":OK") and n} >= {
        "ask",
        "search",
        "ask_sql",
        "intent",
        "validate",
        "describe",
        "ingest_delete",
    }
    assert sum(failures.values()) <= 0.01 * total, failures
