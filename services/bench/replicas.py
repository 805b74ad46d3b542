"""``tandem bench replicas``: what a streaming standby adds to Search capacity.

Issue 51's target: a read replica adds at least 1.6x search throughput on two nodes'
worth of CPU, measured by CPU per request. On a shared machine wall-clock throughput is
noise; Postgres CPU per Search on each node is not. A node saturates when its CPU does,
so the capacity of a setup is set by its busiest node: ``1 / max(CPU ms per Search on
any node)``, and the ratio of the two setups' capacities is the throughput a standby
adds.

A private pair, as ``tandem run --pg-standby`` runs it (``services.pgha``: the
embedded primary and its synchronous standby; services connect through its multi-host
writer and reader conninfos); a corpus (``--chunks``, vectors derived from real passages
embedded by the real model, as ``tandem bench retrieval`` builds them); the same hybrid
searches run through the retrieval repository — the service's own statement, pool and
read routing — at a fixed concurrency, in alternating rounds:

- ``primary``: reads on the primary only (no ``DATABASE_READ_URL``: today's setup);
- ``replicated``: reads routed by ``ReadRouting`` over the primary and the standby.

Each round reads ``/proc`` CPU of every process under each node's postmaster (backends,
WAL sender and receiver, replay), so replication's own cost is in the figure.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from services.bench._proc import (
    LinuxProc,
    StackProcesses,
    clock_ticks_per_s,
    cpu_delta,
)
from services.bench._publish import publish
from services.bench.embed import passages, queries
from services.bench.pg_pair import PgPair, start_pair
from services.bench.retrieval import derive_vectors, load_corpus
from services.common import Database, ReadRouting, embedded_pgvector_is_portable
from services.embedding import Embedder, EmbeddingSettings
from services.retrieval import (
    RetrievalRepository,
    RetrievalSettings,
    SearchMode,
    app_read_conninfo,
    cpu_flags,
    open_database,
    search_plan,
)

TENANT = "bench"
TARGET_RATIO = 1.6
SETUPS = ("primary", "replicated")


async def _searches(
    repository: RetrievalRepository, plans: Sequence[Any], concurrency: int
) -> float:
    """Run every plan once, ``concurrency`` at a time; returns wall seconds."""
    queue = list(plans)
    started = time.perf_counter()

    async def worker() -> None:
        while queue:
            await repository.search(queue.pop())

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def _node_cpu(roots: dict[str, int]) -> dict[str, dict[int, tuple[str, int]]]:
    proc = LinuxProc()
    return {node: StackProcesses((pid,)).snapshot(proc) for node, pid in roots.items()}


async def _round(
    repository: RetrievalRepository,
    plans: Sequence[Any],
    concurrency: int,
    roots: dict[str, int],
) -> dict[str, Any]:
    before = _node_cpu(roots)
    wall_s = await _searches(repository, plans, concurrency)
    after = _node_cpu(roots)
    ticks = clock_ticks_per_s()
    cpu_ms = {
        node: 1000 * sum(cpu_delta(before[node], after[node], ticks).values()) / len(plans)
        for node in roots
    }
    return {"searches": len(plans), "wall_s": round(wall_s, 2), "cpu_ms_per_search": cpu_ms}


async def _run(
    pair: PgPair, chunks: int, searches: int, concurrency: int, rounds: int
) -> dict[str, Any]:
    settings = RetrievalSettings.from_env()
    model = await asyncio.to_thread(Embedder.from_settings, EmbeddingSettings.from_env())
    hnsw = settings.hnsw_enabled(
        embedded_database=True,
        cpu_flags=cpu_flags(),
        portable_pgvector=embedded_pgvector_is_portable(),
    )
    # Loaded without the index, which is then built in one go (as ``tandem bench
    # retrieval`` does): inserting into a graph row by row is slower, and another graph.
    no_index = RetrievalSettings(**{**settings.__dict__, "hnsw": "off"})
    database = await open_database(pair.writer_url, no_index, min_size=1, max_size=concurrency)
    owner = Database(pair.writer_url, min_size=1, max_size=1, timeout_s=30)
    await owner.pool.open(wait=True)
    standby = Database(
        app_read_conninfo(pair.reader_url), min_size=1, max_size=concurrency, timeout_s=30
    )
    replicated = ReadRouting(database, standby, max_lag_s=1.0)
    try:
        async with owner.connection() as conn:
            await conn.execute(
                "INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", (TENANT,)
            )
        base_texts = passages(500)
        base = np.asarray(await asyncio.to_thread(model.embed_passages, base_texts))
        vectors = derive_vectors(base.astype(np.float32), chunks)
        texts = [f"{base_texts[i % len(base_texts)]} Ref BX-{i:06d}." for i in range(chunks)]
        await load_corpus(owner, TENANT, texts, vectors, model.name)
        await RetrievalRepository(database).ensure_vector_index(
            enabled=hnsw, m=settings.hnsw_m, ef_construction=settings.hnsw_ef_construction
        )
        query_texts = queries(200)
        query_vectors = np.asarray(model.embed_queries(query_texts)).astype(np.float32)
        plans = [
            search_plan(
                settings,
                tenant_id=TENANT,
                mode=SearchMode.HYBRID,
                query=query_texts[i % len(query_texts)],
                vector=query_vectors[i % len(query_texts)],
                model_name=model.name,
                depth=settings.default_candidate_depth,
                limit=10,
                ef_search=settings.default_ef_search,
            )
            for i in range(searches)
        ]
        await asyncio.to_thread(pair.catch_up, 120.0)
        await replicated.open()
        await standby.pool.open(wait=True, timeout=30)
        await asyncio.sleep(4 * replicated.interval_s)
        repositories = {
            "primary": RetrievalRepository(database),
            "replicated": RetrievalRepository(database, replicated),
        }
        roots = {"primary": _pid(pair, "primary"), "standby": _pid(pair, "standby")}
        for repository in repositories.values():  # warm: plans prepared, pages cached
            await _searches(repository, plans[: 4 * concurrency], concurrency)
        measured: dict[str, list[dict[str, Any]]] = {name: [] for name in SETUPS}
        for _ in range(rounds):
            for name in SETUPS:
                measured[name].append(await _round(repositories[name], plans, concurrency, roots))
        served = dict(replicated.reads)
    finally:
        await replicated.close()
        await database.close()
        await owner.close()
    return {
        **_summary(
            measured,
            served,
            chunks=chunks,
            searches_per_round=searches,
            concurrency=concurrency,
            rounds=rounds,
        ),
        "hnsw": hnsw,
    }


def _summary(
    measured: dict[str, list[dict[str, Any]]], served: dict[str, int], **shape: int
) -> dict[str, Any]:
    setups: dict[str, Any] = {}
    for name, runs in measured.items():
        per_node = {
            node: round(statistics.median(r["cpu_ms_per_search"][node] for r in runs), 3)
            for node in ("primary", "standby")
        }
        setups[name] = {
            "cpu_ms_per_search": per_node,
            "busiest_node_cpu_ms": max(per_node.values()),
            "searches_per_cpu_s_of_busiest_node": round(1000 / max(per_node.values()), 1),
            "wall_s": [r["wall_s"] for r in runs],
        }
    ratio = setups["primary"]["busiest_node_cpu_ms"] / setups["replicated"]["busiest_node_cpu_ms"]
    return {
        **shape,
        "mode": "hybrid",
        "setups": setups,
        "replicated_reads_served": served,
        "capacity_ratio": round(ratio, 2),
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
    }


def _pid(pair: PgPair, role: str) -> int:
    pid = pair.postmaster_pid(role)
    if pid is None:
        raise RuntimeError(f"no postmaster running for the {role}")
    return pid


def render(results: dict[str, Any]) -> str:
    lines = [
        f"Search (hybrid) over {results['chunks']} chunks, c={results['concurrency']}, "
        f"{results['rounds']} x {results['searches_per_round']} searches per setup",
        f"{'setup':<12} {'primary ms':>11} {'standby ms':>11} {'busiest':>8} {'per CPU-s':>10}",
    ]
    for name, setup in results["setups"].items():
        node = setup["cpu_ms_per_search"]
        lines.append(
            f"{name:<12} {node['primary']:>11.3f} {node['standby']:>11.3f} "
            f"{setup['busiest_node_cpu_ms']:>8.3f} "
            f"{setup['searches_per_cpu_s_of_busiest_node']:>10.1f}"
        )
    lines.append(
        f"capacity ratio (replicated / primary only): {results['capacity_ratio']}x "
        f"(target >= {results['target_ratio']}x: "
        f"{'met' if results['meets_target'] else 'NOT met'}); reads served "
        f"{results['replicated_reads_served']}"
    )
    return "\n".join(lines)


def main(
    out: Path,
    *,
    chunks: int = 10_000,
    searches: int = 1000,
    concurrency: int = 8,
    rounds: int = 3,
) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="tandem-bench-replicas-"))
    pair = start_pair(root)
    try:
        results = asyncio.run(_run(pair, chunks, searches, concurrency, rounds))
    finally:
        pair.stop(remove=True)
    publish(results, render(results), out)
    return results
