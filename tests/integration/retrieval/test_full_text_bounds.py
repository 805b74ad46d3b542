"""The full-text side's bounded cost: exact per-tenant statistics kept by triggers (each
word's chunk count, the tenant's chunk and word totals), and a search that reads the
chunks holding every query word, then those holding its rarest words, at most
``RETRIEVAL_SPARSE_CANDIDATES`` of them — exact BM25 whenever the budget is not hit
(golden set), bounded when it is."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from services.retrieval import RetrievalSettings
from services.retrieval._repository import app_conninfo
from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.retrieval.bm25_reference import bm25, chunk_words, text_words
from tests.integration.retrieval.stack import (
    EmbeddingService,
    Retrieval,
    ingest,
    ingest_golden_set,
    new_tenant,
    query_one,
    start_retrieval,
)

pytestmark = pytest.mark.integration

HYBRID, SPARSE = pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_SPARSE

_STORED = "SELECT lexeme, chunks FROM retrieval_terms WHERE tenant_id = %s ORDER BY lexeme"
_RECOUNTED = """
    SELECT l.lexeme, count(*)::int
    FROM retrieval_chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) AS l (lexeme)
    WHERE c.tenant_id = %s GROUP BY l.lexeme ORDER BY l.lexeme"""


# BM25's corpus totals: chunks and word occurrences (positions) of the tenant.
_CORPUS_STORED = "SELECT chunks, tokens FROM retrieval_corpus_stats WHERE tenant_id = %s"
_CORPUS_RECOUNTED = """
    SELECT count(*), (SELECT sum(coalesce(array_length(u.positions, 1), 1))
                      FROM retrieval_chunks d CROSS JOIN LATERAL unnest(d.tsv) AS u
                      WHERE d.tenant_id = %(t)s)
    FROM retrieval_chunks c WHERE c.tenant_id = %(t)s HAVING count(*) > 0"""


def _terms(pg_url: str, tenant: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(stored counts, counts recomputed from the chunks) for one tenant."""
    with psycopg.connect(pg_url) as conn:
        stored = [tuple(r) for r in conn.execute(_STORED, (tenant,)).fetchall()]
        recounted = [tuple(r) for r in conn.execute(_RECOUNTED, (tenant,)).fetchall()]
    return stored, recounted


def _totals(pg_url: str, tenant: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(stored, recomputed) (chunks, word occurrences) of one tenant; None when empty."""
    with psycopg.connect(pg_url) as conn:
        stored = conn.execute(_CORPUS_STORED, (tenant,)).fetchone()
        recounted = conn.execute(_CORPUS_RECOUNTED, {"t": tenant}).fetchone()
    return (tuple(stored) if stored else None), (tuple(recounted) if recounted else None)


def _doc(doc_id: str, text: str, title: str = "") -> pb.DocumentInput:
    return pb.DocumentInput(document_id=doc_id, title=title or doc_id, text=text)


@contextlib.asynccontextmanager
async def _server_reading_at_most(
    candidates: int, pg_url: str, embedding_service: EmbeddingService, telemetry_sink: Any
) -> AsyncIterator[Retrieval]:
    """A second retrieval server on the same store with another full-text budget."""
    address = embedding_service.server.address
    running = await start_retrieval(
        pg_url,
        address,
        telemetry_sink(f"retrieval-{candidates}").telemetry,
        settings=RetrievalSettings(embedding_addr=address, sparse_candidates=candidates),
    )
    try:
        yield running
    finally:
        await running.close()


@pytest.fixture
async def bounded(pg_url, embedding_service, telemetry_sink) -> AsyncIterator[Retrieval]:
    async with _server_reading_at_most(3, pg_url, embedding_service, telemetry_sink) as running:
        yield running


@pytest.fixture
async def unbounded(pg_url, embedding_service, telemetry_sink) -> AsyncIterator[Retrieval]:
    async with _server_reading_at_most(0, pg_url, embedding_service, telemetry_sink) as running:
        yield running


async def test_word_counts_follow_ingest_replacement_and_deletion(retrieval, pg_url):
    tenant = new_tenant(pg_url)
    await ingest(
        retrieval.stub,
        tenant,
        [
            _doc("a", "Renewal pricing for the Zephyrine account."),
            _doc("b", "Renewal pricing and seat expansion."),
            _doc("c", "Security questionnaire before the renewal."),
        ],
    )
    stored, recounted = _terms(pg_url, tenant)
    assert stored == recounted
    assert dict(stored)["renew"] == 3 and dict(stored)["zephyrin"] == 1
    totals, recomputed = _totals(pg_url, tenant)
    assert totals == recomputed and totals is not None and totals[0] == 3
    # A changed document's chunks are replaced: its old words are subtracted.
    await ingest(retrieval.stub, tenant, [_doc("a", "Quarterly business review agenda.")])
    stored, recounted = _terms(pg_url, tenant)
    assert stored == recounted
    assert "zephyrin" not in dict(stored) and dict(stored)["renew"] == 2
    assert _totals(pg_url, tenant)[0] == _totals(pg_url, tenant)[1]
    await retrieval.stub.DeleteDocument(pb.DeleteDocumentRequest(tenant_id=tenant, document_id="b"))
    stored, recounted = _terms(pg_url, tenant)
    assert stored == recounted and dict(stored)["renew"] == 1
    totals, recomputed = _totals(pg_url, tenant)
    assert totals == recomputed and totals is not None and totals[0] == 2
    for doc_id in ("a", "c"):
        await retrieval.stub.DeleteDocument(
            pb.DeleteDocumentRequest(tenant_id=tenant, document_id=doc_id)
        )
    assert _terms(pg_url, tenant) == ([], [])
    assert _totals(pg_url, tenant) == (None, None)


async def test_concurrent_ingests_of_shared_words_neither_deadlock_nor_miscount(retrieval, pg_url):
    tenant = new_tenant(pg_url)
    shared = "renewal pricing seat expansion security questionnaire procurement"
    batches = [
        [
            _doc(f"w{w}-d{d}", f"{shared} worker {w} document {d} topic{(w + d) % 5}")
            for d in range(6)
        ]
        for w in range(6)
    ]
    results = await asyncio.gather(*(ingest(retrieval.stub, tenant, b) for b in batches))
    assert all(summary.documents_failed == 0 for _, summary in results)
    # Replacing a document subtracts its old words and adds its new ones in one
    # transaction; concurrent replacements sharing words must queue, not deadlock.
    for round_ in range(3):
        replaced = [
            [_doc(d.document_id, f"{shared} revision {round_} of {d.document_id}") for d in b[:4]]
            for b in batches
        ]
        results = await asyncio.gather(*(ingest(retrieval.stub, tenant, b) for b in replaced))
        assert all(summary.documents_failed == 0 for _, summary in results)
    stored, recounted = _terms(pg_url, tenant)
    assert stored == recounted
    assert dict(stored)["renew"] == 36
    totals, recomputed = _totals(pg_url, tenant)
    assert totals == recomputed and totals is not None and totals[0] == 36


async def test_word_counts_are_tenant_private_and_go_with_the_tenant(retrieval, pg_url):
    tenant_a, tenant_b = new_tenant(pg_url, "a"), new_tenant(pg_url, "b")
    await ingest(retrieval.stub, tenant_a, [_doc("x", "Zephyrine merger plan closes in May.")])
    await ingest(retrieval.stub, tenant_b, [_doc("y", "Quarterly business review agenda.")])
    with psycopg.connect(app_conninfo(pg_url), autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT set_config('tandem.tenant_id', %s, true)", (tenant_b,))
        seen = {r[0] for r in conn.execute("SELECT DISTINCT tenant_id FROM retrieval_terms")}
        leaked = conn.execute(
            "SELECT count(*) FROM retrieval_terms WHERE lexeme = 'zephyrin'"
        ).fetchone()
        totals = {r[0] for r in conn.execute("SELECT tenant_id FROM retrieval_corpus_stats")}
    assert seen == {tenant_b} and leaked == (0,) and totals == {tenant_b}
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant_a,))
    assert _terms(pg_url, tenant_a) == ([], [])
    assert _totals(pg_url, tenant_a) == (None, None)


async def test_chunk_text_cannot_be_updated_in_place(retrieval, pg_url):
    tenant = new_tenant(pg_url)
    await ingest(retrieval.stub, tenant, [_doc("a", "Renewal pricing.")])
    with psycopg.connect(pg_url) as conn, pytest.raises(psycopg.errors.FeatureNotSupported):
        conn.execute(
            "UPDATE retrieval_chunks SET body = 'other words' WHERE tenant_id = %s", (tenant,)
        )
    stored, recounted = _terms(pg_url, tenant)
    assert stored == recounted


async def test_the_budget_bounds_rows_read_and_reads_the_best_tier_first(
    retrieval, bounded, unbounded, pg_url
):
    tenant = new_tenant(pg_url)
    common = [_doc(f"note-{i}", f"Renewal call number {i} covered pricing.") for i in range(12)]
    rare = _doc("zeph", "Renewal of the Zephyrine contract.")
    await ingest(retrieval.stub, tenant, [*common, rare])

    async def search(stub, query: str, mode: pb.SearchMode.ValueType) -> list[str]:
        reply = await stub.Search(
            pb.SearchRequest(tenant_id=tenant, query=query, mode=mode, top_k=20)
        )
        assert not reply.degraded
        return [h.document_id for h in reply.hits if mode == SPARSE or h.sparse_rank]

    # One common word: every match is read unbounded, at most 3 bounded.
    assert len(await search(unbounded.stub, "renewal", SPARSE)) == 13
    assert len(await search(bounded.stub, "renewal", SPARSE)) == 3
    # Chunks holding every word are read first, so the budget never drops them; past
    # them only the rare word's chunks are read (the common word's 13 exceed the budget).
    for mode in (SPARSE, HYBRID):
        assert await search(bounded.stub, "renewal Zephyrine", mode) == ["zeph"]
        hits = await search(unbounded.stub, "renewal Zephyrine", mode)
        assert hits[0] == "zeph" and len(hits) == 13
    # Three words: the one chunk holding them all ranks first, bounded or not.
    for stub in (bounded.stub, unbounded.stub):
        assert (await search(stub, "renewal Zephyrine contract", HYBRID))[0] == "zeph"
    # A word no chunk contains reads nothing.
    assert await search(bounded.stub, "Quixotic", SPARSE) == []


async def test_within_the_budget_the_ranking_equals_an_exhaustive_bm25(retrieval, pg_url):
    """The golden set's chunks fit in the budget: every match is read and scored."""
    dataset, tenant = await ingest_golden_set(retrieval.stub, pg_url)
    with psycopg.connect(pg_url) as conn:
        chunks = chunk_words(conn, tenant)
        expected = {
            q["_id"]: bm25(chunks, text_words(conn, q["text"]), 1.2, 0.75, 5.0)
            for q in dataset.queries
        }
    differing = []
    for query in dataset.queries:
        reply = await retrieval.stub.Search(
            pb.SearchRequest(tenant_id=tenant, query=query["text"], mode=SPARSE, top_k=50)
        )
        found = [(h.chunk_id, h.sparse_score) for h in reply.hits]
        best = sorted(expected[query["_id"]].items(), key=lambda item: -item[1])[:50]
        if len(found) != len(best) or any(
            abs(f[1] - e[1]) > 1e-6
            or expected[query["_id"]].get(f[0], -1.0) != pytest.approx(f[1], abs=1e-6)
            for f, e in zip(found, best, strict=True)
        ):
            differing.append(query["_id"])
    assert not differing


async def test_the_full_text_index_has_no_pending_list(retrieval, pg_url):
    """New chunks go straight into the GIN posting lists: a pending list would be scanned
    by every search until a vacuum (29 instead of 16 ms a search after a 100K load)."""
    options = query_one(
        pg_url, "SELECT reloptions FROM pg_class WHERE relname = 'retrieval_chunks_tsv'"
    )
    assert "fastupdate=off" in (options or [])
