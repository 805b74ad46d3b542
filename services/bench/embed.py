"""``tandem bench embed``: embedding throughput and latency, in-process versus gRPC.

Everything is measured in one run on one machine so the comparisons are side by side:
passages/s at batch 1, 8, 64 (model alone vs through a loopback gRPC server), single-query
latency on cache miss and hit, and 32 concurrent single-query clients with and without
micro-batching.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from services.common import ServerSettings, Telemetry, TelemetrySettings, create_channel
from services.embedding import (
    Embedder,
    EmbeddingDeps,
    EmbeddingSettings,
    create_engine,
    create_server,
    ready,
)
from tandem.v1 import embedding_service_pb2 as pb
from tandem.v1 import embedding_service_pb2_grpc as pb_grpc

_TOPICS = ["renewal", "pricing", "onboarding", "security review", "churn risk", "expansion"]
_SECTORS = ["healthcare", "logistics", "retail", "fintech", "manufacturing", "education"]


def passages(count: int, seed: int = 7) -> list[str]:
    """Deterministic CRM-like passages of roughly 40-60 words."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        topic = _TOPICS[int(rng.integers(len(_TOPICS)))]
        sector = _SECTORS[int(rng.integers(len(_SECTORS)))]
        out.append(
            f"Account {i} in {sector} discussed {topic} on the quarterly call. The champion "
            f"asked for a revised proposal covering {int(rng.integers(20, 400))} seats, "
            f"integration with their data warehouse, and a security questionnaire before "
            f"the {topic} decision. Next step: follow-up meeting with procurement in "
            f"{int(rng.integers(1, 6))} weeks."
        )
    return out


def queries(count: int, seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        f"which {_SECTORS[int(rng.integers(6))]} accounts mention "
        f"{_TOPICS[int(rng.integers(6))]} #{i}"
        for i in range(count)
    ]


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def _dist(ms: list[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        "p50_ms": round(_pct(ms, 50), 3),
        "p95_ms": round(_pct(ms, 95), 3),
        "p99_ms": round(_pct(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else float("nan"),
    }


async def _run(settings: EmbeddingSettings, n_passages: int, n_queries: int) -> dict[str, Any]:
    model = await asyncio.to_thread(Embedder.from_settings, settings)
    corpus = passages(n_passages)
    results: dict[str, Any] = {"model": model.name, "dim": model.dim, "passages": n_passages}

    # 1. Model alone, in-process, by batch size.
    model.embed_passages(corpus[:8])  # warm the session
    in_process: dict[int, float] = {}
    for batch in (1, 8, 64):
        started = time.perf_counter()
        for i in range(0, len(corpus), batch):
            model.embed_passages(corpus[i : i + batch])
        in_process[batch] = len(corpus) / (time.perf_counter() - started)

    telemetry = Telemetry(TelemetrySettings("bench-embedding"))
    server_settings = ServerSettings("embedding", port=0, grace_period_s=1.0)

    async def serve_with(cfg: EmbeddingSettings) -> tuple[Any, Any]:
        engine = create_engine(cfg, model)
        server, servicer = await create_server(server_settings, telemetry)
        await ready(server, servicer, EmbeddingDeps(engine))
        return server, engine

    server, engine = await serve_with(settings)
    through_grpc: dict[int, float] = {}
    async with create_channel(server.address) as channel:
        stub = pb_grpc.EmbeddingServiceStub(channel)
        for batch in (1, 8, 64):
            started = time.perf_counter()
            for i in range(0, len(corpus), batch):
                await stub.Embed(
                    pb.EmbedRequest(texts=corpus[i : i + batch], input_type=pb.INPUT_TYPE_PASSAGE),
                    timeout=60,
                )
            through_grpc[batch] = len(corpus) / (time.perf_counter() - started)

        # 2. Single query latency: misses (unique texts) then hits (a repeated text).
        miss_ms, hit_ms = [], []
        for text in queries(n_queries):
            started = time.perf_counter()
            await stub.Embed(pb.EmbedRequest(texts=[text], input_type=pb.INPUT_TYPE_QUERY))
            miss_ms.append((time.perf_counter() - started) * 1000)
        hot = queries(1, seed=99)[0]
        await stub.Embed(pb.EmbedRequest(texts=[hot], input_type=pb.INPUT_TYPE_QUERY))
        for _ in range(n_queries):
            started = time.perf_counter()
            reply = await stub.Embed(pb.EmbedRequest(texts=[hot], input_type=pb.INPUT_TYPE_QUERY))
            hit_ms.append((time.perf_counter() - started) * 1000)
            assert reply.cache_hits == 1
    await server.stop(0)
    await engine.close()

    # 3. 32 concurrent single-query clients, with and without coalescing (cache misses).
    concurrency: dict[str, Any] = {}
    for label, cfg in (
        ("coalescing", replace(settings, cache_size=0)),
        (
            "no_coalescing",
            replace(settings, cache_size=0, coalesce_max_batch=1, coalesce_wait_ms=0.0),
        ),
    ):
        server, engine = await serve_with(cfg)
        concurrency[label] = await _concurrent_clients(server.address, 32, n_queries // 8, label)
        concurrency[label]["model_calls"] = engine.stats().batcher.batches
        await server.stop(0)
        await engine.close()
    telemetry.shutdown()

    results["throughput_passages_per_s"] = {
        str(b): {
            "in_process": round(in_process[b], 1),
            "grpc": round(through_grpc[b], 1),
            "grpc_overhead_pct": round((1 - through_grpc[b] / in_process[b]) * 100, 1),
        }
        for b in (1, 8, 64)
    }
    results["single_query"] = {"cache_miss": _dist(miss_ms), "cache_hit": _dist(hit_ms)}
    results["concurrent_32_clients"] = concurrency
    results["coalescing_speedup"] = round(
        concurrency["coalescing"]["queries_per_s"] / concurrency["no_coalescing"]["queries_per_s"],
        2,
    )
    return results


async def _concurrent_clients(
    address: str, clients: int, per_client: int, seed_label: str
) -> dict[str, Any]:
    """``clients`` callers each sending ``per_client`` unique single-text queries."""
    per_client = max(1, per_client)
    texts = queries(clients * per_client, seed=sum(map(ord, seed_label)))
    latencies: list[float] = []
    async with create_channel(address) as channel:
        stub = pb_grpc.EmbeddingServiceStub(channel)

        async def client(offset: int) -> None:
            for j in range(per_client):
                request = pb.EmbedRequest(
                    texts=[texts[offset * per_client + j]], input_type=pb.INPUT_TYPE_QUERY
                )
                started = time.perf_counter()
                await stub.Embed(request, timeout=60)
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "queries_per_s": round(clients * per_client / elapsed, 1),
        "latency": _dist(latencies),
    }


def render(results: dict[str, Any]) -> str:
    lines = [f"embedding benchmark — model {results['model']} ({results['dim']}-d)", ""]
    lines.append(f"{'batch':>5} {'in-process/s':>13} {'gRPC/s':>9} {'overhead':>9}")
    for batch, row in results["throughput_passages_per_s"].items():
        lines.append(
            f"{batch:>5} {row['in_process']:>13.1f} {row['grpc']:>9.1f} "
            f"{row['grpc_overhead_pct']:>8.1f}%"
        )
    lines += ["", f"{'single query':<22} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"]
    for label, dist in results["single_query"].items():
        lines.append(
            f"{label:<22} {dist['p50_ms']:>8.2f} {dist['p95_ms']:>8.2f} {dist['p99_ms']:>8.2f}"
        )
    lines += ["", f"{'32 clients':<22} {'q/s':>8} {'calls':>8} {'p50 ms':>8} {'p99 ms':>8}"]
    for label, row in results["concurrent_32_clients"].items():
        lat = row["latency"]
        lines.append(
            f"{label:<22} {row['queries_per_s']:>8.1f} {row['model_calls']:>8} "
            f"{lat['p50_ms']:>8.2f} {lat['p99_ms']:>8.2f}"
        )
    lines.append(f"coalescing speed-up: {results['coalescing_speedup']}x")
    return "\n".join(lines)


def main(out: Path, n_passages: int = 512, n_queries: int = 200) -> dict[str, Any]:
    """Run the benchmark, print the table, write JSON to ``out``."""
    settings = EmbeddingSettings.from_env()
    results = asyncio.run(_run(settings, n_passages, n_queries))
    print(render(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return results
