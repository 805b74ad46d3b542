"""A long IngestDocuments call across its connection's maximum age, on the real retrieval
service (issue 46 item 7: an ingest cut after 37 s, UNAVAILABLE, when its connection
reached its age with less grace than ingest's deadline). Scaled from minutes to seconds:
the connection ages out half a second in, the call runs on for seconds more."""

from __future__ import annotations

import asyncio
import time

import pytest

from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.retrieval.stack import (
    held_document,
    ingest,
    new_tenant,
    start_retrieval,
    stored_documents,
)

pytestmark = pytest.mark.integration


async def test_an_ingest_runs_on_past_its_connections_maximum_age(
    pg_url, embedding, telemetry_sink
):
    running = await start_retrieval(
        pg_url,
        embedding.server.address,
        telemetry_sink("retrieval").telemetry,
        server={"max_connection_age_s": 0.5},
    )
    try:
        tenant = new_tenant(pg_url)
        await ingest(running.stub, tenant, [pb.DocumentInput(document_id="held", text="Old.")])
        docs = [pb.DocumentInput(document_id=f"n{i}", text=f"Note {i}.") for i in range(3)]
        docs.append(pb.DocumentInput(document_id="held", text="A changed note."))
        started = time.monotonic()
        with held_document(pg_url, tenant, "held"):
            call = running.stub.IngestDocuments(
                pb.IngestDocumentsRequest(tenant_id=tenant, documents=docs), timeout=30
            )
            # The write of the last document waits well past the connection's age. (With
            # the grace of before scaled down alike, longest_deadline_s=1.0 here: the call
            # is cut at about 2 s with UNAVAILABLE, max connection age.)
            await asyncio.sleep(2.5)
        events = [event async for event in call]
        assert time.monotonic() - started >= 2.5
        summary = events[-1].summary
        assert summary.documents_included == 4, summary
        assert set(stored_documents(pg_url, tenant)) == {"n0", "n1", "n2", "held"}
        # The channel carries on over a fresh connection.
        _, again = await ingest(running.stub, tenant, docs)
        assert again.documents_unchanged == 4
    finally:
        await running.close()
