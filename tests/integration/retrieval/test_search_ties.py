"""Equal scores are ordered by where the chunks stand (document, then ordinal), not by
their chunk ids: an id is a hash of the document's fingerprint, so a re-chunk (a
``CHUNKER_VERSION`` bump) reshuffled tied hits and moved the SQuAD figure by ±2 (issue
48). Real servers, the real model and the embedded Postgres."""

from __future__ import annotations

import pytest

from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant

pytestmark = pytest.mark.integration

# The same paragraph (df(1)'s description) in several documents: every list scores them
# exactly alike, so their order is the tie-break alone.
TEXT = (
    "df displays the amount of space available on the file system containing each file "
    "name argument. If no file name is given, the space available on all currently "
    "mounted file systems is shown."
)
# Eight ids: the chance that random chunk ids sort them in this order is 1 in 40,320.
IDS = [f"copy-{letter}" for letter in "hgfedcba"]


@pytest.mark.parametrize(
    "mode", [pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_DENSE, pb.SEARCH_MODE_SPARSE]
)
async def test_tied_hits_come_in_document_order(retrieval, pg_url, mode) -> None:
    tenant = new_tenant(pg_url)
    documents = [pb.DocumentInput(document_id=i, title="df", text=TEXT) for i in IDS]
    _, summary = await ingest(retrieval.stub, tenant, documents)
    assert summary.documents_included == len(IDS)
    reply = await retrieval.stub.Search(
        pb.SearchRequest(tenant_id=tenant, query="space on mounted file systems", mode=mode)
    )
    # each list scores them alike (a tie, or the test shows nothing); hybrid's fused
    # score then follows the lists' ranks
    assert len({(round(h.dense_score, 6), round(h.sparse_score, 6)) for h in reply.hits}) == 1
    assert [h.document_id for h in reply.hits] == sorted(IDS)
