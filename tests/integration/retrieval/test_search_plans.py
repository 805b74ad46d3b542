"""The search statement is planned once per connection, tenant and shape, not per search:
planning it cost a third of its backend CPU. Its plan is made for the tenant it serves
(the tenant is in the statement's text), so a large and a small tenant do not share a
plan made for neither."""

from __future__ import annotations

import numpy as np
import pytest

from services.retrieval import RetrievalSettings
from services.retrieval._repository import RetrievalRepository, SearchPlan
from services.retrieval._search import search_plan
from services.retrieval._server import open_database
from services.retrieval._types import SearchMode
from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.pg_waits import WaitCounter
from tests.integration.retrieval.stack import ingest, new_tenant

pytestmark = pytest.mark.integration

# The prepared statements of this session that are searches (the BM25 corpus CTE is in
# every full-text search and in nothing else).
_SEARCHES = """
    SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
    WHERE statement LIKE '%%retrieval_corpus_stats%%' ORDER BY statement"""


def _plan(tenant: str, settings: RetrievalSettings, query: str) -> SearchPlan:
    return search_plan(
        settings,
        tenant_id=tenant,
        mode=SearchMode.HYBRID,
        query=query,
        vector=np.full(384, 0.05, dtype=np.float32),
        model_name="any-model",
        depth=settings.default_candidate_depth,
        limit=10,
        ef_search=settings.default_ef_search,
    )


async def test_each_tenants_search_is_planned_once_and_reused(retrieval, pg_url):
    large, small = new_tenant(pg_url, "plan-large"), new_tenant(pg_url, "plan-small")
    await ingest(
        retrieval.stub,
        large,
        [
            pb.DocumentInput(document_id=f"d{i}", title=f"Note {i}", text=f"lens surgery {i}")
            for i in range(12)
        ],
    )
    await ingest(retrieval.stub, small, [pb.DocumentInput(document_id="d", title="N", text="lens")])
    settings = RetrievalSettings()
    # one connection, so every search below runs in the session read afterwards
    database = await open_database(pg_url, settings, min_size=1, max_size=1, timeout_s=5)
    try:
        repository = RetrievalRepository(database)
        for words in ("lens", "surgery", "lens surgery"):
            rows = await repository.search(_plan(large, settings, words))
            assert rows.hits, words
        small_rows = await repository.search(_plan(small, settings, "lens"))
        # the small tenant's plan does not show it the large tenant's chunks
        assert [h.document_id for h in small_rows.hits] == ["d"]
        async with database.connection() as conn:
            cur = await conn.execute(_SEARCHES)
            prepared = await cur.fetchall()
    finally:
        await database.close()
    assert len(prepared) == 2, "one prepared search per tenant"
    by_tenant = {
        tenant: [(g, c) for text, g, c in prepared if f"'{tenant}'" in text]
        for tenant in (large, small)
    }
    # executions that reused the one plan (generic) and searches planned anew (custom)
    assert by_tenant == {large: [(3, 0)], small: [(1, 0)]}


async def test_a_search_waits_for_the_database_once(retrieval, pg_url):
    tenant = new_tenant(pg_url, "waits")
    await ingest(retrieval.stub, tenant, [pb.DocumentInput(document_id="d", text="lens surgery")])
    settings = RetrievalSettings()
    relay = WaitCounter(pg_url)
    database = await open_database(
        await relay.start(), settings, min_size=1, max_size=1, timeout_s=5
    )
    try:
        repository = RetrievalRepository(database)
        await repository.search(_plan(tenant, settings, "lens"))  # prepared here
        relay.waits = 0
        rows = await repository.search(_plan(tenant, settings, "lens"))
        waits = relay.waits
    finally:
        await database.close()
        await relay.close()
    assert [h.document_id for h in rows.hits] == ["d"]
    # the start, the settings, the statement and the commit leave together
    assert waits == 1
