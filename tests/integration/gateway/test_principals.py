"""Principals through the real gateway, router, retrieval and SQL servers on the embedded
Postgres.

- The principal an ``act_as`` key names reaches every internal handler its call makes,
  directly (Search, AskSql, ingest, upload) and through the router (Ask), as
  ``current_principal``; a service key's calls carry none (the full view). The principal
  id is a user identifier: it never appears in a span, log line or metric.
- Conversations belong to their principal: another principal's conversation is
  NOT_FOUND exactly as a missing one on continue (Ask, StreamAsk), delete and listing,
  and the policy in Postgres enforces the same without the gateway's filter; a service
  key keeps the tenant's full view.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.descriptor import ServiceDescriptor
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gateway import ALL_SCOPES, Scope
from gateway._conversations import app_conninfo
from services.common import GrpcServer, Principal, create_channel, current_principal
from services.retrieval import RetrievalSettings
from services.retrieval._server import (
    RetrievalDeps,
    build_servicer,
    extraction_pool,
    open_database,
)
from services.sql import SqlSettings, TargetConfig, ensure_warehouse
from services.sql._server import SqlServicer, build_deps
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tandem.v1 import sql_service_pb2_grpc as spb_grpc
from tests.conftest import server_settings
from tests.integration.gateway.stack import Gateway, bearer, start_gateway, start_router
from tests.integration.retrieval.stack import new_tenant
from tests.privacy import assert_no_canary, captured_logs, new_canary

pytestmark = pytest.mark.integration

SEMANTIC = "What is the refund policy?"
COUNTABLE = "How many companies are there?"


# -- internal servers whose handlers record the principal they ran for -----------------


def recording(servicer: Any, service: ServiceDescriptor, seen: list[tuple[str, Any]]) -> Any:
    """``servicer`` with each RPC noting ``(rpc, current_principal)`` as its handler starts
    (after the server's runtime interceptor set it from the headers), then running as is."""
    for method in service.methods:
        inner = getattr(servicer, method.name)
        if method.server_streaming:

            async def stream(request: Any, context: Any, _inner: Any = inner,
                             _name: str = method.name) -> AsyncIterator[Any]:  # fmt: skip
                seen.append((_name, current_principal.get()))
                async for reply in _inner(request, context):
                    yield reply

            setattr(servicer, method.name, stream)
        else:

            async def unary(request: Any, context: Any, _inner: Any = inner,
                            _name: str = method.name) -> Any:  # fmt: skip
                seen.append((_name, current_principal.get()))
                return await _inner(request, context)

            setattr(servicer, method.name, unary)
    return servicer


@dataclass
class Recorded:
    gateway: Gateway
    sinks: dict[str, Any]
    retrieval_seen: list[tuple[str, Any]] = field(default_factory=list)
    sql_seen: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def stub(self) -> Any:
        return self.gateway.stub


@pytest.fixture
async def recorded(pg_url, embedding, telemetry_sink) -> AsyncIterator[Recorded]:
    closers: list[Any] = []
    retrieval_seen: list[tuple[str, Any]] = []
    sql_seen: list[tuple[str, Any]] = []
    sinks = {name: telemetry_sink(name) for name in ("gateway", "router", "retrieval", "sql")}
    # Retrieval: the real servicer on the real server (runtime interceptor and all).
    settings = RetrievalSettings(embedding_addr=embedding.server.address)
    database = await open_database(pg_url, settings, min_size=1, max_size=4)
    channel = create_channel(embedding.server.address)
    telemetry = sinks["retrieval"].telemetry
    extraction = extraction_pool(settings)
    retrieval = GrpcServer(server_settings("retrieval"), telemetry)
    retrieval.add_service(
        "tandem.v1.RetrievalService",
        rpb_grpc.add_RetrievalServiceServicer_to_server,
        recording(
            build_servicer(
                RetrievalDeps(settings, database, channel, extraction=extraction), telemetry
            ),
            rpb.DESCRIPTOR.services_by_name["RetrievalService"],
            retrieval_seen,
        ),
    )
    await retrieval.start()
    await retrieval.set_serving(True)
    closers += [lambda: retrieval.stop(0), extraction.close, channel.close, database.close]
    # SQL: the real servicer over the demo warehouse, open to every tenant.
    warehouse = await ensure_warehouse(pg_url)
    sql_settings = SqlSettings(admin_url=pg_url, reference_date=date(2025, 6, 30))
    sql_deps = await build_deps(
        sql_settings, sinks["sql"].telemetry,
        configs=[TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({"*"}))],
    )  # fmt: skip
    sql = GrpcServer(server_settings("sql"), sinks["sql"].telemetry)
    sql.add_service(
        "tandem.v1.SqlService",
        spb_grpc.add_SqlServiceServicer_to_server,
        recording(SqlServicer(sql_deps), spb.DESCRIPTOR.services_by_name["SqlService"], sql_seen),
    )
    await sql.start()
    await sql.set_serving(True)
    closers += [lambda: sql.stop(0), sql_deps.close]
    router = await start_router(retrieval.address, sql.address, sinks["router"].telemetry)
    closers.insert(0, router.close)
    gateway = await start_gateway(
        pg_url, sinks["gateway"].telemetry, router_addr=router.address,
        retrieval_addr=retrieval.address, sql_addr=sql.address,
    )  # fmt: skip
    closers.insert(0, gateway.close)
    yield Recorded(gateway, sinks, retrieval_seen, sql_seen)
    for close in closers:
        await close()


async def _keys(gateway: Gateway, pg_url: str) -> tuple[str, str]:
    tenant = new_tenant(pg_url, "people")
    return (
        await gateway.key(tenant, ALL_SCOPES),
        await gateway.key(tenant, (*ALL_SCOPES, Scope.ACT_AS)),
    )


async def _every_data_path(stub: Any, metadata: Any) -> None:
    """Calls that reach retrieval and SQL directly and through the router."""
    timeout = 60
    await stub.Search(gpb.GatewayServiceSearchRequest(query="refund policy"),
                      metadata=metadata, timeout=timeout)  # fmt: skip
    await stub.Ask(gpb.GatewayServiceAskRequest(question=SEMANTIC, mode=qpb.ASK_MODE_RETRIEVE),
                   metadata=metadata, timeout=timeout)  # fmt: skip
    await stub.Ask(gpb.GatewayServiceAskRequest(question=COUNTABLE, mode=qpb.ASK_MODE_SQL),
                   metadata=metadata, timeout=timeout)  # fmt: skip
    [e async for e in stub.StreamAsk(gpb.GatewayServiceStreamAskRequest(question=SEMANTIC),
                                     metadata=metadata, timeout=timeout)]  # fmt: skip
    await stub.AskSql(gpb.GatewayServiceAskSqlRequest(question=COUNTABLE),
                      metadata=metadata, timeout=timeout)  # fmt: skip
    ingest = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id="d", text="Refunds within 30 days.")],
        dry_run=True,
    )
    [e async for e in stub.IngestDocuments(ingest, metadata=metadata, timeout=timeout)]
    upload = [
        gpb.GatewayServiceUploadDocumentRequest(header=gpb.GatewayServiceUploadHeader(
            document=rpb.DocumentInput(document_id="u", file_name="refunds.txt"), dry_run=True)),
        gpb.GatewayServiceUploadDocumentRequest(chunk=b"Refunds within 30 days."),
    ]  # fmt: skip
    [e async for e in stub.UploadDocument(iter(upload), metadata=metadata, timeout=timeout)]


async def test_the_principal_reaches_every_internal_handler_and_no_telemetry(recorded, pg_url):
    canary = new_canary()  # the principal's id: a user identifier
    alice = Principal.of(canary, {"sales"}, {"region": "EMEA"})
    service, acting = await _keys(recorded.gateway, pg_url)
    with captured_logs() as logs:
        await _every_data_path(recorded.stub, (*bearer(acting), *alice.headers()))
    seen = recorded.retrieval_seen + recorded.sql_seen
    # Every path was taken: retrieval's search and ingest, SQL's question (direct and
    # through the router).
    assert {"Search", "IngestDocuments"} <= {name for name, _ in recorded.retrieval_seen}
    assert sum(name == "AskQuestion" for name, _ in recorded.sql_seen) >= 2, recorded.sql_seen
    wrong = [(name, who) for name, who in seen if who != alice]
    assert not wrong, f"handlers that ran for someone else: {wrong}"
    # A service key's calls carry no principal: the tenant's full view.
    recorded.retrieval_seen.clear()
    recorded.sql_seen.clear()
    await _every_data_path(recorded.stub, bearer(service))
    seen = recorded.retrieval_seen + recorded.sql_seen
    assert seen and all(who is None for _, who in seen), seen
    # The id never reached telemetry, in any process of the chain.
    for sink in recorded.sinks.values():
        assert_no_canary(
            canary, spans=sink.spans.get_finished_spans(),
            metrics=sink.metrics.get_metrics_data(), logs=logs,
        )  # fmt: skip


# -- conversations belong to their principal ------------------------------------------


async def _refusal(call: Any) -> tuple[grpc.StatusCode, str, str, dict[str, str]]:
    """(status, message, ErrorInfo reason, its metadata) of a failed call."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        if hasattr(call, "__aiter__"):
            [event async for event in call]
        else:
            await call
    status = await rpc_status.aio.from_call(call)
    reason, metadata = "", {}
    for detail in status.details if status else []:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            reason, metadata = info.reason, dict(info.metadata)
    return err.value.code(), err.value.details() or "", reason, metadata


async def test_a_conversation_is_its_principals_alone_and_another_is_not_found_as_missing(
    recorded, pg_url
):
    stub = recorded.stub
    service, acting = await _keys(recorded.gateway, pg_url)
    alice = (*bearer(acting), *Principal.of("alice", {"sales"}).headers())
    bob = (*bearer(acting), *Principal.of("bob", {"sales"}).headers())
    full = bearer(service)

    async def start(metadata: Any) -> str:
        reply = await stub.Ask(
            gpb.GatewayServiceAskRequest(question=COUNTABLE, mode=qpb.ASK_MODE_SQL),
            metadata=metadata, timeout=60,
        )  # fmt: skip
        return str(reply.answer.conversation_id)

    mine, theirs, services = await start(alice), await start(bob), await start(full)

    async def listed(metadata: Any) -> set[str]:
        page = await stub.ListConversations(
            gpb.GatewayServiceListConversationsRequest(), metadata=metadata, timeout=10
        )
        return {c.conversation_id for c in page.conversations}

    # Each principal lists its own; the service key, every one of the tenant's.
    assert await listed(alice) == {mine}
    assert await listed(bob) == {theirs}
    assert await listed(full) == {mine, theirs, services}

    # Bob on Alice's conversation, and on one that never existed: the same refusal
    # (status, reason, message; the metadata names only the id he sent).
    missing = str(uuid.uuid4())

    def attempts(conversation_id: str) -> list[Any]:
        return [
            stub.Ask(gpb.GatewayServiceAskRequest(
                question="and in Germany?", conversation_id=conversation_id),
                metadata=bob, timeout=30),
            stub.StreamAsk(gpb.GatewayServiceStreamAskRequest(
                question="and in Germany?", conversation_id=conversation_id),
                metadata=bob, timeout=30),
            stub.DeleteConversation(gpb.GatewayServiceDeleteConversationRequest(
                conversation_id=conversation_id), metadata=bob, timeout=10),
        ]  # fmt: skip

    for alices, nobodys in zip(attempts(mine), attempts(missing), strict=True):
        code, message, reason, metadata = await _refusal(alices)
        assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "CONVERSATION_NOT_FOUND")
        assert metadata == {"conversation_id": mine}
        assert (code, message, reason) == (await _refusal(nobodys))[:3]
    # allow_missing: "deleted: false", as for a missing one; and a service key's
    # conversation is no principal's either.
    gone = await stub.DeleteConversation(
        gpb.GatewayServiceDeleteConversationRequest(conversation_id=mine, allow_missing=True),
        metadata=bob, timeout=10,
    )  # fmt: skip
    assert not gone.deleted
    code, _, reason, _ = await _refusal(stub.Ask(
        gpb.GatewayServiceAskRequest(question="and in Germany?", conversation_id=services),
        metadata=alice, timeout=30,
    ))  # fmt: skip
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "CONVERSATION_NOT_FOUND")

    # Nothing Bob tried touched it: Alice continues her conversation, and it has her two
    # turns only.
    follow = await stub.Ask(
        gpb.GatewayServiceAskRequest(question="and in Germany?", conversation_id=mine),
        metadata=alice, timeout=60,
    )  # fmt: skip
    assert follow.answer.conversation_id == mine
    turns = {
        c.conversation_id: c.turn_count
        for c in (
            await stub.ListConversations(
                gpb.GatewayServiceListConversationsRequest(), metadata=full, timeout=10
            )
        ).conversations
    }
    assert turns == {mine: 2, theirs: 1, services: 1}

    # Postgres enforces the same without the gateway's filter: the application role,
    # with the tenant set, sees Bob's conversation as Bob, every one with the full view,
    # and none with no principal view set (never wider).
    tenant = (await recorded.gateway.keys.authorize(service, Scope.ASK)).tenant
    async with await psycopg.AsyncConnection.connect(app_conninfo(pg_url)) as conn:

        async def visible(view: str | None, principal: str = "") -> set[str]:
            async with conn.transaction():
                await conn.execute("SELECT set_config('tandem.tenant_id', %s, true)", (tenant,))
                if view is not None:
                    await conn.execute(
                        "SELECT set_config('tandem.principal_view', %s, true), "
                        "set_config('tandem.principal_id', %s, true)",
                        (view, principal),
                    )
                cur = await conn.execute("SELECT conversation_id FROM gateway_conversations")
                rows = {str(r[0]) for r in await cur.fetchall()}
                cur = await conn.execute(
                    "SELECT DISTINCT conversation_id FROM gateway_conversation_turns"
                )
                assert {str(r[0]) for r in await cur.fetchall()} == rows
                return rows

        assert await visible("own", "bob") == {theirs}
        assert await visible("own", "alice") == {mine}
        assert await visible("all") == {mine, theirs, services}
        assert await visible(None) == set()
        assert await visible("everyone", "bob") == set()
        # Bob cannot write himself into Alice's conversation either.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            async with conn.transaction():
                await conn.execute("SELECT set_config('tandem.tenant_id', %s, true)", (tenant,))
                await conn.execute(
                    "SELECT set_config('tandem.principal_view', 'own', true), "
                    "set_config('tandem.principal_id', 'bob', true)"
                )
                await conn.execute(
                    "INSERT INTO gateway_conversations (tenant_id, conversation_id, "
                    "principal_id) VALUES (%s, %s, 'alice')",
                    (tenant, str(uuid.uuid4())),
                )
