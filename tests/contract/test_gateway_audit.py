"""GatewayService.ListAuditEvents and the trail behind it, through the generated stubs in
front of the real router, retrieval and SQL servers: each public call leaves one event
naming the key, the route, the tools, the documents cited and the tables read — the
tenant's own only, newest first, paged — and each documented error. The shared errors
(no key, a wrong key, a key without `admin`, the quota) are in test_gateway_service.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from gateway import Scope
from gateway._settings import AuditSettings
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tests.contract import test_gateway_service as gateway_contract
from tests.contract.test_gateway_service import DOCS, _error, _ingest
from tests.integration.gateway.stack import bearer
from tests.integration.retrieval.stack import new_tenant

LIST_AUDIT = "tandem.v1.GatewayService/ListAuditEvents"
pytestmark = pytest.mark.integration

# The gateway contract's stack: the real router, retrieval and SQL servers.
router = gateway_contract.router
make_gateway = gateway_contract.make_gateway
stack = gateway_contract.stack


def _key_id(key: str) -> str:
    return key.split("_")[1]


async def _events(stack: Any, key: str, **filters: Any) -> list[gpb.AuditEvent]:
    """Every event the filters select, paging through one event at a time."""
    await stack.gateway.audit.flush()
    found: list[gpb.AuditEvent] = []
    request = gpb.GatewayServiceListAuditEventsRequest(page_size=1, **filters)
    while True:
        page = await stack.stub.ListAuditEvents(request, metadata=bearer(key))
        assert len(page.events) <= 1
        found.extend(page.events)
        if not page.next_page_token:
            return found
        request.page_token = page.next_page_token


@pytest.mark.rpc(LIST_AUDIT)
async def test_each_call_is_one_event_naming_key_route_tools_documents_and_tables(stack):
    tenant = new_tenant(stack.pg_url, "audit")
    key = await stack.gateway.key(tenant)
    asker = await stack.gateway.key(tenant, scopes=(Scope.ASK,))
    await _ingest(stack, key)
    search = await stack.stub.Search(
        gpb.GatewayServiceSearchRequest(query="refund within 30 days", top_k=2),
        metadata=bearer(asker),
    )
    answer = (
        await stack.stub.Ask(
            gpb.GatewayServiceAskRequest(question="What is the refund policy?",
                                         mode=qpb.ASK_MODE_RETRIEVE),
            metadata=bearer(asker),
        )
    ).answer  # fmt: skip
    sql = await stack.stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question="How many companies are there?"),
        metadata=bearer(asker),
    )
    assert sql.outcome == spb.SQL_ASK_OUTCOME_ANSWERED
    # Refused for want of a scope: still recorded, naming the key that tried.
    code, _ = await _error(
        stack.stub.DeleteDocument(
            gpb.GatewayServiceDeleteDocumentRequest(document_id="refunds"), metadata=bearer(asker)
        )
    )
    assert code == grpc.StatusCode.PERMISSION_DENIED
    # Another tenant's calls never show.
    await stack.stub.Search(
        gpb.GatewayServiceSearchRequest(query="refund"), metadata=bearer(await stack.key())
    )

    events = await _events(stack, key)
    assert [e.rpc for e in events] == [
        "DeleteDocument", "AskSql", "Ask", "Search", "IngestDocuments",
    ]  # fmt: skip
    assert [e.event_id for e in events] == sorted((e.event_id for e in events), reverse=True)
    denied, asked_sql, asked, searched, ingested = events
    assert (denied.status, denied.reason) == ("PERMISSION_DENIED", "API_KEY_SCOPE_MISSING")
    assert denied.key_id == _key_id(asker) and ingested.key_id == _key_id(key)
    assert asked_sql.status == "OK" and asked_sql.answer_outcome == "SQL_ASK_OUTCOME_ANSWERED"
    assert list(asked_sql.tables_read) == list(sql.result.tables_used)
    assert any("companies" in t for t in asked_sql.tables_read)
    assert asked.route == "ROUTE_RETRIEVE" and asked.request_id == answer.request_id
    assert asked.answer_outcome == qpb.AnswerOutcome.Name(answer.outcome)
    assert set(asked.document_ids) == {c.document_id for c in answer.citations} == {"refunds"}
    assert list(searched.document_ids) == list(dict.fromkeys(h.document_id for h in search.hits))
    assert set(ingested.document_ids) == {d.document_id for d in DOCS}
    assert all(e.trace_id and e.event_time.seconds and e.principal_id == "" for e in events)
    # The filters (the listings themselves are audited too).
    mine = await _events(stack, key, key_id=_key_id(key))
    assert [e.rpc for e in mine if e.rpc != "ListAuditEvents"] == ["IngestDocuments"]
    assert [e.rpc for e in await _events(stack, key, outcome="PERMISSION_DENIED")] == [
        "DeleteDocument"
    ]
    assert [e.rpc for e in await _events(stack, key, rpc="Search")] == ["Search"]
    future = timestamp_pb2.Timestamp()
    future.FromDatetime(datetime.now(UTC) + timedelta(hours=1))
    assert await _events(stack, key, start_time=future) == []


@pytest.mark.rpc(LIST_AUDIT)
async def test_an_ask_through_the_sql_route_names_its_tools_and_tables(stack):
    tenant = new_tenant(stack.pg_url, "audit")
    key = await stack.gateway.key(tenant)
    answer = (
        await stack.stub.Ask(
            gpb.GatewayServiceAskRequest(question="How many companies are in Germany?"),
            metadata=bearer(key), timeout=30,
        )
    ).answer  # fmt: skip
    assert answer.route == qpb.ROUTE_SQL
    (event,) = await _events(stack, key, rpc="Ask")
    assert event.route == "ROUTE_SQL" and event.tools
    assert all(t.startswith("TOOL_SQL_") for t in event.tools)
    assert (
        set(event.tables_read) == {t for r in answer.sql_results for t in r.result.tables_used}
        and event.tables_read
    )


def _at(days: int) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=days))
    return stamp


@pytest.mark.rpc(LIST_AUDIT)
@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (gpb.GatewayServiceListAuditEventsRequest(page_size=-1), "page_size"),
        (gpb.GatewayServiceListAuditEventsRequest(page_token="not-ours"), "page_token"),
        (gpb.GatewayServiceListAuditEventsRequest(rpc="DropTables"), "rpc"),
        (gpb.GatewayServiceListAuditEventsRequest(outcome="FINE"), "outcome"),
        (gpb.GatewayServiceListAuditEventsRequest(key_id="k" * 257), "key_id"),
        (gpb.GatewayServiceListAuditEventsRequest(principal_id="a\x00b"), "principal_id"),
        (gpb.GatewayServiceListAuditEventsRequest(start_time=_at(2), end_time=_at(1)), "end_time"),
    ],
    ids=["page_size", "page_token", "rpc", "outcome", "key_id", "principal_id", "end_time"],
)
async def test_list_audit_events_names_the_invalid_field(stack, request_, field):
    key = await stack.key()
    code, found = await _error(stack.stub.ListAuditEvents(request_, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["fields"][:1] == [field]


@pytest.mark.rpc(LIST_AUDIT)
async def test_a_page_token_works_only_with_the_filters_it_was_issued_for(stack):
    key = await stack.key()
    for _ in range(2):
        await stack.stub.ListAuditEvents(gpb.GatewayServiceListAuditEventsRequest(),
                                         metadata=bearer(key))  # fmt: skip
    await stack.gateway.audit.flush()
    first = await stack.stub.ListAuditEvents(
        gpb.GatewayServiceListAuditEventsRequest(page_size=1), metadata=bearer(key)
    )
    assert first.next_page_token
    changed = gpb.GatewayServiceListAuditEventsRequest(
        page_size=1, page_token=first.next_page_token, rpc="Ask"
    )
    code, found = await _error(stack.stub.ListAuditEvents(changed, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["fields"] == ["page_token"]


@pytest.mark.rpc(LIST_AUDIT)
async def test_with_the_trail_off_listing_is_failed_precondition(make_gateway, pg_url):
    gateway = await make_gateway(audit=AuditSettings(enabled=False))
    key = await gateway.key(new_tenant(pg_url, "audit"))
    code, found = await _error(
        gateway.stub.ListAuditEvents(gpb.GatewayServiceListAuditEventsRequest(),
                                     metadata=bearer(key))
    )  # fmt: skip
    assert code == grpc.StatusCode.FAILED_PRECONDITION and found["reason"] == "AUDIT_DISABLED"
