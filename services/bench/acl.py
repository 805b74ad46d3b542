"""``tandem bench acl``: what document ACLs cost (issue 47, item 2).

In a scratch database on the configured Postgres (dropped at the end), through the
retrieval repository as the service's row-level-security role:

* **UpdateDocumentAcl** on a 1,000-chunk document, alternating two ACLs: p50/p99 of the
  whole transaction (the document row and its 1,000 chunk rows). Target: p99 <= 50 ms.
* **Search with and without a principal**, side by side, per mode, on the same corpus
  (a quarter of its documents restricted): the reader settings ride in the statement
  the search already sends, and the policy is one more condition per candidate row.
* **Plans**: EXPLAIN of each mode's statement under a principal; the dense side must
  still use the HNSW index when there is one, the full-text side the GIN index (never a
  sequential scan of the chunks).
* **Forbidden vs missing**: GetDocument's repository read of a document the principal
  may not read and of one that does not exist, p50 of each (the same timing class).

Vectors are random unit vectors and texts CRM-like passages (no model is loaded): what is
measured is the database's work, which does not depend on what the vectors mean.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from services.bench.embed import passages
from services.common import (
    DatabaseSettings,
    Principal,
    current_principal,
    embedded_pgvector_is_portable,
    resolve_url,
)
from services.retrieval import (
    Chunk,
    ContentType,
    DocumentAcl,
    NewDocument,
    RetrievalRepository,
    RetrievalSettings,
    SearchMode,
    cpu_flags,
    open_database,
    search_plan,
)

_TENANT = "bench-acl"
_MODEL = "bench-model"
_DIM = 384
_QUERIES = [
    "renewal discount for the enterprise plan",
    "security review of single sign-on",
    "pricing call notes about audit logs",
    "support escalation for the data export",
]
_READER = Principal.of("alice", ["sales"])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 3)


def _unit(rng: np.random.Generator, rows: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    m = rng.standard_normal((rows, _DIM)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def _document(
    document_id: str, texts: list[str], acl: DocumentAcl | None, ordinal_base: int = 0
) -> NewDocument:
    return NewDocument(
        document_id=document_id,
        title=f"Notes {document_id}",
        uri="",
        category="note",
        metadata={},
        content_type=ContentType.PLAIN_TEXT,
        content_sha256=uuid.uuid4().hex,
        fingerprint=uuid.uuid4().hex,
        char_count=sum(len(t) for t in texts),
        redactions={},
        chunks=[Chunk(ordinal_base + i, "", t) for i, t in enumerate(texts)],
        acl=acl,
    )


async def _run(chunks: int, documents: int, rounds: int) -> dict[str, Any]:
    settings = RetrievalSettings.from_env()
    db_settings = DatabaseSettings.from_env()
    embedded = db_settings.url is None
    hnsw = settings.hnsw_enabled(
        embedded_database=embedded,
        cpu_flags=cpu_flags(),
        portable_pgvector=embedded and embedded_pgvector_is_portable(),
    )
    server_url = await asyncio.to_thread(resolve_url, db_settings)
    scratch = f"tandem_bench_acl_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    url = make_conninfo(server_url, dbname=scratch)
    results: dict[str, Any] = {"hnsw": hnsw, "chunks_in_document": chunks}
    database = await open_database(url, settings, embedded=embedded, min_size=1, max_size=2)
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (_TENANT,))
        repository = RetrievalRepository(database)
        rng = np.random.default_rng(7)
        texts = passages(200)
        # The corpus: ``documents`` documents of 20 chunks, every fourth one restricted.
        for d in range(documents):
            acl = DocumentAcl.of(groups=["hr"]) if d % 4 == 0 else None
            body = [f"{texts[(d * 20 + i) % len(texts)]} ref {d}-{i}" for i in range(20)]
            await repository.write_document(
                _TENANT, _document(f"doc-{d}", body, acl), _MODEL, _unit(rng, len(body))
            )
        big = [f"{texts[i % len(texts)]} part {i}" for i in range(chunks)]
        await repository.write_document(
            _TENANT, _document("big", big, None), _MODEL, _unit(rng, len(big))
        )
        results["corpus_chunks"] = documents * 20 + chunks
        await _analyze(url)

        # UpdateDocumentAcl: the repository's transaction, as a service key.
        acls = [
            DocumentAcl.of(groups=["sales"]),
            DocumentAcl.of(principals=["alice"], groups=["hr"]),
        ]
        update_ms: list[float] = []
        for i in range(rounds):
            started = time.perf_counter()
            covered = await repository.update_acl(_TENANT, "big", acls[i % 2])
            update_ms.append((time.perf_counter() - started) * 1000)
            assert covered == chunks
        results["update_acl"] = {
            "n": rounds,
            "p50_ms": _pct(update_ms, 50),
            "p99_ms": _pct(update_ms, 99),
            "max_ms": round(max(update_ms), 3),
        }

        # Search with and without a principal, interleaved so drift hits both alike.
        vectors = _unit(rng, len(_QUERIES))
        results["search"] = {}
        for mode in SearchMode:
            timings: dict[str, list[float]] = {"service_key": [], "principal": []}
            for r in range(rounds):
                for q, text in enumerate(_QUERIES):
                    plan = search_plan(
                        settings,
                        tenant_id=_TENANT,
                        mode=mode,
                        query=text,
                        vector=vectors[q],
                        model_name=_MODEL,
                        depth=settings.default_candidate_depth,
                        limit=10,
                        ef_search=settings.default_ef_search,
                    )
                    order = ("service_key", "principal") if r % 2 else ("principal", "service_key")
                    for who in order:
                        token = current_principal.set(_READER if who == "principal" else None)
                        try:
                            started = time.perf_counter()
                            await repository.search(plan)
                            timings[who].append((time.perf_counter() - started) * 1000)
                        finally:
                            current_principal.reset(token)
            key, principal = (statistics.median(timings[k]) for k in ("service_key", "principal"))
            results["search"][mode.name.lower()] = {
                "service_key_p50_ms": round(key, 3),
                "principal_p50_ms": round(principal, 3),
                "ratio": round(principal / key, 3),
            }
        results["plans"] = await _plans(repository, settings, vectors[0])

        # Forbidden vs missing: the same read, a restricted document and an absent one.
        token = current_principal.set(Principal.of("carol"))
        try:
            reads: dict[str, list[float]] = {"forbidden": [], "missing": []}
            for i in range(rounds * 2):
                for kind, document_id in (("forbidden", "doc-0"), ("missing", f"none-{i}")):
                    started = time.perf_counter()
                    found = await repository.get_document(
                        _TENANT, document_id, include_chunks=False
                    )
                    reads[kind].append((time.perf_counter() - started) * 1000)
                    assert found is None
        finally:
            current_principal.reset(token)
        results["get_forbidden_vs_missing"] = {
            kind: {"n": len(ms), "p50_ms": _pct(ms, 50), "p99_ms": _pct(ms, 99)}
            for kind, ms in reads.items()
        }
    finally:
        await database.close()
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch))
            )
    return results


async def _analyze(url: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("ANALYZE retrieval_chunks")
        await conn.execute("ANALYZE retrieval_documents")


async def _plans(
    repository: RetrievalRepository,
    settings: RetrievalSettings,
    vector: np.ndarray[Any, np.dtype[np.float32]],
) -> dict[str, list[str]]:
    """Each mode's plan nodes over retrieval_chunks, as the service runs the statement
    under a principal (the full-text candidates run inside their function, whose index
    use tests/integration/retrieval/test_full_text_index.py checks)."""
    out: dict[str, list[str]] = {}
    token = current_principal.set(_READER)
    try:
        for mode in SearchMode:
            plan = search_plan(
                settings,
                tenant_id=_TENANT,
                mode=mode,
                query=_QUERIES[0],
                vector=vector,
                model_name=_MODEL,
                depth=settings.default_candidate_depth,
                limit=10,
                ef_search=settings.default_ef_search,
            )
            explained = await repository.explain_search(plan)
            nodes: list[str] = []
            _walk(explained[0]["Plan"], nodes)
            out[mode.name.lower()] = sorted(set(nodes))
    finally:
        current_principal.reset(token)
    return out


def _walk(node: dict[str, Any], out: list[str]) -> None:
    if node.get("Relation Name") == "retrieval_chunks":
        out.append(f"{node['Node Type']}({node.get('Index Name', '')})".replace("()", ""))
    for child in node.get("Plans", []):
        _walk(child, out)


def render(results: dict[str, Any]) -> str:
    u = results["update_acl"]
    lines = [
        f"document ACLs ({'HNSW' if results['hnsw'] else 'no HNSW index'}, "
        f"{results['corpus_chunks']} chunks)",
        f"UpdateDocumentAcl, {results['chunks_in_document']}-chunk document: "
        f"p50 {u['p50_ms']} ms, p99 {u['p99_ms']} ms (n={u['n']})",
        "search p50 ms        service key   principal   ratio",
    ]
    for mode, s in results["search"].items():
        lines.append(
            f"  {mode:<18} {s['service_key_p50_ms']:>11} {s['principal_p50_ms']:>11} "
            f"{s['ratio']:>7}"
        )
    for mode, nodes in results["plans"].items():
        lines.append(f"plan {mode}: {', '.join(nodes)}")
    g = results["get_forbidden_vs_missing"]
    lines.append(
        f"GetDocument read p50: forbidden {g['forbidden']['p50_ms']} ms, "
        f"missing {g['missing']['p50_ms']} ms (n={g['missing']['n']} each)"
    )
    return "\n".join(lines)


def main(
    out: Path = Path("bench-results/acl.json"),
    *,
    chunks: int = 1000,
    documents: int = 200,
    rounds: int = 100,
) -> dict[str, Any]:
    """Run, print the table, write JSON to ``out``."""
    results = asyncio.run(_run(chunks, documents, rounds))
    print(render(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return results


if __name__ == "__main__":
    main()
