"""The full-text side ranks by Okapi BM25 computed inside Postgres: its scores equal an
independent BM25 computed here over the same chunks, with the same tokenisation
(``to_tsvector('english', …)`` of title, section and body), one tenant's statistics never
shape another tenant's scores, and hybrid fusion weighs the full-text side as its guard
says (off for a query in other words than the documents, its first hit doubled when
conclusive)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from services.retrieval import RetrievalSettings
from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.retrieval import bm25_reference as reference
from tests.integration.retrieval.stack import (
    EmbeddingService,
    Retrieval,
    ingest,
    new_tenant,
    start_retrieval,
)

pytestmark = pytest.mark.integration

SPARSE = pb.SEARCH_MODE_SPARSE

# Lengths, repeated words, a word in the title and the body, a hyphenated compound and
# stop words: everything the length normalisation and term frequency have to get right.
DOCUMENTS = [
    (
        "lens",
        "Crystalline lens",
        "The crystalline lens of the eye focuses light. Lens fibres"
        " grow in layers; the lens hardens with age.",
    ),
    ("retina", "Retina", "The retina converts light into signals for the optic nerve."),
    (
        "cataract",
        "Cataract surgery",
        "Cataract surgery replaces a clouded lens with an"
        " artificial lens. Most patients see well within days; a few need glasses for reading."
        " Surgery under local anaesthesia is short and the eye heals quickly.",
    ),
    ("ticket", "Incident INC-48213", "Ticket INC-48213 tracked a load balancer outage."),
    ("light", "Light", "Light, light and more light: the word repeats."),
    ("empty", "Notes", "Of the and to be."),
    # near twins: neither is a conclusive full-text match for their shared words
    ("glaucoma", "Glaucoma", "Glaucoma raises the pressure inside the eye."),
    ("glaucoma-care", "Glaucoma care", "Glaucoma raises eye pressure; drops lower it."),
]

QUERIES = [
    "crystalline lens of the eye",
    "light",
    "surgery for a clouded lens",
    "INC-48213 outage",
    "lens lens retina",
    "light light light surgery",
    "words no chunk holds: zyzzyva",
]


def _independent_bm25(
    pg_url: str, tenant: str, query: str, *, k1: float = 1.2, b: float = 0.75, k3: float = 5.0
) -> dict[str, float]:
    with psycopg.connect(pg_url) as conn:
        chunks = reference.chunk_words(conn, tenant)
        words = reference.text_words(conn, query)
    return reference.bm25(chunks, words, k1, b, k3)


@contextlib.asynccontextmanager
async def _server(
    pg_url: str, embedding_service: EmbeddingService, telemetry_sink: Any, **options: Any
) -> AsyncIterator[Retrieval]:
    address = embedding_service.server.address
    running = await start_retrieval(
        pg_url,
        address,
        telemetry_sink(f"retrieval-{sorted(options.items())}").telemetry,
        settings=RetrievalSettings(embedding_addr=address, **options),
    )
    try:
        yield running
    finally:
        await running.close()


async def _sparse_scores(stub: Any, tenant: str, query: str) -> dict[str, float]:
    reply = await stub.Search(
        pb.SearchRequest(tenant_id=tenant, query=query, mode=SPARSE, top_k=100)
    )
    assert not reply.degraded
    ranks = [h.sparse_rank for h in reply.hits]
    scores = [h.sparse_score for h in reply.hits]
    assert scores == sorted(scores, reverse=True)
    # 1-based, equal scores sharing the rank of the first of them
    assert ranks == [1 + sum(other > score for other in scores) for score in scores]
    return {h.chunk_id: h.sparse_score for h in reply.hits}


def _docs() -> list[pb.DocumentInput]:
    return [pb.DocumentInput(document_id=i, title=t, text=x) for i, t, x in DOCUMENTS]


@pytest.mark.parametrize(
    "bm25",
    [
        {"k1": 1.2, "b": 0.75, "k3": 5.0},
        {"k1": 0.9, "b": 0.4, "k3": 0.0},
        {"k1": 2.0, "b": 1.0, "k3": 1000.0},
        {"k1": 1.5, "b": 0.0, "k3": 1.0},
    ],
)
async def test_sparse_scores_equal_an_independent_bm25(
    bm25, pg_url, embedding_service, telemetry_sink
):
    options = {f"bm25_{name}": value for name, value in bm25.items()}
    async with _server(pg_url, embedding_service, telemetry_sink, **options) as running:
        tenant = new_tenant(pg_url, "bm25")
        await ingest(running.stub, tenant, _docs())
        for query in QUERIES:
            expected = _independent_bm25(pg_url, tenant, query, **bm25)
            found = await _sparse_scores(running.stub, tenant, query)
            assert found.keys() == expected.keys(), query
            for chunk, score in expected.items():
                assert found[chunk] == pytest.approx(score, abs=1e-6, rel=0), (query, chunk)


async def test_scores_stay_exact_after_replacement_and_deletion(retrieval, pg_url):
    tenant = new_tenant(pg_url, "bm25")
    await ingest(retrieval.stub, tenant, _docs())
    await ingest(
        retrieval.stub,
        tenant,
        [pb.DocumentInput(document_id="lens", title="Lens", text="A short lens note.")],
    )
    await retrieval.stub.DeleteDocument(
        pb.DeleteDocumentRequest(tenant_id=tenant, document_id="cataract")
    )
    for query in QUERIES:
        expected = _independent_bm25(pg_url, tenant, query)
        found = await _sparse_scores(retrieval.stub, tenant, query)
        assert found.keys() == expected.keys(), query
        for chunk, score in expected.items():
            assert found[chunk] == pytest.approx(score, abs=1e-6, rel=0), (query, chunk)


async def test_another_tenants_documents_never_change_a_tenants_scores(retrieval, pg_url):
    mine, theirs = new_tenant(pg_url, "mine"), new_tenant(pg_url, "theirs")
    await ingest(retrieval.stub, mine, _docs())
    before = {q: await _sparse_scores(retrieval.stub, mine, q) for q in QUERIES}
    # Many chunks sharing the query words would change N, the average length and every
    # word's document frequency if statistics leaked across tenants.
    await ingest(
        retrieval.stub,
        theirs,
        [
            pb.DocumentInput(
                document_id=f"x{i}", title="lens", text=f"lens light retina surgery {i} " * 20
            )
            for i in range(12)
        ],
    )
    after = {q: await _sparse_scores(retrieval.stub, mine, q) for q in QUERIES}
    assert after == before
    assert not await _sparse_scores(retrieval.stub, theirs, "crystalline cataract INC-48213")


@pytest.mark.parametrize(
    ("query", "case"),
    [
        # most of the query's weight is in words no chunk holds: full text is left out
        ("zyzzyva quixotic flibbertigibbet lens", "off"),
        # a rare identifier: the full-text top is far ahead of the runner-up
        ("INC-48213", "conclusive"),
        ("glaucoma pressure", "plain"),
        # one stray unseen word would carry more than half the weight at its own IDF; at
        # the rarest known word's it does not, so full text still counts
        ("what does the retina say about light", "stray"),
    ],
)
async def test_hybrid_fusion_weighs_the_full_text_side_by_the_guard(query, case, retrieval, pg_url):
    tenant = new_tenant(pg_url, "guard")
    await ingest(retrieval.stub, tenant, _docs())
    with psycopg.connect(pg_url) as conn:
        chunks = reference.chunk_words(conn, tenant)
        words = reference.text_words(conn, query)
        weight, top = reference.sparse_guard(chunks, words)
    expected_guard = {
        "off": (0.0, top),
        "conclusive": (1.0, 2.0),
        "plain": (1.0, 1.0),
        "stray": (1.0, top),
    }
    assert (weight, top) == expected_guard[case]
    if case == "stray":  # the uncapped share alone would have left full text out
        total, known = reference.query_weight(chunks, words, 5.0)
        assert known < 0.5 * total
    reply = await retrieval.stub.Search(
        pb.SearchRequest(tenant_id=tenant, query=query, mode=pb.SEARCH_MODE_HYBRID, top_k=20)
    )
    assert not reply.degraded and reply.hits
    k = RetrievalSettings().rrf_k
    for hit in reply.hits:
        dense = 1 / (k + hit.dense_rank) if hit.dense_rank else 0.0
        sparse = weight * (top if hit.sparse_rank == 1 else 1.0) / (k + hit.sparse_rank)
        expected = dense + (sparse if hit.sparse_rank else 0.0)
        assert hit.score == pytest.approx(expected, abs=1e-9), hit.chunk_id
    if case == "conclusive":
        assert reply.hits[0].document_id == "ticket"
