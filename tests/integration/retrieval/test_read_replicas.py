"""Issue 51, item 3: Search and the document reads on a streaming standby, within a
staleness bound, and a caller's own writes visible to its next read.

A real pair as ``tandem run --pg-standby`` runs it (``services.pgha``: the embedded
primary and its synchronous standby, through ``services.bench.pg_pair``); the services
connect as they are configured there, ``DATABASE_URL`` the multi-host writer conninfo and
``DATABASE_READ_URL`` the reader one (``prefer-standby``). Which side served a read is
proved by what it returned: the test deletes a document on the primary behind the
service's back while the standby's replay is paused, so only the standby still holds it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from gateway import ApiKeys, schema_migrations
from services.bench.pg_pair import PgPair, start_pair
from services.common import (
    LSN_HEADER,
    Database,
    DatabaseSettings,
    ReadSettings,
    Unauthenticated,
    WritePositions,
)
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.gateway.stack import bearer, start_gateway
from tests.integration.retrieval.stack import Retrieval, new_tenant, start_retrieval

pytestmark = pytest.mark.integration

WORD = "zeppelin"
Starter = Callable[[float], Awaitable[Retrieval]]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgPair]:
    made = start_pair(Path(tmp_path_factory.mktemp("pair")))
    yield made
    made.stop()


@pytest.fixture
def replicated(pair: PgPair) -> Iterator[PgPair]:
    """The pair, its replay running again after the test whatever happened."""
    yield pair
    pair.resume()


@pytest.fixture
async def start(replicated, embedding_service, telemetry_sink) -> AsyncIterator[Starter]:
    """Start retrieval services reading from the standby within ``max_lag_s``."""
    started: list[Retrieval] = []

    async def make(max_lag_s: float) -> Retrieval:
        service = await start_retrieval(
            replicated.writer_url,
            embedding_service.server.address,
            telemetry_sink("retrieval").telemetry,
            reads=ReadSettings(url=replicated.reader_url, max_lag_s=max_lag_s),
        )
        started.append(service)
        return service

    yield make
    for service in started:
        await service.close()


def _document(document_id: str) -> pb.DocumentInput:
    return pb.DocumentInput(
        document_id=document_id,
        title=f"Airship {WORD}",
        text=f"The {WORD} hangar schedule lists every airship inspection.",
    )


def _outcomes(summary: pb.IngestSummary) -> str:
    """Each document's outcome and, where it failed, its error: what an assertion that
    a document was included says when it was not (a failure seen once in CI said only
    ``0 == 1``)."""
    return "; ".join(
        f"{d.document_id}: {pb.DocumentOutcome.Name(d.outcome)}"
        + (f" {d.error.reason} (code {d.error.code}): {d.error.message}" if d.error.reason else "")
        for d in summary.documents
    )


async def _ingest(service: Retrieval, tenant: str, document_id: str) -> int:
    """Ingest one document; the ``x-tandem-lsn`` the call's trailer carried."""
    call = service.stub.IngestDocuments(
        pb.IngestDocumentsRequest(tenant_id=tenant, documents=[_document(document_id)]),
        timeout=60,
    )
    events = [event async for event in call]
    summary = events[-1].summary
    assert summary.documents_included == 1, _outcomes(summary)
    trailer = dict(await call.trailing_metadata() or ())
    return int(trailer.get(LSN_HEADER, 0))


async def _found(
    service: Retrieval, tenant: str, metadata: tuple[tuple[str, str], ...] = ()
) -> set[str]:
    reply = await service.stub.Search(
        pb.SearchRequest(tenant_id=tenant, query=WORD, mode=pb.SEARCH_MODE_SPARSE),
        timeout=10,
        metadata=metadata,
    )
    return {hit.document_id for hit in reply.hits}


def _delete_behind(pair: PgPair, tenant: str, document_id: str) -> None:
    """Delete a document on the primary without the service knowing (as the owner)."""
    with psycopg.connect(pair.primary_url, autocommit=True) as conn:
        for table in ("retrieval_chunks", "retrieval_documents"):
            conn.execute(
                f"DELETE FROM {table} WHERE tenant_id = %s AND document_id = %s",
                (tenant, document_id),
            )


async def _settled(service: Retrieval, pair: PgPair) -> None:
    """The standby has replayed everything, and the service has measured that since."""
    pair.catch_up()
    assert service.reads is not None
    await asyncio.sleep(2 * service.reads.interval_s + 0.05)


async def test_search_and_get_read_the_standby_when_it_is_fresh(replicated, start):
    service = await start(max_lag_s=30.0)
    tenant = new_tenant(replicated.primary_url, "replica")
    await _ingest(service, tenant, "airship")
    await _settled(service, replicated)
    replicated.pause()
    _delete_behind(replicated, tenant, "airship")
    assert service.reads is not None
    served = service.reads.reads["standby"]

    # Only the standby still holds the document: finding it proves where the read went.
    assert await _found(service, tenant) == {"airship"}
    got = await service.stub.GetDocument(
        pb.GetDocumentRequest(tenant_id=tenant, document_id="airship"), timeout=10
    )
    assert got.document.document_id == "airship"
    assert service.reads.reads["standby"] == served + 2


async def test_a_lagging_standby_is_passed_over_within_the_bound(replicated, start):
    max_lag_s = 0.4
    service = await start(max_lag_s=max_lag_s)
    assert service.reads is not None
    tenant = new_tenant(replicated.primary_url, "lagging")
    await _ingest(service, tenant, "airship")
    await _settled(service, replicated)
    # Idle for longer than the bound: a standby that has replayed everything is fresh
    # however long ago the last transaction was (a replay timestamp would call it stale).
    await asyncio.sleep(2 * max_lag_s)
    served = service.reads.reads["standby"]
    assert await _found(service, tenant) == {"airship"}
    assert service.reads.reads["standby"] == served + 1

    replicated.pause()
    _delete_behind(replicated, tenant, "airship")
    paused_at = time.monotonic()
    # Within the bound the standby may still answer (the deleted document with it); past
    # it, every read goes to the primary, which no longer holds the document.
    while await _found(service, tenant):
        assert time.monotonic() - paused_at < max_lag_s + 2 * service.reads.interval_s + 0.5
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    assert await _found(service, tenant) == set()


async def test_a_callers_write_is_read_at_once_with_replay_paused(replicated, start):
    writer = await start(max_lag_s=30.0)
    # Another replica of the service, which will not see the write.
    other = await start(max_lag_s=30.0)
    tenant = new_tenant(replicated.primary_url, "ryw")
    await _settled(writer, replicated)
    replicated.pause()

    lsn = await _ingest(writer, tenant, "airship")
    # The same service: it marked the tenant written, so the read waits for no standby.
    assert await _found(writer, tenant) == {"airship"}
    assert lsn > 0

    # The other replica: without the position it reads the (paused, still in-bound)
    # standby, which lacks the document; with the position the caller got back, it
    # reads where the write is.
    assert await _found(other, tenant) == set()
    assert await _found(other, tenant, ((LSN_HEADER, str(lsn)),)) == {"airship"}


async def test_a_revoked_key_fails_at_once_with_replay_paused(replicated):
    """API keys are verified where the gateway connects, ``DATABASE_URL`` (the primary),
    never on ``DATABASE_READ_URL``: a key revoked while the standby is behind stops at
    once. (Verified on the standby, it would still open the door until replay resumed.)"""
    environ = {"DATABASE_URL": replicated.writer_url, "DATABASE_READ_URL": replicated.reader_url}
    gateway_url = DatabaseSettings.from_env(environ).url
    assert gateway_url is not None
    admin_db = Database(replicated.primary_url, min_size=1, max_size=1, vector=False)
    await admin_db.open(schema_migrations())
    gateway_db = Database(gateway_url, min_size=1, max_size=1, vector=False)
    await gateway_db.pool.open(wait=True)
    try:
        admin = ApiKeys(admin_db, pepper=b"p" * 32)  # ``tandem keys``
        gateway = ApiKeys(gateway_db, pepper=b"p" * 32)
        tenant = new_tenant(replicated.primary_url, "keys")
        issued = await admin.create(tenant)
        assert await gateway.verify(issued.secret) == tenant
        replicated.catch_up()
        replicated.pause()
        await admin.revoke(issued.key_id)
        with pytest.raises(Unauthenticated):
            await gateway.verify(issued.secret)
    finally:
        await gateway_db.close()
        await admin_db.close()


async def test_through_the_gateway_a_write_is_read_at_once_by_another_replica(
    replicated, start, telemetry_sink
):
    """The gateway keeps each tenant's last ``x-tandem-lsn`` and sends it with the
    tenant's next calls: a Search served by a retrieval replica that did not see the write
    (modelled by one that forgot it) still reads where the write is."""
    service = await start(max_lag_s=30.0)
    gateway = await start_gateway(
        replicated.writer_url,
        telemetry_sink("gateway").telemetry,
        router_addr="127.0.0.1:9",
        retrieval_addr=service.server.address,
        sql_addr="127.0.0.1:9",
        conversations=False,
    )
    try:
        tenant = new_tenant(replicated.primary_url, "gwryw")
        key = await gateway.key(tenant)
        await _settled(service, replicated)
        replicated.pause()
        ingest = gpb.GatewayServiceIngestDocumentsRequest(documents=[_document("airship")])
        events = [e async for e in gateway.stub.IngestDocuments(ingest, metadata=bearer(key))]
        summary = events[-1].summary
        assert summary.documents_included == 1, _outcomes(summary)
        assert service.reads is not None
        service.reads._written = WritePositions()  # another replica: it never saw the write
        search = gpb.GatewayServiceSearchRequest(query=WORD, mode=pb.SEARCH_MODE_SPARSE)
        reply = await gateway.stub.Search(search, metadata=bearer(key), timeout=10)
        assert {hit.document_id for hit in reply.hits} == {"airship"}
        # The same search without the gateway's position reads the paused standby.
        assert await _found(service, tenant) == set()
    finally:
        await gateway.close()
