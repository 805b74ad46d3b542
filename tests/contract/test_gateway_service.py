"""GatewayService through its generated stubs, in front of the real router, retrieval
and SQL servers on loopback (embedded Postgres, real embedding model): every RPC, its
success, and every documented error — UNAUTHENTICATED, RESOURCE_EXHAUSTED with
RetryInfo, INVALID_ARGUMENT naming the field, and the internal errors passed through."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import psycopg
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from gateway import GatewaySettings, Limits, Scope, UploadSettings
from services.common import Principal
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tests.documents import padded_pdf
from tests.integration.gateway.stack import (
    Gateway,
    Router,
    bearer,
    start_gateway,
    start_router,
)
from tests.integration.retrieval.stack import (
    Retrieval,
    held_document,
    new_tenant,
    start_retrieval,
    stored_documents,
)
from tests.scopes import PINNED_RPC_SCOPES

ASK = "tandem.v1.GatewayService/Ask"
STREAM_ASK = "tandem.v1.GatewayService/StreamAsk"
SEARCH = "tandem.v1.GatewayService/Search"
ASK_SQL = "tandem.v1.GatewayService/AskSql"
RUN_INTENT = "tandem.v1.GatewayService/RunSqlIntent"
VALIDATE = "tandem.v1.GatewayService/ValidateSql"
INGEST = "tandem.v1.GatewayService/IngestDocuments"
DELETE = "tandem.v1.GatewayService/DeleteDocument"
UPDATE_ACL = "tandem.v1.GatewayService/UpdateDocumentAcl"
DESCRIBE = "tandem.v1.GatewayService/DescribeSchema"
LIST_CONVERSATIONS = "tandem.v1.GatewayService/ListConversations"
DELETE_CONVERSATION = "tandem.v1.GatewayService/DeleteConversation"
UPLOAD = "tandem.v1.GatewayService/UploadDocument"
LIST_AUDIT = "tandem.v1.GatewayService/ListAuditEvents"
GET_CALLER = "tandem.v1.GatewayService/GetCaller"

pytestmark = pytest.mark.integration


@dataclass
class Stack:
    gateway: Gateway
    retrieval: Retrieval
    pg_url: str

    @property
    def stub(self) -> Any:
        return self.gateway.stub

    async def key(self, prefix: str = "t") -> str:
        return await self.gateway.key(new_tenant(self.pg_url, prefix))


@pytest.fixture
async def router(retrieval, sql, telemetry_sink) -> AsyncIterator[Router]:
    service = await start_router(
        retrieval.server.address, sql.address, telemetry_sink("router").telemetry
    )
    yield service
    await service.close()


async def _gateway(pg_url, retrieval, sql, router, telemetry_sink, **settings: Any) -> Gateway:
    return await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr=router.address,
        retrieval_addr=retrieval.server.address,
        sql_addr=sql.address,
        settings=GatewaySettings(**{"rate_per_s": 1000.0, "burst": 1000.0, **settings}),
    )


@pytest.fixture
async def make_gateway(pg_url, retrieval, sql, router, telemetry_sink) -> AsyncIterator[Any]:
    """``await make_gateway(**settings)``: a gateway over the shared backends."""
    made: list[Gateway] = []

    async def make(**settings: Any) -> Gateway:
        made.append(await _gateway(pg_url, retrieval, sql, router, telemetry_sink, **settings))
        return made[-1]

    yield make
    for gateway in made:
        await gateway.close()


@pytest.fixture
async def stack(make_gateway, retrieval, pg_url) -> Stack:
    return Stack(await make_gateway(), retrieval, pg_url)


async def _error(call: Any, awaitable: Any = None) -> tuple[grpc.StatusCode, dict[str, Any]]:
    """Await the call (or ``awaitable``) and decode the rich status it failed with."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await (call if awaitable is None else awaitable)
    status = await rpc_status.aio.from_call(call)
    found: dict[str, Any] = {"message": err.value.details(), "fields": [], "reason": ""}
    for detail in status.details if status else []:
        bad = error_details_pb2.BadRequest()
        info = error_details_pb2.ErrorInfo()
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(bad):
            found["fields"] = [v.field for v in bad.field_violations]
        elif detail.Unpack(info):
            found["reason"] = info.reason
            found["metadata"] = dict(info.metadata)
        elif detail.Unpack(retry):
            found["retry_s"] = retry.retry_delay.ToTimedelta().total_seconds()
        else:
            checkpoint = rpb.IngestCheckpoint()
            if detail.Unpack(checkpoint):
                found["checkpoint"] = checkpoint
    return err.value.code(), found


async def _drain(call: Any) -> list[Any]:
    return [event async for event in call]


def _invoke(stub: Any, method: str, request: Any, **kw: Any) -> tuple[Any, Any]:
    """Start the call; return it and what to await for its outcome (streams drain)."""
    call = getattr(stub, method)(request, **kw)
    streams = ("StreamAsk", "IngestDocuments", "UploadDocument")
    return call, (_drain(call) if method in streams else call)


def _header(**document: Any) -> gpb.GatewayServiceUploadDocumentRequest:
    return gpb.GatewayServiceUploadDocumentRequest(
        header=gpb.GatewayServiceUploadHeader(document=rpb.DocumentInput(**document))
    )


def _chunk(data: bytes) -> gpb.GatewayServiceUploadDocumentRequest:
    return gpb.GatewayServiceUploadDocumentRequest(chunk=data)


# One valid request per RPC, and one invalid request with the field it must name.
VALID: dict[str, tuple[str, Any]] = {
    ASK: ("Ask", gpb.GatewayServiceAskRequest(question="What is the refund policy?")),
    STREAM_ASK: ("StreamAsk", gpb.GatewayServiceStreamAskRequest(question="Refund policy?")),
    SEARCH: ("Search", gpb.GatewayServiceSearchRequest(query="refund policy")),
    ASK_SQL: ("AskSql", gpb.GatewayServiceAskSqlRequest(question="How many companies are there?")),
    RUN_INTENT: ("RunSqlIntent", gpb.GatewayServiceRunSqlIntentRequest(
        intent=spb.SqlIntent(kind=spb.INTENT_KIND_COUNT, table="companies"))),
    VALIDATE: ("ValidateSql", gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1")),
    INGEST: ("IngestDocuments", gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id="d", text="Refunds within 30 days.")],
        dry_run=True)),
    DELETE: ("DeleteDocument", gpb.GatewayServiceDeleteDocumentRequest(
        document_id="never-was", allow_missing=True)),
    UPDATE_ACL: ("UpdateDocumentAcl", gpb.GatewayServiceUpdateDocumentAclRequest(
        document_id="never-was", acl=rpb.DocumentAcl(groups=["hr"]), allow_missing=True)),
    DESCRIBE: ("DescribeSchema", gpb.GatewayServiceDescribeSchemaRequest()),
    LIST_CONVERSATIONS: ("ListConversations", gpb.GatewayServiceListConversationsRequest()),
    DELETE_CONVERSATION: ("DeleteConversation", gpb.GatewayServiceDeleteConversationRequest(
        conversation_id="00000000-0000-4000-8000-000000000000", allow_missing=True)),
    UPLOAD: ("UploadDocument", [
        gpb.GatewayServiceUploadDocumentRequest(header=gpb.GatewayServiceUploadHeader(
            document=rpb.DocumentInput(document_id="u", file_name="refunds.txt"),
            dry_run=True)),
        gpb.GatewayServiceUploadDocumentRequest(chunk=b"Refunds within 30 days.")]),
    LIST_AUDIT: ("ListAuditEvents", gpb.GatewayServiceListAuditEventsRequest()),
    GET_CALLER: ("GetCaller", gpb.GatewayServiceGetCallerRequest()),
}  # fmt: skip

INVALID: dict[str, tuple[Any, str]] = {
    ASK: (gpb.GatewayServiceAskRequest(question="x" * 4001), "question"),
    STREAM_ASK: (gpb.GatewayServiceStreamAskRequest(
        question="q", options=qpb.AskOptions(top_k=51)), "options.top_k"),
    SEARCH: (gpb.GatewayServiceSearchRequest(query=""), "query"),
    ASK_SQL: (gpb.GatewayServiceAskSqlRequest(question="q", max_rows=-1), "max_rows"),
    RUN_INTENT: (gpb.GatewayServiceRunSqlIntentRequest(
        intent=spb.SqlIntent(table="companies")), "intent.kind"),
    VALIDATE: (gpb.GatewayServiceValidateSqlRequest(sql="x" * 20_001), "sql"),
    INGEST: (gpb.GatewayServiceIngestDocumentsRequest(), "documents"),
    DELETE: (gpb.GatewayServiceDeleteDocumentRequest(), "document_id"),
    UPDATE_ACL: (gpb.GatewayServiceUpdateDocumentAclRequest(
        document_id="d", acl=rpb.DocumentAcl(groups=["hr", " "])), "acl.groups[1]"),
    DESCRIBE: (gpb.GatewayServiceDescribeSchemaRequest(max_chars=100_001), "max_chars"),
    LIST_CONVERSATIONS: (gpb.GatewayServiceListConversationsRequest(page_size=1001), "page_size"),
    DELETE_CONVERSATION: (gpb.GatewayServiceDeleteConversationRequest(
        conversation_id="not-a-uuid"), "conversation_id"),
    UPLOAD: ([gpb.GatewayServiceUploadDocumentRequest(chunk=b"no header first")], "header"),
    LIST_AUDIT: (gpb.GatewayServiceListAuditEventsRequest(page_size=1001), "page_size"),
}  # fmt: skip

ALL = [
    ASK, STREAM_ASK, SEARCH, ASK_SQL, RUN_INTENT, VALIDATE, INGEST, DELETE, UPDATE_ACL,
    DESCRIBE, LIST_CONVERSATIONS, DELETE_CONVERSATION, UPLOAD, LIST_AUDIT, GET_CALLER,
]  # fmt: skip


def _each(rpcs: list[str] = ALL) -> list[Any]:
    return [pytest.param(name, marks=pytest.mark.rpc(name), id=name.split("/")[1]) for name in rpcs]


# -- shared errors, for every RPC -----------------------------------------------------


@pytest.mark.parametrize("rpc", _each())
async def test_without_a_key_every_rpc_is_unauthenticated(stack, rpc):
    method, request = VALID[rpc]
    call, outcome = _invoke(stack.stub, method, request)
    code, found = await _error(call, outcome)
    assert code == grpc.StatusCode.UNAUTHENTICATED and found["reason"] == "API_KEY_MISSING"


@pytest.mark.parametrize("rpc", _each())
async def test_a_wrong_key_is_unauthenticated(stack, rpc):
    method, request = VALID[rpc]
    forged = "tdm_" + "a" * 16 + "_" + "B" * 43
    call, outcome = _invoke(stack.stub, method, request, metadata=bearer(forged))
    code, found = await _error(call, outcome)
    assert code == grpc.StatusCode.UNAUTHENTICATED and found["reason"] == "API_KEY_INVALID"


@pytest.mark.parametrize("rpc", _each())
@pytest.mark.parametrize("form", ["bearer {key}", "Bearer  {key}", "{key}", "twice"])
async def test_an_authorization_header_in_another_form_is_unauthenticated_naming_it(
    stack, rpc, form
):
    method, request = VALID[rpc]
    key = await stack.key()
    metadata = (
        (*bearer(key), *bearer(key)) if form == "twice"
        else (("authorization", form.format(key=key)),)
    )  # fmt: skip
    call, outcome = _invoke(stack.stub, method, request, metadata=metadata)
    code, found = await _error(call, outcome)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert found["reason"] == "AUTHORIZATION_MALFORMED"
    assert "`authorization: Bearer <key>`" in found["message"]


def test_the_scope_tests_call_every_rpc_of_the_pinned_table():
    # This module's scope test and the answer-memory one together call every public RPC
    # with a key lacking its pinned scope: a new RPC is not left out.
    from tests.contract.test_gateway_sql_memory import VALID as MEMORY_VALID

    called = [VALID[rpc][0] for rpc in ALL] + [method for method, _ in MEMORY_VALID.values()]
    assert sorted(called) == sorted(PINNED_RPC_SCOPES)


@pytest.mark.parametrize("rpc", _each())
async def test_a_key_without_the_rpcs_scope_is_refused_naming_it(stack, rpc):
    # Each key holds scopes (ask, ingest, teach, admin); every RPC needs one. The attacker
    # here is the tenant's own narrow key: an ask-only key cannot ingest or delete.
    method, request = VALID[rpc]
    needed = Scope(PINNED_RPC_SCOPES[method])  # by hand, not read from the gateway
    tenant = new_tenant(stack.pg_url, "scope")
    others = tuple(s for s in Scope if s is not needed)
    narrow = await stack.gateway.key(tenant, scopes=others)
    call, outcome = _invoke(stack.stub, method, request, metadata=bearer(narrow))
    code, found = await _error(call, outcome)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert found["reason"] == "API_KEY_SCOPE_MISSING"
    assert found["metadata"] == {"scope": needed.value}
    assert f"'{needed.value}' scope" in found["message"]
    # The same tenant's key holding just that scope is served.
    exact = await stack.gateway.key(tenant, scopes=(needed,))
    _, outcome = _invoke(stack.stub, method, request, metadata=bearer(exact), timeout=60)
    assert await outcome is not None


def test_an_rpc_without_an_invalid_request_takes_no_fields():
    # GetCaller's request is empty (the key is the request): nothing to name. Any RPC left
    # out of INVALID must stay that way, or its validation goes untested.
    for rpc in set(ALL) - set(INVALID):
        assert not VALID[rpc][1].DESCRIPTOR.fields, rpc


@pytest.mark.parametrize("rpc", _each([rpc for rpc in ALL if rpc in INVALID]))
async def test_each_rpc_names_the_invalid_field(stack, rpc):
    key = await stack.key()
    request, field = INVALID[rpc]
    call, outcome = _invoke(stack.stub, VALID[rpc][0], request, metadata=bearer(key))
    code, found = await _error(call, outcome)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"][:1] == [field]


@pytest.mark.parametrize("rpc", _each())
async def test_past_the_quota_each_rpc_is_resource_exhausted_with_retry_info(
    make_gateway, pg_url, rpc
):
    gateway = await make_gateway(rate_per_s=0.01, burst=1)
    key = await gateway.key(new_tenant(pg_url))
    method, valid = VALID[rpc]
    # The first call spends the only token (even an invalid call costs one).
    if rpc in INVALID:
        first, outcome = _invoke(gateway.stub, method, INVALID[rpc][0], metadata=bearer(key))
        assert (await _error(first, outcome))[0] == grpc.StatusCode.INVALID_ARGUMENT
    else:
        _, outcome = _invoke(gateway.stub, method, valid, metadata=bearer(key), timeout=60)
        assert await outcome is not None
    call, outcome = _invoke(gateway.stub, method, VALID[rpc][1], metadata=bearer(key))
    code, found = await _error(call, outcome)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert found["reason"] == "QUOTA_EXCEEDED" and found["retry_s"] > 1


@pytest.mark.parametrize("rpc", _each([SEARCH, ASK_SQL, VALIDATE, DESCRIBE]))
async def test_a_deadline_too_short_is_deadline_exceeded(stack, rpc):
    key = await stack.key()
    method, request = VALID[rpc]
    call, outcome = _invoke(stack.stub, method, request, metadata=bearer(key), timeout=0.0001)
    code, _ = await _error(call, outcome)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED


# -- success and the RPC-specific errors ----------------------------------------------


DOCS = [
    rpb.DocumentInput(
        document_id="refunds",
        title="Refund policy",
        category="policy",
        text="# Refunds\n\nCustomers may cancel within 30 days for a full refund.",
        content_type=rpb.CONTENT_TYPE_MARKDOWN,
    ),
    rpb.DocumentInput(
        document_id="sso", title="Growth tier", text="The Growth tier adds single sign-on."
    ),
]


async def _ingest(stack: Stack, key: str) -> list[gpb.GatewayServiceIngestDocumentsResponse]:
    request = gpb.GatewayServiceIngestDocumentsRequest(documents=DOCS)
    return await _drain(stack.stub.IngestDocuments(request, metadata=bearer(key)))


@pytest.mark.rpc(INGEST)
async def test_ingest_streams_progress_and_ends_with_one_summary(stack):
    key = await stack.key()
    events = await _ingest(stack, key)
    assert events[-1].HasField("summary")
    assert sum(e.HasField("summary") for e in events) == 1
    summary = events[-1].summary
    assert summary.documents_included == 2 and summary.chunks_written >= 2
    again = await _ingest(stack, key)
    assert again[-1].summary.documents_unchanged == 2


@pytest.mark.rpc(INGEST)
async def test_ingest_refuses_an_oversized_batch_and_secret_keep_kinds(stack):
    key = await stack.key()
    many = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id=f"d{i}", text="x") for i in range(257)]
    )
    call = stack.stub.IngestDocuments(many, metadata=bearer(key))
    code, found = await _error(call, _drain(call))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"] == ["documents"] and found["reason"] == "BATCH_TOO_LARGE"
    secret_kind = gpb.GatewayServiceIngestDocumentsRequest(
        documents=DOCS[:1],
        redaction_policy=rpb.RedactionPolicy(keep_kinds=[rpb.REDACTION_KIND_API_KEY]),
    )
    call = stack.stub.IngestDocuments(secret_kind, metadata=bearer(key))
    code, found = await _error(call, _drain(call))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"] == ["redaction_policy.keep_kinds[0]"]


# A control character in one text field per RPC, and the field it must name.
CONTROL: dict[str, tuple[Any, str]] = {
    ASK: (gpb.GatewayServiceAskRequest(question="refund\x00policy"), "question"),
    STREAM_ASK: (gpb.GatewayServiceStreamAskRequest(
        question="q", options=qpb.AskOptions(database="w\x1b")), "options.database"),
    SEARCH: (gpb.GatewayServiceSearchRequest(
        query="q", filter=rpb.SearchFilter(categories=["a\x00"])), "filter.categories[0]"),
    ASK_SQL: (gpb.GatewayServiceAskSqlRequest(question="q", database="a\x00"), "database"),
    RUN_INTENT: (gpb.GatewayServiceRunSqlIntentRequest(intent=spb.SqlIntent(
        kind=spb.INTENT_KIND_COUNT, table="comp\x00anies")), "intent.table"),
    VALIDATE: (gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1\x00"), "sql"),
    DELETE: (gpb.GatewayServiceDeleteDocumentRequest(document_id="d\x7f"), "document_id"),
    UPDATE_ACL: (gpb.GatewayServiceUpdateDocumentAclRequest(
        document_id="d", acl=rpb.DocumentAcl(principals=["a\x00"])), "acl.principals[0]"),
    DESCRIBE: (gpb.GatewayServiceDescribeSchemaRequest(tables=["a\x00"]), "tables[0]"),
    LIST_CONVERSATIONS: (
        gpb.GatewayServiceListConversationsRequest(page_token="\x00"), "page_token"),
}  # fmt: skip


@pytest.mark.parametrize("rpc", _each(list(CONTROL)))
async def test_a_control_character_is_invalid_character_naming_the_field(stack, rpc):
    key = await stack.key()
    request, field = CONTROL[rpc]
    call, outcome = _invoke(stack.stub, VALID[rpc][0], request, metadata=bearer(key))
    code, found = await _error(call, outcome)
    assert (code, found["reason"], found["fields"]) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_CHARACTER",
        [field],
    )


@pytest.mark.rpc(INGEST)
async def test_a_document_with_a_control_character_fails_alone_naming_the_field(stack):
    key = await stack.key()
    request = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[DOCS[0], rpb.DocumentInput(document_id="bad", uri="a\x00", text="text")]
    )
    events = await _drain(stack.stub.IngestDocuments(request, metadata=bearer(key)))
    [failed] = [d for d in events[-1].summary.documents if d.HasField("error")]
    assert (failed.error.reason, [v.field for v in failed.error.field_violations]) == (
        "INVALID_CHARACTER",
        ["documents[1].uri"],
    )


@pytest.mark.rpc(INGEST)
async def test_an_ingest_cut_midway_names_the_documents_it_committed(
    pg_url, embedding, sql, router, telemetry_sink
):
    """Issue 46 item 7: the retrieval service goes away in the middle of an ingest (as its
    connection did, cut at its maximum age): the caller gets UNAVAILABLE with an
    IngestCheckpoint naming the two documents committed, and their events had come."""
    own = await start_retrieval(
        pg_url, embedding.server.address, telemetry_sink("retrieval").telemetry
    )
    gateway = await _gateway(pg_url, own, sql, router, telemetry_sink)
    try:
        tenant = new_tenant(pg_url)
        key = await gateway.key(tenant)
        held = rpb.DocumentInput(document_id="held", text="The stored copy.")
        await _drain(gateway.stub.IngestDocuments(
            gpb.GatewayServiceIngestDocumentsRequest(documents=[held]), metadata=bearer(key)
        ))  # fmt: skip
        before = stored_documents(pg_url, tenant)
        docs = [rpb.DocumentInput(document_id=n, text=f"The {n} note.") for n in ("a", "b")]
        docs += [
            rpb.DocumentInput(document_id="held", text="A changed note, held at its write."),
            rpb.DocumentInput(document_id="d", text="Never reached."),
        ]
        finished: list[rpb.DocumentResult] = []
        with held_document(pg_url, tenant, "held"):
            call = gateway.stub.IngestDocuments(
                gpb.GatewayServiceIngestDocumentsRequest(documents=docs), metadata=bearer(key)
            )

            async def cut_after_two() -> None:
                async for event in call:
                    if event.HasField("document_finished"):
                        finished.append(event.document_finished)
                        if len(finished) == 2:
                            await own.server.stop(0)

            code, found = await _error(call, cut_after_two())
        assert (code, found["reason"]) == (
            grpc.StatusCode.UNAVAILABLE,
            "DEPENDENCY_UNAVAILABLE",
        ), found
        checkpoint = found["checkpoint"]
        assert checkpoint.documents_total == 4
        assert [(d.index, d.document_id) for d in checkpoint.documents] == [(0, "a"), (1, "b")]
        assert [d.document_id for d in finished] == ["a", "b"]
        stored = stored_documents(pg_url, tenant)
        assert set(stored) == {"a", "b", "held"} and stored["held"] == before["held"]
    finally:
        await gateway.close()
        await own.close()


@pytest.mark.rpc(INGEST)
async def test_a_bad_document_fails_alone(stack):
    key = await stack.key()
    request = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[DOCS[0], rpb.DocumentInput(document_id="", text="no id")]
    )
    events = await _drain(stack.stub.IngestDocuments(request, metadata=bearer(key)))
    summary = events[-1].summary
    assert summary.documents_included == 1 and summary.documents_failed == 1
    failed = [d for d in summary.documents if d.HasField("error")]
    assert failed[0].error.field_violations[0].field == "documents[1].document_id"


@pytest.mark.rpc(SEARCH)
async def test_search_finds_the_tenants_documents_only(stack):
    key, other = await stack.key(), await stack.key()
    await _ingest(stack, key)
    request = gpb.GatewayServiceSearchRequest(query="cancel within 30 days refund", top_k=3)
    mine = await stack.stub.Search(request, metadata=bearer(key))
    assert mine.hits[0].document_id == "refunds" and mine.hits[0].title == "Refund policy"
    assert mine.mode == rpb.SEARCH_MODE_HYBRID and not mine.degraded
    assert mine.hits[0].dense_rank >= 1 or mine.hits[0].sparse_rank >= 1
    theirs = await stack.stub.Search(request, metadata=bearer(other))
    assert list(theirs.hits) == []


@pytest.mark.rpc(SEARCH)
async def test_search_refuses_unknown_enums_and_out_of_range_numbers(stack):
    key = await stack.key()
    request = gpb.GatewayServiceSearchRequest(
        query="q",
        mode=9,  # type: ignore[arg-type]
        candidate_depth=5000,
        filter=rpb.SearchFilter(document_ids=[""]),
    )
    code, found = await _error(stack.stub.Search(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(found["fields"]) == {"mode", "candidate_depth", "filter.document_ids[0]"}


@pytest.mark.rpc(DELETE)
async def test_delete_removes_a_document_and_reports_a_missing_one(stack):
    key = await stack.key()
    await _ingest(stack, key)
    request = gpb.GatewayServiceDeleteDocumentRequest(document_id="sso")
    deleted = await stack.stub.DeleteDocument(request, metadata=bearer(key))
    assert deleted.deleted and deleted.document_id == "sso" and deleted.chunks_deleted >= 1
    code, found = await _error(stack.stub.DeleteDocument(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.NOT_FOUND and found["reason"] == "DOCUMENT_NOT_FOUND"
    allowed = gpb.GatewayServiceDeleteDocumentRequest(document_id="sso", allow_missing=True)
    assert not (await stack.stub.DeleteDocument(allowed, metadata=bearer(key))).deleted


@pytest.mark.rpc(UPDATE_ACL)
async def test_update_acl_changes_rights_and_reports_a_missing_document(stack):
    key = await stack.key()
    await _ingest(stack, key)
    request = gpb.GatewayServiceUpdateDocumentAclRequest(
        document_id="sso", acl=rpb.DocumentAcl(groups=["it", "it"], principals=["ann"])
    )
    reply = await stack.stub.UpdateDocumentAcl(request, metadata=bearer(key))
    assert (reply.document_id, reply.updated) == ("sso", True) and reply.chunks_updated >= 1
    assert (list(reply.acl.groups), list(reply.acl.principals)) == (["it"], ["ann"])
    missing = gpb.GatewayServiceUpdateDocumentAclRequest(document_id="never-was")
    code, found = await _error(stack.stub.UpdateDocumentAcl(missing, metadata=bearer(key)))
    assert code == grpc.StatusCode.NOT_FOUND and found["reason"] == "DOCUMENT_NOT_FOUND"
    missing.allow_missing = True
    assert not (await stack.stub.UpdateDocumentAcl(missing, metadata=bearer(key))).updated
    too_many = gpb.GatewayServiceUpdateDocumentAclRequest(
        document_id="sso", acl=rpb.DocumentAcl(principals=[f"p{i}" for i in range(257)])
    )
    code, found = await _error(stack.stub.UpdateDocumentAcl(too_many, metadata=bearer(key)))
    assert (code, found["fields"]) == (grpc.StatusCode.INVALID_ARGUMENT, ["acl.principals"])


@pytest.mark.rpc(ASK_SQL)
async def test_ask_sql_answers_with_a_statement_and_rows(stack):
    key = await stack.key()
    reply = await stack.stub.AskSql(VALID[ASK_SQL][1], metadata=bearer(key))
    assert reply.outcome == spb.SQL_ASK_OUTCOME_ANSWERED
    assert "companies" in reply.result.tables_used[0] and reply.result.row_count == 1


@pytest.mark.rpc(ASK_SQL)
async def test_ask_sql_with_instructions_answers(stack):
    key = await stack.key()
    request = gpb.GatewayServiceAskSqlRequest(
        question="How many companies are there?",
        instructions="active means status = 'active'. " + "z" * 3960,
    )
    assert len(request.instructions) <= 4000
    reply = await stack.stub.AskSql(request, metadata=bearer(key))
    assert reply.outcome == spb.SQL_ASK_OUTCOME_ANSWERED


@pytest.mark.rpc(ASK_SQL)
async def test_ask_sql_refuses_instructions_over_the_edge_limit(stack):
    key = await stack.key()
    request = gpb.GatewayServiceAskSqlRequest(question="How many?", instructions="x" * 4001)
    code, found = await _error(stack.stub.AskSql(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"] == ["instructions"] and found["reason"] == "FIELD_TOO_LONG"


@pytest.mark.rpc(ASK_SQL)
async def test_ask_sql_forwards_instructions_to_the_sql_service(make_gateway, pg_url):
    # An edge looser than the SQL service: the service's own refusal, naming the field,
    # proves the instructions crossed the gateway.
    gateway = await make_gateway(limits=Limits(max_sql_instructions_chars=10_000))
    key = await gateway.key(new_tenant(pg_url))
    request = gpb.GatewayServiceAskSqlRequest(question="How many?", instructions="x" * 4001)
    code, found = await _error(gateway.stub.AskSql(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"] == ["instructions"] and found["reason"] == "INVALID_ARGUMENT"


@pytest.mark.rpc(ASK_SQL)
async def test_ask_sql_passes_an_unknown_database_through(stack):
    key = await stack.key()
    request = gpb.GatewayServiceAskSqlRequest(question="How many?", database="nowhere")
    code, found = await _error(stack.stub.AskSql(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"] == ["database"] and found["reason"] == "UNKNOWN_DATABASE"


@pytest.mark.rpc(RUN_INTENT)
async def test_run_intent_compiles_and_runs(stack):
    key = await stack.key()
    reply = await stack.stub.RunSqlIntent(VALID[RUN_INTENT][1], metadata=bearer(key))
    assert reply.result.row_count == 1 and "count" in reply.result.sql.lower()


@pytest.mark.rpc(RUN_INTENT)
async def test_run_intent_names_the_intent_field_the_engine_refused(stack):
    key = await stack.key()
    request = gpb.GatewayServiceRunSqlIntentRequest(
        intent=spb.SqlIntent(kind=spb.INTENT_KIND_LIST, table="companies", columns=["nope"])
    )
    code, found = await _error(stack.stub.RunSqlIntent(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"] == ["intent.columns[0]"] and found["reason"] == "INVALID_INTENT"
    missing = gpb.GatewayServiceRunSqlIntentRequest()
    code, found = await _error(stack.stub.RunSqlIntent(missing, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["fields"] == ["intent"]


@pytest.mark.rpc(VALIDATE)
async def test_validate_sql_reports_violations_without_running(stack):
    key = await stack.key()
    ok = await stack.stub.ValidateSql(
        gpb.GatewayServiceValidateSqlRequest(sql="SELECT name FROM companies LIMIT 5"),
        metadata=bearer(key),
    )
    assert ok.valid and ok.tables_used
    refused = await stack.stub.ValidateSql(
        gpb.GatewayServiceValidateSqlRequest(sql="DELETE FROM companies"),
        metadata=bearer(key),
    )
    assert not refused.valid
    assert refused.violations[0].rule == spb.SQL_GATE_RULE_QUERY_ROOT


@pytest.mark.rpc(DESCRIBE)
async def test_describe_schema_returns_the_catalog_and_names_unknown_tables(stack):
    key = await stack.key()
    reply = await stack.stub.DescribeSchema(
        gpb.GatewayServiceDescribeSchemaRequest(max_chars=4000), metadata=bearer(key)
    )
    assert reply.database == "warehouse" and len(reply.catalog_text) <= 4000
    assert "companies" in {t.name for t in reply.tables}
    # the joins come through the gateway as the SQL service describes them
    assert ("public.contacts", "public.companies") in {
        (j.child_table, j.parent_table) for j in reply.joins
    }
    request = gpb.GatewayServiceDescribeSchemaRequest(tables=["companies", "ghosts"])
    code, found = await _error(stack.stub.DescribeSchema(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["fields"] == ["tables[1]"]


@pytest.mark.rpc(ASK)
async def test_ask_returns_a_cited_answer(stack):
    key = await stack.key()
    await _ingest(stack, key)
    request = gpb.GatewayServiceAskRequest(
        question="What is the refund policy?", mode=qpb.ASK_MODE_RETRIEVE
    )
    answer = (await stack.stub.Ask(request, metadata=bearer(key))).answer
    assert answer.text and answer.request_id
    assert answer.route == qpb.ROUTE_RETRIEVE
    assert any(c.document_id == "refunds" and c.title == "Refund policy" for c in answer.citations)
    assert answer.timings


@pytest.mark.rpc(ASK)
async def test_ask_passes_the_routers_field_errors_through(stack):
    key = await stack.key()
    request = gpb.GatewayServiceAskRequest(
        question="How many companies?", options=qpb.AskOptions(database="nowhere")
    )
    code, found = await _error(stack.stub.Ask(request, metadata=bearer(key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert found["fields"] == ["options.database"]


@pytest.mark.rpc(STREAM_ASK)
async def test_stream_ask_starts_with_accepted_and_ends_with_the_answer(stack):
    key = await stack.key()
    await _ingest(stack, key)
    request = gpb.GatewayServiceStreamAskRequest(question="What is the refund policy?")
    events = await _drain(stack.stub.StreamAsk(request, metadata=bearer(key)))
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "accepted" and kinds[-1] == "final_answer"
    assert kinds.count("final_answer") == 1
    deltas = "".join(e.answer_delta.text for e in events if e.HasField("answer_delta"))
    assert deltas == events[-1].final_answer.text


# -- requests to change data: the read-only answer on every path ------------------------

# Its words are the refund policy's: a search would find that passage.
WRITE = "Delete all refunds older than 30 days"


def _read_only(answer: qpb.Answer) -> None:
    assert answer.outcome == qpb.ANSWER_OUTCOME_REFUSED
    assert answer.refusal_reason == "SQL_READ_ONLY" and answer.route == qpb.ROUTE_SQL
    assert answer.text.startswith("Tandem never changes your data")
    assert not answer.citations and not answer.sql_results


@pytest.mark.rpc(ASK_SQL)
async def test_ask_sql_a_request_to_change_data_gets_the_read_only_answer(stack):
    key = await stack.key()
    reply = await stack.stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question=WRITE), metadata=bearer(key)
    )
    assert reply.outcome == spb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert reply.refusal_reason == "SQL_READ_ONLY"
    assert reply.message.startswith("Tandem never changes your data")
    assert not reply.HasField("result")


@pytest.mark.rpc(ASK)
async def test_ask_a_request_to_change_data_gets_the_read_only_answer(stack):
    key = await stack.key()
    await _ingest(stack, key)
    reply = await stack.stub.Ask(gpb.GatewayServiceAskRequest(question=WRITE), metadata=bearer(key))
    _read_only(reply.answer)


@pytest.mark.rpc(STREAM_ASK)
async def test_stream_ask_a_request_to_change_data_gets_the_read_only_answer(stack):
    key = await stack.key()
    await _ingest(stack, key)
    request = gpb.GatewayServiceStreamAskRequest(question=WRITE)
    events = await _drain(stack.stub.StreamAsk(request, metadata=bearer(key)))
    assert [e.WhichOneof("event") for e in events] == ["accepted", "answer_delta", "final_answer"]
    _read_only(events[-1].final_answer)


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(ASK_SQL)
async def test_offline_a_question_in_another_language_is_refused_naming_it(stack):
    key = await stack.key()
    question = "Wie viele Unternehmen gibt es?"
    answer = (
        await stack.stub.Ask(gpb.GatewayServiceAskRequest(question=question), metadata=bearer(key))
    ).answer
    assert answer.outcome == qpb.ANSWER_OUTCOME_REFUSED
    assert answer.refusal_reason == "LANGUAGE_UNSUPPORTED" and "German (de)" in answer.text
    reply = await stack.stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question=question), metadata=bearer(key)
    )
    assert reply.refusal_reason == "LANGUAGE_UNSUPPORTED" and "German (de)" in reply.message


# -- health and reflection ------------------------------------------------------------


async def test_health_and_reflection_need_no_key(stack):
    channel = grpc.aio.insecure_channel(stack.gateway.address)
    try:
        health = health_pb2_grpc.HealthStub(channel)
        reply = await health.Check(
            health_pb2.HealthCheckRequest(service="tandem.v1.GatewayService")
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        names = set()
        async for response in reflection.ServerReflectionInfo(iter([request])):
            names |= {s.name for s in response.list_services_response.service}
        assert "tandem.v1.GatewayService" in names
    finally:
        await channel.close()


# -- conversations ------------------------------------------------------------------------


async def _ask(stack: Stack, key: str, question: str, conversation_id: str = "") -> Any:
    reply = await stack.stub.Ask(
        gpb.GatewayServiceAskRequest(question=question, conversation_id=conversation_id),
        metadata=bearer(key), timeout=30,
    )  # fmt: skip
    return reply.answer


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(LIST_CONVERSATIONS)
async def test_ask_starts_a_conversation_and_a_follow_up_is_answered_in_it(stack):
    key = await stack.key()
    first = await _ask(stack, key, "How many companies are in Germany?")
    assert uuid.UUID(first.conversation_id)
    follow = await _ask(stack, key, "what about France?", first.conversation_id)
    assert follow.conversation_id == first.conversation_id
    assert follow.resolution.kind == qpb.FOLLOW_UP_KIND_VALUE_SWAP
    assert follow.resolution.resolved_question == "How many companies are in France?"
    assert follow.resolution.history_turns == 1
    # Each Ask without an id starts its own conversation.
    other = await _ask(stack, key, "How many products are there?")
    assert other.conversation_id != first.conversation_id
    listed = await stack.stub.ListConversations(
        gpb.GatewayServiceListConversationsRequest(page_size=1), metadata=bearer(key)
    )
    assert [c.conversation_id for c in listed.conversations] == [other.conversation_id]
    page2 = await stack.stub.ListConversations(
        gpb.GatewayServiceListConversationsRequest(page_size=1, page_token=listed.next_page_token),
        metadata=bearer(key),
    )
    (conversation,) = page2.conversations
    assert conversation.conversation_id == first.conversation_id
    assert (
        conversation.turn_count == 2 and conversation.title == "How many companies are in Germany?"
    )
    assert conversation.expire_time.ToDatetime() > conversation.update_time.ToDatetime()
    assert page2.next_page_token == ""


@pytest.mark.rpc(ASK)
async def test_follow_ups_build_on_the_stored_statement_of_the_earlier_turn(stack):
    key = await stack.key()
    first = await _ask(stack, key, "Which 5 companies have the most employees?")
    assert first.route == qpb.ROUTE_SQL and first.turn.sql
    names = _column(first, "name")
    assert len(set(names)) == 5
    # The stored turn's statement comes back from the gateway's store to the router.
    fewer = await _ask(stack, key, "ok, only the top 2 please", first.conversation_id)
    assert fewer.resolution.kind == qpb.FOLLOW_UP_KIND_LIMIT and fewer.route == qpb.ROUTE_SQL
    assert _column(fewer, "name") == names[:2]
    theirs = await _ask(stack, key, "What are their industries?", fewer.conversation_id)
    assert theirs.resolution.kind == qpb.FOLLOW_UP_KIND_RESULT_REFERENCE
    assert theirs.route == qpb.ROUTE_SQL
    assert sorted(_column(theirs, "name")) == sorted(names[:2])
    assert len(_column(theirs, "industry")) == 2
    statement = theirs.sql_results[0].result.sql
    assert "IN (SELECT" in statement and not any(n in statement for n in names)


def _column(answer: Any, name: str) -> list[str]:
    result = answer.sql_results[0].result
    index = [c.name for c in result.columns].index(name)
    return [r.values[index].string_value for r in result.rows]


@pytest.mark.rpc(STREAM_ASK)
async def test_stream_ask_carries_the_conversation_and_stores_the_turn_before_the_end(stack):
    key = await stack.key()
    first = await _ask(stack, key, "How many companies are in Germany?")
    events = await _drain(stack.stub.StreamAsk(
        gpb.GatewayServiceStreamAskRequest(
            question="and in Japan?", conversation_id=first.conversation_id),
        metadata=bearer(key), timeout=30,
    ))  # fmt: skip
    assert events[0].accepted.conversation_id == first.conversation_id
    final = events[-1].final_answer
    assert final.conversation_id == first.conversation_id
    assert final.resolution.resolved_question == "How many companies are in Japan?"
    third = await _ask(stack, key, "and Canada?", first.conversation_id)
    # The streamed turn was stored: the third turn swaps the value the second one named.
    assert third.resolution.resolved_question == "How many companies are in Canada?"
    assert third.resolution.history_turns == 2


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM_ASK)
@pytest.mark.rpc(DELETE_CONVERSATION)
async def test_another_tenants_deleted_or_unknown_conversation_is_not_found(stack):
    key_a, key_b = await stack.key("a"), await stack.key("b")
    first = await _ask(stack, key_a, "How many companies are in Germany?")
    unknown = str(uuid.uuid4())
    for caller, conversation_id in ((key_b, first.conversation_id), (key_a, unknown)):
        call = stack.stub.Ask(
            gpb.GatewayServiceAskRequest(question="and France?", conversation_id=conversation_id),
            metadata=bearer(caller),
        )
        code, found = await _error(call)
        assert code == grpc.StatusCode.NOT_FOUND and found["reason"] == "CONVERSATION_NOT_FOUND"
        call, outcome = _invoke(
            stack.stub, "StreamAsk",
            gpb.GatewayServiceStreamAskRequest(question="and France?",
                                               conversation_id=conversation_id),
            metadata=bearer(caller),
        )  # fmt: skip
        assert (await _error(call, outcome))[0] == grpc.StatusCode.NOT_FOUND
    # Tenant B can neither delete nor list A's conversation.
    call = stack.stub.DeleteConversation(
        gpb.GatewayServiceDeleteConversationRequest(conversation_id=first.conversation_id),
        metadata=bearer(key_b),
    )
    assert (await _error(call))[0] == grpc.StatusCode.NOT_FOUND
    listed = await stack.stub.ListConversations(
        gpb.GatewayServiceListConversationsRequest(), metadata=bearer(key_b)
    )
    assert not listed.conversations
    deleted = await stack.stub.DeleteConversation(
        gpb.GatewayServiceDeleteConversationRequest(conversation_id=first.conversation_id),
        metadata=bearer(key_a),
    )
    assert (deleted.deleted, deleted.turns_deleted) == (True, 1)
    call = stack.stub.Ask(
        gpb.GatewayServiceAskRequest(question="and France?",
                                     conversation_id=first.conversation_id),
        metadata=bearer(key_a),
    )  # fmt: skip
    assert (await _error(call))[0] == grpc.StatusCode.NOT_FOUND
    again = stack.stub.DeleteConversation(
        gpb.GatewayServiceDeleteConversationRequest(conversation_id=first.conversation_id),
        metadata=bearer(key_a),
    )
    code, found = await _error(again)
    assert code == grpc.StatusCode.NOT_FOUND and found["reason"] == "CONVERSATION_NOT_FOUND"


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(LIST_CONVERSATIONS)
async def test_an_expired_conversation_is_not_found_and_not_listed(stack):
    key = await stack.key()
    first = await _ask(stack, key, "How many companies are in Germany?")
    async with await psycopg.AsyncConnection.connect(stack.pg_url, autocommit=True) as conn:
        # As the owner (a superuser here, so past the tenant policy): age it past retention.
        await conn.execute(
            "UPDATE gateway_conversations SET update_time = now() - interval '31 days' "
            "WHERE conversation_id = %s",
            (first.conversation_id,),
        )
    call = stack.stub.Ask(
        gpb.GatewayServiceAskRequest(question="and France?",
                                     conversation_id=first.conversation_id),
        metadata=bearer(key),
    )  # fmt: skip
    assert (await _error(call))[0] == grpc.StatusCode.NOT_FOUND
    listed = await stack.stub.ListConversations(
        gpb.GatewayServiceListConversationsRequest(), metadata=bearer(key)
    )
    assert first.conversation_id not in [c.conversation_id for c in listed.conversations]


@pytest.mark.rpc(ASK)
async def test_a_malformed_conversation_id_is_invalid_argument_naming_it(stack):
    key = await stack.key()
    call = stack.stub.Ask(
        gpb.GatewayServiceAskRequest(question="and France?", conversation_id="nope"),
        metadata=bearer(key),
    )
    code, found = await _error(call)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["fields"] == ["conversation_id"]


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(LIST_CONVERSATIONS)
async def test_with_conversations_off_ask_is_standalone_and_the_rpcs_fail_precondition(
    pg_url, retrieval, sql, router, telemetry_sink
):
    gateway = await start_gateway(
        pg_url, telemetry_sink("gateway").telemetry, router_addr=router.address,
        retrieval_addr=retrieval.server.address, sql_addr=sql.address, conversations=False,
    )  # fmt: skip
    try:
        key = await gateway.key(new_tenant(pg_url))
        reply = await gateway.stub.Ask(
            gpb.GatewayServiceAskRequest(question="How many companies are in Germany?"),
            metadata=bearer(key), timeout=30,
        )  # fmt: skip
        assert reply.answer.conversation_id == ""
        call = gateway.stub.ListConversations(
            gpb.GatewayServiceListConversationsRequest(), metadata=bearer(key)
        )
        code, found = await _error(call)
        assert code == grpc.StatusCode.FAILED_PRECONDITION
        assert found["reason"] == "CONVERSATIONS_DISABLED"
    finally:
        await gateway.close()


# -- UploadDocument ---------------------------------------------------------------------


def _pieces(header: Any, data: bytes, size: int = 4 * 1024 * 1024) -> list[Any]:
    return [header, *(_chunk(data[i : i + size]) for i in range(0, len(data), size))]


@pytest.mark.rpc(UPLOAD)
async def test_a_file_past_one_message_is_uploaded_in_pieces_and_searchable(stack):
    key = await stack.key()
    data = padded_pdf(18, "Appendix: warranty claims need the original receipt.")
    assert len(data) > 16 * 1024 * 1024  # past the default message limit
    header = _header(document_id="annual-report.pdf", file_name="annual-report.pdf")
    events = await _drain(stack.stub.UploadDocument(_pieces(header, data), metadata=bearer(key)))
    summary = events[-1].summary
    (result,) = summary.documents
    assert result.outcome == rpb.DOCUMENT_OUTCOME_INCLUDED and result.detected_type == "PDF"
    assert any("page 2" in note for note in result.extraction_notes)  # the image page
    found = await stack.stub.Search(
        gpb.GatewayServiceSearchRequest(query="warranty claims original receipt"),
        metadata=bearer(key),
    )
    assert (found.hits[0].document_id, found.hits[0].section) == ("annual-report.pdf", "page 1")


@pytest.mark.rpc(UPLOAD)
async def test_an_upload_past_the_limit_is_refused_naming_it(make_gateway, pg_url):
    gateway = await make_gateway(limits=Limits(max_upload_bytes=1024 * 1024))
    key = await gateway.key(new_tenant(pg_url))
    pieces = _pieces(_header(document_id="big", file_name="big.txt"), b"x" * (1024 * 1024 + 1))
    call = gateway.stub.UploadDocument(pieces, metadata=bearer(key))
    code, found = await _error(call, _drain(call))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["fields"] == ["chunk"]
    assert found["reason"] == "UPLOAD_TOO_LARGE"
    assert found["metadata"] == {"limit": str(1024 * 1024)}


@pytest.mark.rpc(UPLOAD)
async def test_uploads_past_the_in_flight_budget_are_refused_with_retry_info(make_gateway, pg_url):
    gateway = await make_gateway(
        limits=Limits(max_upload_bytes=1024 * 1024),
        uploads=UploadSettings(
            memory_bytes=64 * 1024, tenant_bytes=1024 * 1024, total_bytes=1200 * 1024,
            retry_s=3.0,
        ),
    )  # fmt: skip
    first, second = new_tenant(pg_url), new_tenant(pg_url)
    keys = {t: await gateway.key(t) for t in (first, second)}
    # A GIF: retrieval refuses it at once (unsupported), the upload itself is the test.
    held, piece = asyncio.Event(), b"GIF89a" + bytes(700 * 1024)

    async def holding(name: str) -> Any:
        # Sends most of a file and waits: its bytes stay in flight meanwhile.
        yield _header(document_id=name, file_name=f"{name}.gif")
        yield _chunk(piece)
        await held.wait()

    async def whole(name: str) -> Any:
        yield _header(document_id=name, file_name=f"{name}.gif")
        yield _chunk(piece)

    async def refusal(tenant: str, name: str) -> dict[str, Any]:
        call = gateway.stub.UploadDocument(whole(name), metadata=bearer(keys[tenant]))
        code, found = await _error(call, _drain(call))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and found["retry_s"] == 3.0
        assert found["reason"] == "UPLOAD_BUDGET_EXHAUSTED"
        metadata: dict[str, Any] = found["metadata"]
        return metadata

    pending = gateway.stub.UploadDocument(holding("a"), metadata=bearer(keys[first]))
    waiting = asyncio.ensure_future(_drain(pending))
    await asyncio.sleep(0.5)  # its piece arrived
    # The same tenant's second file would pass its budget; another tenant's passes the
    # gateway's.
    assert await refusal(first, "b") == {"scope": "tenant", "limit": str(1024 * 1024)}
    assert await refusal(second, "c") == {"scope": "gateway", "limit": str(1200 * 1024)}
    held.set()
    assert (await waiting)[-1].WhichOneof("event") == "summary"
    # Given back when the call ended.
    done = await _drain(gateway.stub.UploadDocument(whole("d"), metadata=bearer(keys[first])))
    assert done[-1].WhichOneof("event") == "summary"


@pytest.mark.rpc(UPLOAD)
@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([_header(document_id="a"), _header(document_id="b")], "header"),
        ([_header(document_id="a", text="inline")], "header.document.text"),
        ([_header(document_id="a", content=b"inline")], "header.document.content"),
        ([_header(document_id="a"), _chunk(b"x" * (4 * 1024 * 1024 + 1))], "chunk"),
        ([_header(document_id="a")], "chunk"),
        ([], "header"),
    ],
    ids=["two-headers", "text", "content", "piece-too-big", "no-bytes", "nothing"],
)
async def test_a_malformed_upload_names_what_is_wrong(stack, messages, field):
    key = await stack.key()
    call = stack.stub.UploadDocument(messages, metadata=bearer(key))
    code, found = await _error(call, _drain(call))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and found["fields"] == [field]
    assert found["reason"] == "UPLOAD_MALFORMED"


@pytest.mark.rpc(GET_CALLER)
async def test_get_caller_says_who_the_key_is_and_for_whom_it_calls(stack):
    tenant = new_tenant(stack.pg_url, "caller")
    service = await stack.gateway.key(tenant, scopes=(Scope.ASK, Scope.TEACH))
    empty = gpb.GatewayServiceGetCallerRequest()
    reply = await stack.stub.GetCaller(empty, metadata=bearer(service))
    assert (reply.tenant_id, list(reply.scopes), reply.principal_id) == (
        tenant,
        ["ask", "teach"],
        "",
    )
    assert reply.key_id and reply.key_id in service and reply.key_id != service
    acting = await stack.gateway.key(tenant, scopes=(Scope.ASK, Scope.ACT_AS))
    # An act_as key may ask without a principal, and is told the one it names.
    bare = await stack.stub.GetCaller(empty, metadata=bearer(acting))
    assert (list(bare.scopes), bare.principal_id) == (["act_as", "ask"], "")
    alice = Principal.of("alice", ["sales", "emea"], {})
    named = await stack.stub.GetCaller(
        gpb.GatewayServiceGetCallerRequest(), metadata=(*bearer(acting), *alice.headers())
    )
    assert (named.principal_id, list(named.principal_groups)) == ("alice", ["emea", "sales"])
    # A service key naming a principal is refused, not ignored.
    call = stack.stub.GetCaller(
        gpb.GatewayServiceGetCallerRequest(), metadata=(*bearer(service), *alice.headers())
    )
    code, found = await _error(call, call)
    assert (code, found["reason"]) == (grpc.StatusCode.PERMISSION_DENIED, "ACT_AS_NOT_GRANTED")
