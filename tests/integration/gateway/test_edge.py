"""The edge (nginx, ``gateway.edge``) in front of the real gateway, every service a process
(``ProcessStack``): calls pass through it unchanged (replies, rich errors, trailers,
streams, deadlines); it refuses a key past its limit and an unreachable gateway with the
gateway's own rich statuses; it drains on SIGTERM; its files never hold what callers
sent.

Non-destructive tests run on the session's shared stack (``process_stack``); the
destructive ones share one private stack of this module (``edge_stack``), each leaving it
as it found it (a paused process resumed, a killed one restarted)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import grpc
import pytest

from services.common import Principal
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tests.faults.contract import ErrorSeen, assert_contract, decode
from tests.integration.gateway.stack import bearer
from tests.processes import ProcessStack, fresh_key, gateway_stub

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(240)]

# The private stack's edge is told the quota is one call a second (its limit: one a
# second, burst 4) while the gateway admits 10,000: every RESOURCE_EXHAUSTED there is the
# edge's.
EDGE_ENV = {
    "GATEWAY_RATE_PER_S": "1",
    "GATEWAY_BURST": "2",
    "EDGE_RATE_PER_S": "1",
    "EDGE_BURST": "4",
}
GATEWAY_ENV = {"GATEWAY_RATE_PER_S": "10000", "GATEWAY_BURST": "10000"}
GRACE_S = 3.0
# What "within the deadline" allows on top of it (as in the fault matrix).
LATE_S = 0.1
RECOVERY_S = 5.0
# nginx writes its access log at least every 2 s (flush=2s); wait a little longer.
LOG_FLUSH_S = 5.0
VALIDATE = gpb.GatewayServiceValidateSqlRequest(
    sql="SELECT name, industry FROM companies WHERE industry = 'Healthcare' LIMIT 5"
)
# Needs the SQL and the semantic engine (the router streams a step for each).
BOTH_ENGINES = (
    "How many open Security Suite opportunities are there, and what do call notes say "
    "about security reviews?"
)

Stub: TypeAlias = "gpb_grpc.GatewayServiceAsyncStub"


@pytest.fixture(scope="module")
def edge_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    """A private stack for the destructive tests, one for all of them (each start costs
    seconds to tens of seconds)."""
    stack = ProcessStack(
        tmp_path_factory.mktemp("edge-stack"),
        service_env={"edge": EDGE_ENV, "gateway": GATEWAY_ENV},
        grace_s=GRACE_S,
    )
    with stack:
        yield stack


_stub = gateway_stub
_key = fresh_key


async def _failed(call: Any) -> ErrorSeen:
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call
    return decode(failed.value)


def _internal(stack: ProcessStack) -> tuple[str, ...]:
    """Strings no reply may carry: every address and port of the stack."""
    return (*stack.addresses.values(), *(f":{p}" for p in stack.ports.values()))


async def _logged(
    stack: ProcessStack, ready: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """The access log once ``ready`` holds for it (nginx flushes it every 2 s)."""
    deadline = time.monotonic() + LOG_FLUSH_S
    while True:
        entries = stack.edge_access_log()
        if ready(entries) or time.monotonic() > deadline:
            return entries
        await asyncio.sleep(0.1)


async def _marker(stack: ProcessStack, channel: grpc.aio.Channel) -> list[dict[str, Any]]:
    """The access log up to a call made now: a method of its own, so its line (written
    after every earlier one: one worker, one buffer) shows the log holds all before it."""
    method = f"/tandem.v1.GatewayService/EdgeTestMarker{uuid.uuid4().hex}"
    raw: Any = channel.unary_unary(method)
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await raw(b"", timeout=5)
    assert unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED
    entries = await _logged(stack, lambda lines: any(e["rpc"] == method for e in lines))
    assert any(e["rpc"] == method for e in entries), "the access log was not written"
    return entries


# -- passing through (the shared stack) --------------------------------------------------


async def test_a_unary_call_through_the_edge_is_the_gateways_reply(process_stack: ProcessStack):
    stack = process_stack
    metadata = bearer(await _key(stack, "edge-unary"))
    async with (
        grpc.aio.insecure_channel(stack.edge_address) as edge,
        grpc.aio.insecure_channel(stack.gateway_address) as direct,
    ):
        for request, rpc in (
            (VALIDATE, "ValidateSql"),
            (gpb.GatewayServiceDescribeSchemaRequest(tables=["companies"]), "DescribeSchema"),
        ):
            call = getattr(_stub(edge), rpc)(request, metadata=metadata, timeout=20)
            through = await call
            assert through == await getattr(_stub(direct), rpc)(
                request, metadata=metadata, timeout=20
            )
            assert through.ByteSize() > 0
            # The gateway's trailers (the trace id) pass through.
            trailers = dict(await call.trailing_metadata())
            assert len(str(trailers["x-trace-id"])) == 32, trailers
            assert await call.code() == grpc.StatusCode.OK


async def test_validation_errors_arrive_with_their_rich_details(process_stack: ProcessStack):
    stack = process_stack
    metadata = bearer(await _key(stack, "edge-invalid"))
    cases: list[tuple[str, Any, str]] = [
        # 20,001 characters: a body larger than nginx buffers in memory.
        ("ValidateSql", gpb.GatewayServiceValidateSqlRequest(sql="x" * 20_001), "sql"),
        ("AskSql", gpb.GatewayServiceAskSqlRequest(question=""), "question"),
        ("Search", gpb.GatewayServiceSearchRequest(query="q", top_k=-1), "top_k"),
    ]
    async with (
        grpc.aio.insecure_channel(stack.edge_address) as edge,
        grpc.aio.insecure_channel(stack.gateway_address) as direct,
    ):
        for rpc, request, field in cases:
            through = await _failed(getattr(_stub(edge), rpc)(request, metadata=metadata))
            assert through.code == grpc.StatusCode.INVALID_ARGUMENT, (rpc, through)
            assert through.fields[:1] == [field], through
            assert_contract(through, internal=_internal(stack))
            same = await _failed(getattr(_stub(direct), rpc)(request, metadata=metadata))
            assert through.status == same.status
            assert through.message == same.message


async def test_principal_headers_pass_the_edge_unchanged(process_stack: ProcessStack):
    # The x-tandem-principal headers reach the gateway byte for byte: a principal whose
    # id and attribute need percent-encoding is served through the edge and owns the
    # conversation it starts there (the gateway finds it for the same principal called
    # directly, for no other); a malformed one is refused with the same message (naming
    # the offending attribute), and a service key's headers are refused, not dropped.
    stack = process_stack
    tenant = f"edge-principal-{uuid.uuid4().hex[:8]}"
    acting = bearer(await asyncio.to_thread(stack.create_key, tenant, "t", ("all", "act_as")))
    service = bearer(await asyncio.to_thread(stack.create_key, tenant, "t", ("all",)))
    jurgen = Principal.of("Jürgen Groß", {"sales emea"}, {"region": "EMEA & APAC"})
    ask = gpb.GatewayServiceAskRequest(
        question="How many companies are there?", mode=qpb.ASK_MODE_SQL
    )
    async with (
        grpc.aio.insecure_channel(stack.edge_address) as edge,
        grpc.aio.insecure_channel(stack.gateway_address) as direct,
    ):
        answer = await _stub(edge).Ask(ask, metadata=(*acting, *jurgen.headers()), timeout=60)
        listing = gpb.GatewayServiceListConversationsRequest()
        mine = await _stub(direct).ListConversations(
            listing, metadata=(*acting, *jurgen.headers()), timeout=20
        )
        assert [c.conversation_id for c in mine.conversations] == [answer.answer.conversation_id]
        other = Principal.of("Jürgen Gross", {"sales emea"}, {"region": "EMEA & APAC"})
        theirs = await _stub(direct).ListConversations(
            listing, metadata=(*acting, *other.headers()), timeout=20
        )
        assert not theirs.conversations
        malformed = (*acting, ("x-tandem-principal", "j"),
                     ("x-tandem-principal-attributes", "r%C3%A9gion=x"))  # fmt: skip
        cases = ((malformed, "PRINCIPAL_INVALID", "r%C3%A9gion"),
                 ((*service, *jurgen.headers()), "ACT_AS_NOT_GRANTED", "act_as"))  # fmt: skip
        for metadata, reason, named in cases:
            through = await _failed(_stub(edge).ValidateSql(VALIDATE, metadata=metadata))
            same = await _failed(_stub(direct).ValidateSql(VALIDATE, metadata=metadata))
            assert (through.reason, named in through.message) == (reason, True), through
            assert (through.status, through.message) == (same.status, same.message)


def _timeless(event: gpb.GatewayServiceIngestDocumentsResponse) -> bytes:
    copy = gpb.GatewayServiceIngestDocumentsResponse()
    copy.CopyFrom(event)
    copy.summary.ClearField("duration")
    copy.progress.ClearField("elapsed")
    return copy.SerializeToString(deterministic=True)


async def test_an_ingest_stream_passes_through_event_by_event(process_stack: ProcessStack):
    stack = process_stack
    metadata = bearer(await _key(stack, "edge-stream"))
    request = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[
            rpb.DocumentInput(
                document_id=f"edge-brief-{i}",
                title=f"Account brief {i}",
                text=f"Account {i} renews in March; the risk is vendor consolidation.",
            )
            for i in range(3)
        ],
        dry_run=True,
    )
    async with (
        grpc.aio.insecure_channel(stack.edge_address) as edge,
        grpc.aio.insecure_channel(stack.gateway_address) as direct,
    ):
        through = [e async for e in _stub(edge).IngestDocuments(request, metadata=metadata)]
        same = [e async for e in _stub(direct).IngestDocuments(request, metadata=metadata)]
    kinds = [e.WhichOneof("event") for e in through]
    assert kinds.count("document_finished") == 3 and kinds[-1] == "summary", kinds
    assert through[-1].summary.documents_included == 3
    settled = [_timeless(e) for e in through if e.WhichOneof("event") != "progress"]
    assert settled == [_timeless(e) for e in same if e.WhichOneof("event") != "progress"]


async def test_what_callers_send_never_reaches_the_edges_files(process_stack: ProcessStack):
    stack = process_stack
    canary = f"edgecanary{uuid.uuid4().hex}"
    metadata = (*bearer(await _key(stack, "edge-privacy")), ("x-canary", canary))
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        stub = _stub(edge)
        await stub.Search(
            gpb.GatewayServiceSearchRequest(query=f"renewal {canary}"),
            metadata=metadata,
            timeout=30,
        )
        await stub.ValidateSql(
            gpb.GatewayServiceValidateSqlRequest(sql=f"SELECT '{canary}' AS c"),
            metadata=metadata,
            timeout=30,
        )
        await stub.Ask(
            gpb.GatewayServiceAskRequest(question=f"What did {canary} say about renewals?"),
            metadata=metadata,
            timeout=60,
        )
        # In the Authorization header itself (an unknown key).
        refused = await _failed(
            stub.ValidateSql(VALIDATE, metadata=bearer(f"tdm_{canary}"), timeout=30)
        )
        assert refused.code == grpc.StatusCode.UNAUTHENTICATED
        entries = await _marker(stack, edge)
    logged = {e["rpc"] for e in entries}
    assert {f"/tandem.v1.GatewayService/{m}" for m in ("Search", "ValidateSql", "Ask")} <= logged
    files = [p for p in (stack.data_dir / "edge").rglob("*") if p.is_file()]
    files.append(stack.log_path("edge"))
    assert any(p.name == "access.log" for p in files)
    for path in files:
        assert canary.encode() not in path.read_bytes(), path


# -- on the private stack ----------------------------------------------------------------


async def test_streamed_events_pass_the_edge_while_the_answer_is_still_being_made(
    edge_stack: ProcessStack,
):
    stack = edge_stack
    metadata = bearer(await _key(stack, "edge-streamask"))
    arrived: list[tuple[str, bool]] = []  # (event kind, whether retrieval was still held)
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        await asyncio.to_thread(stack.pause, "retrieval")
        held = True
        try:
            stream = _stub(edge).StreamAsk(
                gpb.GatewayServiceStreamAskRequest(question=BOTH_ENGINES),
                metadata=metadata,
                timeout=60,
            )
            async for event in stream:
                kind = str(event.WhichOneof("event"))
                arrived.append((kind, held))
                if (
                    held
                    and kind == "step_started"
                    and event.step_started.tool == qpb.TOOL_SEMANTIC_SEARCH
                ):
                    await asyncio.to_thread(stack.resume, "retrieval")
                    held = False
        finally:
            await asyncio.to_thread(stack.resume, "retrieval")
    kinds = [kind for kind, _ in arrived]
    assert kinds[0] == "accepted" and kinds[-1] == "final_answer", kinds
    # Events reached the client while the semantic step could not finish: nginx streams
    # the gateway's events, it does not hold them until the call ends.
    assert arrived[0][1] and "step_started" in [k for k, h in arrived if h], arrived
    assert not arrived[-1][1], arrived


async def test_a_deadline_through_the_edge_ends_the_call_in_time(edge_stack: ProcessStack):
    stack = edge_stack
    metadata = bearer(await _key(stack, "edge-deadline"))
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        stub = _stub(edge)
        await stub.ValidateSql(VALIDATE, metadata=metadata, timeout=20)
        await asyncio.to_thread(stack.pause, "gateway")
        try:
            for timeout_s in (0.3, 1.0):
                started = time.monotonic()
                seen = await _failed(
                    stub.ValidateSql(VALIDATE, metadata=metadata, timeout=timeout_s)
                )
                took = time.monotonic() - started
                assert seen.code == grpc.StatusCode.DEADLINE_EXCEEDED, seen
                assert took <= timeout_s + LATE_S, f"{took:.3f} s for a {timeout_s} s deadline"
        finally:
            await asyncio.to_thread(stack.resume, "gateway")
        # The abandoned calls cost the edge nothing lasting: the next one is served.
        await stub.ValidateSql(VALIDATE, metadata=metadata, timeout=20)


async def test_a_key_past_the_edges_limit_is_refused_and_others_are_not(
    edge_stack: ProcessStack,
):
    stack = edge_stack
    flooding = bearer(await _key(stack, "edge-flood"))
    neighbour = bearer(await _key(stack, "edge-neighbour"))
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        stub = _stub(edge)

        async def outcome(metadata: Any) -> ErrorSeen | None:
            try:
                await stub.ValidateSql(VALIDATE, metadata=metadata, timeout=20)
            except grpc.aio.AioRpcError as exc:
                return decode(exc)
            return None

        async def neighbour_calls() -> list[ErrorSeen | None]:
            seen = []
            for _ in range(4):
                seen.append(await outcome(neighbour))
                await asyncio.sleep(0.02)
            return seen

        flood, beside = await asyncio.gather(
            asyncio.gather(*(outcome(flooding) for _ in range(20))), neighbour_calls()
        )
        assert beside == [None] * 4, beside
        admitted = [s for s in flood if s is None]
        refused = [s for s in flood if s is not None]
        # Burst 4: the first five pass (nginx admits burst + 1 at once), the rest are
        # refused at once, before the gateway (whose own quota is 10,000 a second).
        assert 1 <= len(admitted) <= 6, flood
        assert len(refused) >= 14, flood
        for seen in refused:
            assert seen.code == grpc.StatusCode.RESOURCE_EXHAUSTED, seen
            assert [(i.reason, i.domain) for i in seen.infos] == [("QUOTA_EXCEEDED", "tandem")]
            # One interval of the quota the edge was given (one a second).
            assert [r.retry_delay.ToMilliseconds() for r in seen.retries] == [1000]
            assert_contract(seen, internal=_internal(stack))

        # Calls without an Authorization header are not the edge's to limit: all of them
        # reach the gateway, which refuses them.
        anonymous = await asyncio.gather(*(outcome(()) for _ in range(20)))
        assert {s.code if s else None for s in anonymous} == {grpc.StatusCode.UNAUTHENTICATED}

        # RetryInfo is honest: after its delay the flooding key is served again.
        await asyncio.sleep(1.0)
        assert await outcome(flooding) is None
        entries = await _marker(stack, edge)
    over = [e for e in entries if e["edge_reply"] == "over_quota"]
    assert len(over) == len(refused), over
    assert {(e["grpc_status"], e["rpc"]) for e in over} == {
        ("8", "/tandem.v1.GatewayService/ValidateSql")
    }
    # The gateway's own replies are logged as the gateway's.
    answered = [e for e in entries if e["edge_reply"] == "" and e["rpc"].endswith("ValidateSql")]
    assert sum(e["grpc_status"] == "16" for e in answered) >= len(anonymous), answered
    assert sum(e["grpc_status"] == "0" for e in answered) >= len(admitted) + 5, answered


async def test_an_unreachable_gateway_is_unavailable_until_it_is_back(edge_stack: ProcessStack):
    stack = edge_stack
    metadata = bearer(await _key(stack, "edge-down"))
    edge_pid = stack.pid("edge")
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        stub = _stub(edge)
        await stub.ValidateSql(VALIDATE, metadata=metadata, timeout=20)
        await asyncio.to_thread(stack.kill, "gateway")
        try:
            for _ in range(3):
                started = time.monotonic()
                seen = await _failed(stub.ValidateSql(VALIDATE, metadata=metadata, timeout=5))
                took = time.monotonic() - started
                assert seen.code == grpc.StatusCode.UNAVAILABLE, seen
                assert [(i.reason, i.domain) for i in seen.infos] == [("UNAVAILABLE", "tandem")]
                assert [r.retry_delay.ToMilliseconds() for r in seen.retries] == [1000]
                assert_contract(seen, internal=_internal(stack))
                assert took < 0.5, f"UNAVAILABLE after {took:.3f} s"
        finally:
            await asyncio.to_thread(stack.start_service, "gateway")
        restored = time.monotonic()
        # The same channel, the same edge process: served again within RECOVERY_S.
        while True:
            try:
                await stub.ValidateSql(VALIDATE, metadata=metadata, timeout=1)
                break
            except grpc.aio.AioRpcError as exc:
                assert time.monotonic() - restored < RECOVERY_S, decode(exc)
                await asyncio.sleep(0.1)
        assert stack.pid("edge") == edge_pid
        entries = await _marker(stack, edge)
    down = [e for e in entries if e["edge_reply"] == "gateway_unavailable"]
    assert len(down) >= 3 and {e["grpc_status"] for e in down} == {"14"}, down


async def test_sigterm_drains_calls_in_flight_and_refuses_new_ones(edge_stack: ProcessStack):
    stack = edge_stack
    keys = [bearer(await _key(stack, f"edge-drain-{i}")) for i in range(4)]
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        stub = _stub(edge)
        await stub.ValidateSql(VALIDATE, metadata=keys[0], timeout=20)
        await asyncio.to_thread(stack.pause, "gateway")
        try:
            in_flight = [
                asyncio.ensure_future(stub.ValidateSql(VALIDATE, metadata=k, timeout=30))
                for k in keys
            ]
            await asyncio.sleep(0.5)  # through the edge, held by the stopped gateway
            assert not any(call.done() for call in in_flight)
            edge_pid = stack.pid("edge")
            assert edge_pid is not None
            os.kill(edge_pid, signal.SIGTERM)
            signalled = time.monotonic()
            await asyncio.sleep(0.3)
            # No new calls: a new connection is refused.
            async with grpc.aio.insecure_channel(stack.edge_address) as fresh:
                seen = await _failed(
                    _stub(fresh).ValidateSql(VALIDATE, metadata=keys[0], timeout=5)
                )
            assert seen.code == grpc.StatusCode.UNAVAILABLE, seen
            # Nor on a connection that was open before (nginx sent it GOAWAY).
            seen = await _failed(stub.ValidateSql(VALIDATE, metadata=keys[0], timeout=5))
            assert seen.code == grpc.StatusCode.UNAVAILABLE, seen
            assert not any(call.done() for call in in_flight)
        finally:
            await asyncio.to_thread(stack.resume, "gateway")
        replies = await asyncio.gather(*in_flight)
        assert all(reply.valid for reply in replies)
        while stack.returncode("edge") is None:
            assert time.monotonic() - signalled <= GRACE_S, "the edge is still running"
            await asyncio.sleep(0.05)
    assert stack.returncode("edge") == 0, stack.log_tail("edge")
    # The access log was flushed on the way out: the drained calls are in it, answered by
    # the gateway after being held at the edge across the SIGTERM.
    drained = [
        e
        for e in stack.edge_access_log()
        if e["rpc"].endswith("/ValidateSql") and e["grpc_status"] == "0" and e["request_s"] > 0.7
    ]
    assert len(drained) == len(in_flight), drained
    # Leave the stack as it was.
    await asyncio.to_thread(stack.start_service, "edge")
    assert stack.health("edge") == "SERVING"
