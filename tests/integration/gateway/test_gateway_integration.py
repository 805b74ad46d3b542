"""The gateway in front of the real retrieval and SQL services: tenants stay apart, keys
and quotas hold, oversized input names its field, deadlines and cancellation reach the
internal calls, and nothing private reaches logs or spans."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gateway import GatewaySettings
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import sql_service_pb2 as spb
from tests.integration.gateway.stack import (
    Gateway,
    bearer,
    start_gateway,
    start_recorded_retrieval,
)
from tests.integration.retrieval.stack import new_tenant

pytestmark = pytest.mark.integration


async def _status(call) -> tuple[grpc.StatusCode, dict[str, object]]:
    """The code and the decoded rich details of a failed call."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    status = await rpc_status.aio.from_call(call)
    found: dict[str, object] = {"message": err.value.details()}
    for detail in status.details if status else []:
        for kind in (
            error_details_pb2.BadRequest,
            error_details_pb2.ErrorInfo,
            error_details_pb2.RetryInfo,
        ):
            message = kind()
            if detail.Is(message.DESCRIPTOR):
                detail.Unpack(message)
                found[kind.__name__] = message
    return err.value.code(), found


def _fields(found: dict[str, object]) -> list[str]:
    bad = found.get("BadRequest")
    assert isinstance(bad, error_details_pb2.BadRequest)
    return [v.field for v in bad.field_violations]


def _reason(found: dict[str, object]) -> str:
    info = found.get("ErrorInfo")
    assert isinstance(info, error_details_pb2.ErrorInfo)
    return str(info.reason)


async def _ingest(gateway: Gateway, key: str, *docs: rpb.DocumentInput) -> rpb.IngestSummary:
    request = gpb.GatewayServiceIngestDocumentsRequest(documents=list(docs))
    events = [e async for e in gateway.stub.IngestDocuments(request, metadata=bearer(key))]
    assert events[-1].HasField("summary")
    return events[-1].summary


SECRET_DOC = rpb.DocumentInput(
    document_id="zephyr-brief",
    title="Zephyrine account brief",
    text="Zephyrine Logistics is evaluating the Growth tier for its warehouse fleet.",
    category="account_brief",
)


async def test_one_tenant_never_sees_another_tenants_documents(gateway, pg_url):
    acme, globex = new_tenant(pg_url, "acme"), new_tenant(pg_url, "globex")
    acme_key, globex_key = await gateway.key(acme), await gateway.key(globex)
    summary = await _ingest(gateway, acme_key, SECRET_DOC)
    assert summary.documents_included == 1

    query = gpb.GatewayServiceSearchRequest(query="Zephyrine Logistics warehouse fleet")
    mine = await gateway.stub.Search(query, metadata=bearer(acme_key))
    theirs = await gateway.stub.Search(query, metadata=bearer(globex_key))
    assert [h.document_id for h in mine.hits][:1] == ["zephyr-brief"]
    assert theirs.hits == [] and not theirs.degraded

    # Another tenant cannot delete it either: for them it does not exist.
    delete = gpb.GatewayServiceDeleteDocumentRequest(document_id="zephyr-brief")
    code, found = await _status(gateway.stub.DeleteDocument(delete, metadata=bearer(globex_key)))
    assert code == grpc.StatusCode.NOT_FOUND and _reason(found) == "DOCUMENT_NOT_FOUND"
    deleted = await gateway.stub.DeleteDocument(delete, metadata=bearer(acme_key))
    assert deleted.deleted and deleted.chunks_deleted >= 1


async def test_a_tenant_field_smuggled_into_the_request_is_ignored(gateway, pg_url):
    acme, globex = new_tenant(pg_url, "acme"), new_tenant(pg_url, "globex")
    acme_key, globex_key = await gateway.key(acme), await gateway.key(globex)
    await _ingest(gateway, acme_key, SECRET_DOC)
    # Field 1 is the internal tenant_id; a client can still put it on the wire.
    smuggled = rpb.SearchRequest(tenant_id=acme, query="Zephyrine Logistics warehouse fleet")
    request = gpb.GatewayServiceSearchRequest.FromString(smuggled.SerializeToString())
    reply = await gateway.stub.Search(request, metadata=bearer(globex_key))
    assert reply.hits == []


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ((), "API_KEY_MISSING"),
        ((("authorization", "Bearer tdm_aaaaaaaaaaaaaaaa_" + "A" * 43),), "API_KEY_INVALID"),
        ((("authorization", "Basic dXNlcjpwYXNz"),), "AUTHORIZATION_MALFORMED"),
        ((("authorization", "Bearer "),), "AUTHORIZATION_MALFORMED"),
        ((("authorization", ""),), "API_KEY_MISSING"),
    ],
)
async def test_missing_or_wrong_keys_are_unauthenticated(gateway, metadata, reason):
    call = gateway.stub.Search(gpb.GatewayServiceSearchRequest(query="x"), metadata=metadata)
    code, found = await _status(call)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert _reason(found) == reason


async def test_a_revoked_key_stops_working_at_once(gateway, pg_url):
    tenant = new_tenant(pg_url, "rev")
    issued = await gateway.keys.create(tenant)
    request = gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1")
    assert (await gateway.stub.ValidateSql(request, metadata=bearer(issued.secret))).valid
    await gateway.keys.revoke(issued.key_id)
    code, found = await _status(gateway.stub.ValidateSql(request, metadata=bearer(issued.secret)))
    assert code == grpc.StatusCode.UNAUTHENTICATED and _reason(found) == "API_KEY_INVALID"


async def test_quota_is_per_tenant_with_retry_info(pg_url, retrieval, sql, telemetry_sink):
    limited = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr="127.0.0.1:9",
        retrieval_addr=retrieval.server.address,
        sql_addr=sql.address,
        settings=GatewaySettings(rate_per_s=0.5, burst=2),
    )
    try:
        busy, calm = new_tenant(pg_url, "busy"), new_tenant(pg_url, "calm")
        busy_key, calm_key = await limited.key(busy), await limited.key(calm)
        request = gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1")
        for _ in range(2):
            await limited.stub.ValidateSql(request, metadata=bearer(busy_key))
        code, found = await _status(limited.stub.ValidateSql(request, metadata=bearer(busy_key)))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _reason(found) == "QUOTA_EXCEEDED"
        retry = found["RetryInfo"]
        assert isinstance(retry, error_details_pb2.RetryInfo)
        assert 0 < retry.retry_delay.ToTimedelta().total_seconds() <= 2.0
        # Another tenant's bucket is untouched.
        assert (await limited.stub.ValidateSql(request, metadata=bearer(calm_key))).valid
    finally:
        await limited.close()


async def test_an_oversized_question_names_the_field_before_any_internal_call(gateway, pg_url):
    key = await gateway.key(new_tenant(pg_url))
    # The router is not running here: rejection happens at the edge.
    ask = gpb.GatewayServiceAskRequest(question="x" * 4001)
    code, found = await _status(gateway.stub.Ask(ask, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert _fields(found) == ["question"] and _reason(found) == "FIELD_TOO_LONG"
    search = gpb.GatewayServiceSearchRequest(query="q", top_k=500, mode=42)  # type: ignore[arg-type]
    code, found = await _status(gateway.stub.Search(search, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert _fields(found) == ["top_k", "mode"]


async def test_errors_of_internal_services_pass_through_with_details(gateway, pg_url):
    key = await gateway.key(new_tenant(pg_url))
    request = gpb.GatewayServiceRunSqlIntentRequest(
        intent=spb.SqlIntent(kind=spb.INTENT_KIND_COUNT, table="no_such_table")
    )
    code, found = await _status(gateway.stub.RunSqlIntent(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert _fields(found) == ["intent.table"] and _reason(found) == "INVALID_INTENT"


async def test_an_unreachable_engine_degrades_search_and_fails_sql_cleanly(
    pg_url, telemetry_sink, unused_tcp_port_factory
):
    dead = [f"127.0.0.1:{unused_tcp_port_factory()}" for _ in range(3)]
    lonely = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr=dead[0],
        retrieval_addr=dead[1],
        sql_addr=dead[2],
    )
    try:
        key = await lonely.key(new_tenant(pg_url))
        reply = await lonely.stub.Search(
            gpb.GatewayServiceSearchRequest(query="anything"), metadata=bearer(key), timeout=10
        )
        assert reply.degraded and reply.hits == []
        assert reply.degradations[0].component == "retrieval"
        answer = (
            await lonely.stub.Ask(
                gpb.GatewayServiceAskRequest(question="anything?"), metadata=bearer(key)
            )
        ).answer
        assert answer.degraded and answer.confidence == 0 and not answer.citations
        call = lonely.stub.ValidateSql(
            gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1"), metadata=bearer(key)
        )
        code, found = await _status(call)
        assert code == grpc.StatusCode.UNAVAILABLE
        assert _reason(found) == "DEPENDENCY_UNAVAILABLE"
        info = found["ErrorInfo"]
        assert isinstance(info, error_details_pb2.ErrorInfo)
        assert info.metadata["service"] == "sql"
        assert "127.0.0.1" not in str(found["message"])
    finally:
        await lonely.close()


async def test_deadlines_reach_the_internal_call(pg_url, embedding, sql, telemetry_sink):
    recorded = await start_recorded_retrieval(
        pg_url, embedding.server.address, telemetry_sink("retrieval").telemetry
    )
    gateway = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr="127.0.0.1:9",
        retrieval_addr=recorded.address,
        sql_addr=sql.address,
        settings=replace(
            GatewaySettings(rate_per_s=100, burst=100),
            default_deadline_s=7.0,
            ingest_deadline_s=9.0,
        ),
    )
    try:
        key = await gateway.key(new_tenant(pg_url))
        request = gpb.GatewayServiceSearchRequest(query="deadline")
        await gateway.stub.Search(request, metadata=bearer(key), timeout=3.0)
        await gateway.stub.Search(request, metadata=bearer(key))
        ingest = gpb.GatewayServiceIngestDocumentsRequest(
            documents=[rpb.DocumentInput(document_id="d", text="deadline")], dry_run=True
        )
        async for _ in gateway.stub.IngestDocuments(ingest, metadata=bearer(key)):
            pass
        with_deadline, without, streamed = recorded.seen.remaining
        # Streams get their own default (ingest: GATEWAY_INGEST_DEADLINE_S).
        assert streamed is not None and 8.0 < streamed <= 9.05
        # (gRPC rounds deadlines on the wire, hence the small slack above.)
        assert with_deadline is not None and 2.0 < with_deadline <= 3.05
        # No deadline from the caller: the gateway's default is what the engine gets.
        assert without is not None and 6.0 < without <= 7.05
    finally:
        await gateway.close()
        await recorded.close()


async def test_client_cancellation_reaches_the_internal_stream(
    pg_url, embedding, sql, telemetry_sink
):
    recorded = await start_recorded_retrieval(
        pg_url, embedding.server.address, telemetry_sink("retrieval").telemetry
    )
    gateway = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr="127.0.0.1:9",
        retrieval_addr=recorded.address,
        sql_addr=sql.address,
    )
    try:
        key = await gateway.key(new_tenant(pg_url))
        paragraph = "Renewal notes for the account team, with pricing and rollout details. " * 40
        docs = [
            rpb.DocumentInput(document_id=f"d{i}", text=f"Document {i}. {paragraph}")
            for i in range(200)
        ]
        call = gateway.stub.IngestDocuments(
            gpb.GatewayServiceIngestDocumentsRequest(documents=docs), metadata=bearer(key)
        )
        first = await call.read()
        assert isinstance(first, gpb.GatewayServiceIngestDocumentsResponse)
        assert first.HasField("progress") or first.HasField("document_finished")
        call.cancel()
        await asyncio.wait_for(recorded.seen.cancelled.wait(), timeout=10)
    finally:
        await gateway.close()
        await recorded.close()


async def test_keys_and_private_text_never_reach_logs_or_spans(
    pg_url, retrieval, sql, telemetry_sink, caplog
):
    sink = telemetry_sink("gateway")
    gateway = await start_gateway(
        pg_url,
        sink.telemetry,
        router_addr="127.0.0.1:9",
        retrieval_addr=retrieval.server.address,
        sql_addr=sql.address,
    )
    try:
        key = await gateway.key(new_tenant(pg_url))
        question = "Which account mentioned the Quetzalcoatl migration?"
        with caplog.at_level(logging.DEBUG):
            await gateway.stub.Search(
                gpb.GatewayServiceSearchRequest(query=question), metadata=bearer(key)
            )
            await _status(
                gateway.stub.Search(
                    gpb.GatewayServiceSearchRequest(query=question),
                    metadata=bearer(key[:-2] + "zz"),
                )
            )
        secret = key[len("tdm_") + 17 :]
        logged = "\n".join(f"{r.getMessage()} {getattr(r, 'fields', '')}" for r in caplog.records)
        spans = "\n".join(
            f"{s.name} {dict(s.attributes or {})} {[e.attributes for e in s.events]}"
            for s in sink.spans.get_finished_spans()
        )
        assert "tandem.v1.GatewayService/Search" in logged + spans
        for private in (secret, "Quetzalcoatl"):
            assert private not in logged
            assert private not in spans
    finally:
        await gateway.close()
