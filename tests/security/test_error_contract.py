"""Every error the gateway returns keeps one contract (tests/faults/contract.py): exactly
one ErrorInfo in domain "tandem", BadRequest on validation, RetryInfo where a retry helps,
no stack trace, exception type, address or host name. Each kind of failure is provoked on
every RPC it applies to, in front of the real services."""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import grpc
import pytest

from gateway import GatewaySettings
from gateway.edge import refusal_variables
from services.embedding import Embedder
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import sql_service_pb2 as spb
from tests.conftest import TelemetrySink
from tests.faults.contract import ErrorSeen, assert_contract, decode, outcome
from tests.faults.inprocess import (
    HopLog,
    Stack,
    hops,
    pg_url,
    recorded,
    stack,
    start_stack,
)
from tests.integration.gateway.stack import Gateway, bearer, start_gateway
from tests.integration.retrieval.stack import new_tenant

__all__ = ["hops", "pg_url", "recorded", "stack"]

pytestmark = pytest.mark.integration

# One valid and one invalid request per RPC (the invalid one with the field it names).
VALID: dict[str, Any] = {
    "Ask": gpb.GatewayServiceAskRequest(question="What is the refund policy?"),
    "StreamAsk": gpb.GatewayServiceStreamAskRequest(question="What is the refund policy?"),
    "Search": gpb.GatewayServiceSearchRequest(query="refund policy"),
    "AskSql": gpb.GatewayServiceAskSqlRequest(question="How many companies are there?"),
    "RunSqlIntent": gpb.GatewayServiceRunSqlIntentRequest(
        intent=spb.SqlIntent(kind=spb.INTENT_KIND_COUNT, table="companies")
    ),
    "ValidateSql": gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1"),
    "IngestDocuments": gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id="d", text="Refunds within 30 days.")],
        dry_run=True,
    ),
    "DeleteDocument": gpb.GatewayServiceDeleteDocumentRequest(
        document_id="never-was", allow_missing=True
    ),
    "UpdateDocumentAcl": gpb.GatewayServiceUpdateDocumentAclRequest(
        document_id="never-was", allow_missing=True
    ),
    "DescribeSchema": gpb.GatewayServiceDescribeSchemaRequest(),
}
INVALID: dict[str, tuple[Any, str]] = {
    "Ask": (gpb.GatewayServiceAskRequest(question="x" * 4001), "question"),
    "StreamAsk": (
        gpb.GatewayServiceStreamAskRequest(question="q", mode=99),  # type: ignore[arg-type]
        "mode",
    ),
    "Search": (gpb.GatewayServiceSearchRequest(query="q", top_k=-1), "top_k"),
    "AskSql": (gpb.GatewayServiceAskSqlRequest(question=""), "question"),
    "RunSqlIntent": (gpb.GatewayServiceRunSqlIntentRequest(), "intent"),
    "ValidateSql": (gpb.GatewayServiceValidateSqlRequest(sql="x" * 20_001), "sql"),
    "IngestDocuments": (gpb.GatewayServiceIngestDocumentsRequest(), "documents"),
    "DeleteDocument": (gpb.GatewayServiceDeleteDocumentRequest(), "document_id"),
    "UpdateDocumentAcl": (
        gpb.GatewayServiceUpdateDocumentAclRequest(
            document_id="d", acl=rpb.DocumentAcl(groups=["x" * 257])
        ),
        "acl.groups[0]",
    ),
    "DescribeSchema": (gpb.GatewayServiceDescribeSchemaRequest(max_chars=-5), "max_chars"),
}
RPCS = list(VALID)
STREAMING = {"StreamAsk", "IngestDocuments"}


def _internal(stack: Stack) -> tuple[str, ...]:
    """Strings that must never reach a caller: every internal address and port."""
    ports = [a.rsplit(":", 1)[1] for a in stack.addresses.values()]
    return (*stack.addresses.values(), *(f":{p}" for p in ports))


async def _call(stub: Any, rpc: str, request: Any, **kw: Any) -> ErrorSeen | None:
    return await outcome(getattr(stub, rpc)(request, timeout=20, **kw))


async def _failed(stub: Any, rpc: str, request: Any, **kw: Any) -> ErrorSeen:
    seen = await _call(stub, rpc, request, **kw)
    assert seen is not None, f"{rpc} succeeded"
    return seen


@pytest.mark.parametrize("rpc", RPCS)
async def test_auth_validation_and_malformed_bytes_keep_the_contract(stack: Stack, rpc: str):
    internal = _internal(stack)
    missing = await _failed(stack.stub, rpc, VALID[rpc])
    assert missing.code == grpc.StatusCode.UNAUTHENTICATED
    assert_contract(missing, internal=internal)
    for header in ("Basic dXNlcjpwYXNz", "Bearer tdm_forged_" + "A" * 43, "Bearer "):
        wrong = await _failed(stack.stub, rpc, VALID[rpc], metadata=(("authorization", header),))
        assert wrong.code == grpc.StatusCode.UNAUTHENTICATED
        assert_contract(wrong, internal=internal)
    request, field = INVALID[rpc]
    invalid = await _failed(stack.stub, rpc, request, metadata=stack.metadata)
    assert invalid.code == grpc.StatusCode.INVALID_ARGUMENT
    assert invalid.fields[:1] == [field]
    assert_contract(invalid, internal=internal)
    # Bytes that are not the request message at all.
    channel = grpc.aio.insecure_channel(stack.addresses["gateway"])
    try:
        method = f"/tandem.v1.GatewayService/{rpc}"
        raw: Callable[..., Any] = (
            channel.unary_stream(method) if rpc in STREAMING else channel.unary_unary(method)
        )
        for garbage in (b"\xff\xff\xff\xff", b"\x12\x7fshort", b"\x0a"):
            seen = await outcome(raw(garbage, metadata=stack.metadata, timeout=10))
            assert seen is not None
            assert seen.code == grpc.StatusCode.INVALID_ARGUMENT, seen
            assert_contract(seen, internal=internal)
    finally:
        await channel.close()


async def _gateway(stack: Stack, exit_stack: AsyncExitStack, **overrides: Any) -> Gateway:
    addresses = {
        "router_addr": stack.addresses["router"],
        "retrieval_addr": stack.addresses["retrieval"],
        "sql_addr": stack.addresses["sql"],
    }
    settings = GatewaySettings(**{"rate_per_s": 1000.0, "burst": 1000.0, **overrides})
    sink = TelemetrySink("gateway")
    exit_stack.callback(sink.telemetry.shutdown)
    gateway = await start_gateway(
        stack.pg_url,
        sink.telemetry,
        **{**addresses, **{k: v for k, v in overrides.items() if k.endswith("_addr")}},
        settings=settings,
    )
    exit_stack.push_async_callback(gateway.close)
    return gateway


@pytest.fixture
async def exit_stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as stack_:
        yield stack_


async def test_quota_errors_carry_retry_info_on_every_rpc(stack: Stack, exit_stack):
    gateway = await _gateway(stack, exit_stack, rate_per_s=0.01, burst=1.0)
    internal = _internal(stack)
    for rpc in RPCS:
        key = await gateway.key(new_tenant(stack.pg_url, "quota"))
        await _call(gateway.stub, rpc, VALID[rpc], metadata=bearer(key))
        seen = await _failed(gateway.stub, rpc, VALID[rpc], metadata=bearer(key))
        assert seen.code == grpc.StatusCode.RESOURCE_EXHAUSTED, (rpc, seen)
        assert_contract(seen, internal=internal)


async def test_unreachable_engines_are_unavailable_with_retry_info(stack: Stack, exit_stack):
    closed = "127.0.0.1:9"
    gateway = await _gateway(
        stack, exit_stack, router_addr=closed, retrieval_addr=closed, sql_addr=closed
    )
    key = await gateway.key(new_tenant(stack.pg_url, "down"))
    internal = (*_internal(stack), closed, ":9")
    for rpc in RPCS:
        seen = await _call(gateway.stub, rpc, VALID[rpc], metadata=bearer(key))
        if rpc in ("Ask", "StreamAsk", "Search"):
            assert seen is None, f"{rpc} should fail open, degraded"
            continue
        assert seen is not None and seen.code == grpc.StatusCode.UNAVAILABLE, (rpc, seen)
        assert seen.reason == "DEPENDENCY_UNAVAILABLE"
        assert_contract(seen, internal=internal)


async def test_errors_from_the_engines_are_relayed_within_the_contract(stack: Stack):
    internal = _internal(stack)
    # The code is the engine's to choose; the contract is the gateway's to keep.
    refused = {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT}
    cases: list[tuple[str, Any, set[grpc.StatusCode]]] = [
        ("DeleteDocument", gpb.GatewayServiceDeleteDocumentRequest(document_id="missing"),
         {grpc.StatusCode.NOT_FOUND}),
        ("RunSqlIntent", gpb.GatewayServiceRunSqlIntentRequest(
            intent=spb.SqlIntent(kind=spb.INTENT_KIND_COUNT, table="no_such_table")), refused),
        ("AskSql", gpb.GatewayServiceAskSqlRequest(question="How many?", database="nowhere"),
         refused),
        ("DescribeSchema", gpb.GatewayServiceDescribeSchemaRequest(tables=["no_such_table"]),
         refused),
    ]  # fmt: skip
    for rpc, request, expected in cases:
        seen = await _call(stack.stub, rpc, request, metadata=stack.metadata)
        assert seen is not None, rpc
        assert seen.code in expected, (rpc, seen)
        assert_contract(seen, internal=internal)


async def test_a_deadline_the_gateway_enforces_is_deadline_exceeded_with_error_info(
    recorded: tuple[Stack, HopLog], real_embedder: Embedder, exit_stack
):
    stack, hops_ = recorded
    hops_.delays["Embed"] = 30.0
    gateway = await _gateway(stack, exit_stack, default_deadline_s=0.3)
    key = await gateway.key(new_tenant(stack.pg_url, "slow"))
    # No deadline from the caller: the gateway's own default (0.3 s) is what expires.
    seen = await outcome(
        gateway.stub.Search(gpb.GatewayServiceSearchRequest(query="q"), metadata=bearer(key))
    )
    assert seen is not None
    assert seen.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert_contract(seen, internal=_internal(stack))


__all__ += ["start_stack"]


# The field each NUL case's BadRequest names, in the order of the cases: the gateway
# refuses control characters in every string field of a request, by its path.
NUL_FIELDS = [
    ["query"], ["query"], ["filter.categories[0]"], ["filter.document_ids[0]"],
    ["document_id"], ["intent.filters[0].values[0].string_value"], ["question"], ["question"],
]  # fmt: skip


async def test_nul_characters_are_invalid_argument_not_internal(stack: Stack):
    """Postgres text cannot hold NUL; the driver refuses such a value before sending it,
    which once surfaced as INTERNAL "database error" (found by the fuzzer)."""
    cases: list[tuple[str, Any]] = [
        ("Search", gpb.GatewayServiceSearchRequest(query="\x00")),
        ("Search", gpb.GatewayServiceSearchRequest(query="renewal\x00risk")),
        ("Search", gpb.GatewayServiceSearchRequest(
            query="renewal", filter=rpb.SearchFilter(categories=["a\x00b"]))),
        ("Search", gpb.GatewayServiceSearchRequest(
            query="renewal", filter=rpb.SearchFilter(document_ids=["\x00"]))),
        ("DeleteDocument", gpb.GatewayServiceDeleteDocumentRequest(document_id="a\x00")),
        ("RunSqlIntent", gpb.GatewayServiceRunSqlIntentRequest(intent=spb.SqlIntent(
            kind=spb.INTENT_KIND_COUNT, table="companies",
            filters=[spb.IntentFilter(column="industry", op=spb.FILTER_OPERATOR_EQUAL,
                                      values=[cpb.SqlValue(string_value="a\x00")])]))),
        ("Ask", gpb.GatewayServiceAskRequest(question="renewal\x00risk")),
        ("AskSql", gpb.GatewayServiceAskSqlRequest(question="How many\x00companies?")),
    ]  # fmt: skip
    seen_by_case: list[tuple[str, str, list[str]]] = []
    for rpc, request in cases:
        seen = await _call(stack.stub, rpc, request, metadata=stack.metadata)
        assert seen is not None, f"{rpc} accepted a NUL character"
        assert_contract(seen, internal=_internal(stack))
        seen_by_case.append((rpc, seen.code.name, seen.fields))
    assert seen_by_case == [
        (rpc, "INVALID_ARGUMENT", fields)
        for (rpc, _), fields in zip(cases, NUL_FIELDS, strict=True)
    ]


class _EdgeReply:
    """A trailers-only reply of the edge (nginx) as a client decodes it."""

    def __init__(self, code: grpc.StatusCode, message: str, details_bin: str) -> None:
        self._code = code
        self._message = urllib.parse.unquote(message)
        self._details = base64.b64decode(details_bin + "=" * (-len(details_bin) % 4))

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._message

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return (("grpc-status-details-bin", self._details),)


@pytest.mark.parametrize("quota_rate_per_s", [0.5, 20.0, 5000.0])
def test_the_edges_own_replies_keep_the_contract(quota_rate_per_s: float):
    """Over quota and gateway unreachable, as gateway.edge precomputes them for nginx (on
    the wire: tests/integration/gateway/test_edge.py)."""
    replies = refusal_variables(quota_rate_per_s)
    for code, name in (
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "QUOTA"),
        (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE"),
    ):
        reply = _EdgeReply(code, replies[f"EDGE_{name}_MESSAGE"], replies[f"EDGE_{name}_STATUS"])
        assert_contract(decode(reply))


async def test_bidirectional_controls_are_refused_in_every_text_a_listing_shows(stack: Stack):
    """An RTL override in a question was stored as a conversation title, where a listing
    shows it reordered (text that reads as something else); a taught pair's question is
    listed the same way. Each is INVALID_ARGUMENT naming the field; nothing is stored."""
    override = "Refund policy \u202etxt.exe"
    isolate = "How many \u2066companies\u2069?"
    cases: list[tuple[str, Any, list[str]]] = [
        ("Ask", gpb.GatewayServiceAskRequest(question=override), ["question"]),
        ("StreamAsk", gpb.GatewayServiceStreamAskRequest(question=isolate), ["question"]),
        ("AskSql", gpb.GatewayServiceAskSqlRequest(question=isolate), ["question"]),
        ("TeachSql", gpb.GatewayServiceTeachSqlRequest(
            question=override, sql="SELECT 1"), ["question"]),
        ("Search", gpb.GatewayServiceSearchRequest(query=override), ["query"]),
    ]  # fmt: skip
    for rpc, request, fields in cases:
        seen = await _call(stack.stub, rpc, request, metadata=stack.metadata)
        assert seen is not None, f"{rpc} accepted a bidirectional control"
        assert (seen.code.name, seen.fields) == ("INVALID_ARGUMENT", fields), rpc
        assert_contract(seen, internal=_internal(stack))
    listed = await stack.stub.ListConversations(
        gpb.GatewayServiceListConversationsRequest(), metadata=stack.metadata
    )
    assert not any("\u202e" in c.title for c in listed.conversations)
