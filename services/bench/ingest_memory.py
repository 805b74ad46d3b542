"""``tandem bench ingest-memory``: resident memory over a long ingest.

Streams ``documents`` short CRM documents through IngestDocuments in batches (the real
gRPC path: redaction, chunking, embedding through the embedding service, COPY) into a
scratch database, and samples after every batch the resident set size of this process
(which hosts the embedding model, the embedding server and the retrieval server) and of
the embedded Postgres's processes (private memory, see ``postgres_private_bytes``). "Flat"
means the last tenth of the run holds no more than the first tenth plus a small
allowance: a leak grows with documents, a warm-up does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from services.bench.embed import passages
from services.bench.retrieval import ingest_stack
from services.common import Database, DatabaseSettings, ensure_tenant, resolve_url
from services.embedding import Embedder, EmbeddingSettings
from services.retrieval import RetrievalSettings, prepare_store
from tandem.v1 import retrieval_service_pb2 as pb

_TENANT = "bench-memory"
_MIB = 1024 * 1024
# How Postgres's shared memory shows in /proc/<pid>/smaps (mmap of /dev/zero, SysV, POSIX).
_SHARED_SEGMENTS = ("/dev/zero", "/SYSV", "/dev/shm", "/PostgreSQL")


def postgres_private_bytes(postmaster_pid: int) -> int:
    """Private memory of a postmaster and all its children, outside the shared segment.

    RSS counts the shared buffer pool once per backend that touched it, and even USS
    counts a buffer page touched by one process only as that process's "private" page,
    so both grow as the pool fills (bounded by ``shared_buffers``). A leak lives in the
    heap and anonymous mappings: those are summed, the shared segment is not.
    """
    root = psutil.Process(postmaster_pid)
    total = 0
    for process in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            for mapping in process.memory_maps(grouped=True):
                if not mapping.path.startswith(_SHARED_SEGMENTS):
                    total += mapping.private_clean + mapping.private_dirty
    return total


def _postmaster_of(backend_pid: int) -> int:
    backend = psutil.Process(backend_pid)
    parent = backend.parent()
    return parent.pid if parent is not None else backend_pid


def _summary(samples: list[dict[str, float]], key: str) -> dict[str, float]:
    tenth = max(1, len(samples) // 10)
    first = statistics.fmean(s[key] for s in samples[:tenth])
    last = statistics.fmean(s[key] for s in samples[-tenth:])
    return {
        "first_tenth_mib": round(first, 1),
        "last_tenth_mib": round(last, 1),
        "peak_mib": round(max(s[key] for s in samples), 1),
        "growth_mib": round(last - first, 1),
        "growth_pct": round(100 * (last - first) / first, 1),
    }


async def _run(documents: int, batch: int) -> dict[str, Any]:
    embedding_settings = EmbeddingSettings.from_env()
    settings = RetrievalSettings.from_env()
    db_settings = DatabaseSettings.from_env()
    model = await asyncio.to_thread(Embedder.from_settings, embedding_settings)
    server_url = await asyncio.to_thread(resolve_url, db_settings)
    scratch = f"tandem_bench_mem_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    database = Database(make_conninfo(server_url, dbname=scratch), min_size=1, max_size=4)
    this = psutil.Process(os.getpid())
    base = passages(600, seed=53)
    samples: list[dict[str, float]] = []
    written = 0
    started = time.perf_counter()
    try:
        await prepare_store(database, settings, embedded=db_settings.url is None)
        async with database.connection() as conn:
            cur = await conn.execute("SELECT pg_backend_pid()")
            row = await cur.fetchone()
            assert row is not None
            postmaster = _postmaster_of(int(row[0]))
            await ensure_tenant(conn, _TENANT)
        async with ingest_stack(database, settings, model, embedding_settings) as stub:
            for offset in range(0, documents, batch):
                request = pb.IngestDocumentsRequest(
                    tenant_id=_TENANT,
                    documents=[
                        pb.DocumentInput(
                            document_id=f"mem-{i}",
                            title=f"Account note {i}",
                            text=f"{base[i % len(base)]} Reference MEM-{i:06d}.",
                        )
                        for i in range(offset, min(offset + batch, documents))
                    ],
                )
                async for event in stub.IngestDocuments(request, timeout=600):
                    if event.HasField("summary"):
                        written += event.summary.chunks_written
                samples.append(
                    {
                        "documents": min(offset + batch, documents),
                        "elapsed_s": round(time.perf_counter() - started, 1),
                        "process_mib": this.memory_info().rss / _MIB,
                        "postgres_mib": postgres_private_bytes(postmaster) / _MIB,
                    }
                )
    finally:
        await database.close()
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch))
            )
    elapsed = time.perf_counter() - started
    return {
        "documents": documents,
        "batch": batch,
        "chunks_written": written,
        "elapsed_s": round(elapsed, 1),
        "documents_per_s": round(documents / elapsed, 1),
        "process": _summary(samples, "process_mib"),
        "postgres": _summary(samples, "postgres_mib"),
        "samples": samples,
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        f"ingest memory — {results['documents']} documents in batches of {results['batch']}, "
        f"{results['chunks_written']} chunks, {results['elapsed_s']} s "
        f"({results['documents_per_s']} documents/s)",
        "",
        f"{'memory (MiB)':<34}{'first 10%':>10}{'last 10%':>10}{'peak':>8}{'growth':>9}",
    ]
    for label, key in (
        ("tandem (model + both servers)", "process"),
        ("postgres (private, all processes)", "postgres"),
    ):
        row = results[key]
        lines.append(
            f"{label:<34}{row['first_tenth_mib']:>10.1f}{row['last_tenth_mib']:>10.1f}"
            f"{row['peak_mib']:>8.1f}{row['growth_pct']:>8.1f}%"
        )
    return "\n".join(lines)


def main(out: Path, documents: int = 10_000, batch: int = 100) -> dict[str, Any]:
    """Run the ingest, print the table, write JSON (with every sample) to ``out``."""
    results = asyncio.run(_run(documents, batch))
    print(render(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return results
