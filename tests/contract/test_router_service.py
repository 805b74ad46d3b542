"""RouterService through its generated stubs on a real server, wired to real retrieval
and SQL servers (embedded Postgres, real model): every RPC, every documented error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from services.router import RouterSettings
from services.router._server import RouterDeps, build_deps, create_server, ready
from services.router.offline import DeterministicProvider
from services.sql import TargetConfig, Warehouse, ensure_warehouse
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import router_service_pb2 as pb
from tandem.v1 import router_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings
from tests.integration.retrieval.stack import ingest, new_tenant
from tests.integration.router.corpus import documents
from tests.integration.router.stack import Engines, start_engines

ASK = "tandem.v1.RouterService/Ask"
STREAM = "tandem.v1.RouterService/StreamAsk"
COMPOUND = "How many opportunities are there, and summarize the onboarding call notes?"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def warehouse(pg_url: str) -> Warehouse:
    return asyncio.run(ensure_warehouse(pg_url))


@pytest.fixture
async def engines(pg_url, warehouse, embedding, telemetry_sink) -> AsyncIterator[Engines]:
    running = await start_engines(
        pg_url,
        warehouse.reader_url,
        embedding.server.address,
        telemetry_sink("engines").telemetry,
        extra_targets=(
            TargetConfig("restricted", warehouse.reader_url, tenants=frozenset({"vip"})),
        ),
    )
    yield running
    await running.close()


@pytest.fixture
async def tenant(pg_url: str, engines: Engines) -> str:
    name = new_tenant(pg_url, "contract")
    await ingest(engines.retrieval_stub, name, documents())
    return name


async def _router(
    engines: Engines | None, telemetry_sink: Any, channel_to: Any, llm: Any = None, **settings: Any
) -> tuple[pb_grpc.RouterServiceAsyncStub, Any, RouterDeps]:
    addresses = (
        {"retrieval_addr": engines.retrieval.address, "sql_addr": engines.sql.address}
        if engines is not None
        else {"retrieval_addr": "127.0.0.1:1", "sql_addr": "127.0.0.1:1"}
    )
    router_settings = RouterSettings(**{**addresses, **settings})
    telemetry = telemetry_sink("router").telemetry
    deps = build_deps(router_settings, telemetry, llm=llm or DeterministicProvider())
    server, servicer = await create_server(server_settings("router"), telemetry, router_settings)
    await ready(server, servicer, deps)
    return pb_grpc.RouterServiceStub(channel_to(server.address)), server, deps


@pytest.fixture
async def stub(
    engines, telemetry_sink, channel_to
) -> AsyncIterator[pb_grpc.RouterServiceAsyncStub]:
    stub, server, deps = await _router(engines, telemetry_sink, channel_to, min_deadline_s=0.5)
    yield stub
    await server.stop(0)
    await deps.close()


async def _status(call: Any) -> tuple[grpc.StatusCode, list[str], dict[str, str]]:
    status = await rpc_status.aio.from_call(call)
    bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
    for detail in status.details if status else []:
        if detail.Is(bad.DESCRIPTOR):
            detail.Unpack(bad)
        elif detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
    return (
        await call.code(),
        [v.field for v in bad.field_violations],
        {
            "reason": info.reason,
            **dict(info.metadata),
        },
    )


async def _error(stub: Any, method: str, request: Any, deadline_s: float = 20) -> tuple[Any, ...]:
    if method == "Ask":
        call = stub.Ask(request, timeout=deadline_s)
        with pytest.raises(grpc.aio.AioRpcError):
            await call
        return await _status(call)
    call = stub.StreamAsk(pb.StreamAskRequest(**_fields(request)), timeout=deadline_s)
    with pytest.raises(grpc.aio.AioRpcError):
        async for _ in call:
            pytest.fail("StreamAsk errors end the stream before any event")
    return await _status(call)


def _fields(request: pb.AskRequest) -> dict[str, Any]:
    return {
        "tenant_id": request.tenant_id,
        "question": request.question,
        "mode": request.mode,
        "options": request.options,
    }


# --- success -----------------------------------------------------------------------------


@pytest.mark.rpc(ASK)
async def test_ask_answers_a_compound_question_with_citations(stub, tenant):
    response = await stub.Ask(
        pb.AskRequest(
            tenant_id=tenant, question=COMPOUND, options=pb.AskOptions(include_trajectory=True)
        ),
        timeout=30,
    )
    answer = response.answer
    assert answer.request_id and answer.text
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED
    assert answer.mode == pb.ASK_MODE_AUTO and answer.route == pb.ROUTE_COMPOUND
    assert len(answer.trajectory) == 2 and answer.tool_calls >= 2
    assert {c.kind for c in answer.citations} == {
        cpb.CITATION_KIND_PASSAGE,
        cpb.CITATION_KIND_SQL_RESULT,
    }
    assert answer.sql_results and answer.sql_results[0].result.fingerprint
    assert answer.guardrail_report.enabled_layers
    assert {t.stage for t in answer.timings} >= {"plan", "execute", "synthesize", "total"}
    assert 0 < answer.confidence <= 1


@pytest.mark.rpc(ASK)
async def test_each_mode_takes_its_route(stub, tenant):
    expected = {
        pb.ASK_MODE_RETRIEVE: pb.ROUTE_RETRIEVE,
        pb.ASK_MODE_AGENTIC: pb.ROUTE_AGENTIC,
        pb.ASK_MODE_SQL: pb.ROUTE_SQL,
    }
    questions = {
        pb.ASK_MODE_RETRIEVE: "healthcare analytics clinics",
        pb.ASK_MODE_AGENTIC: "Which accounts want healthcare analytics?",
        pb.ASK_MODE_SQL: "How many companies are there?",
    }
    for mode, route in expected.items():
        answer = (
            await stub.Ask(
                pb.AskRequest(tenant_id=tenant, question=questions[mode], mode=mode), timeout=30
            )
        ).answer
        assert (answer.mode, answer.route) == (mode, route)
        assert answer.citations and answer.guardrail_report.enabled_layers
        assert not answer.trajectory  # only with include_trajectory
    retrieve = (
        await stub.Ask(
            pb.AskRequest(
                tenant_id=tenant, question="healthcare analytics", mode=pb.ASK_MODE_RETRIEVE
            ),
            timeout=30,
        )
    ).answer
    assert retrieve.usage.calls == 0  # RETRIEVE runs no LLM role at all


@pytest.mark.rpc(STREAM)
async def test_stream_ask_sends_accepted_plan_steps_deltas_citations_final(stub, tenant):
    events = [
        e
        async for e in stub.StreamAsk(
            pb.StreamAskRequest(tenant_id=tenant, question=COMPOUND), timeout=30
        )
    ]
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "accepted" and kinds[-1] == "final_answer"
    assert {"plan", "step_started", "step_finished", "answer_delta", "citation"} <= set(kinds)
    final = events[-1].final_answer
    assert "".join(e.answer_delta.text for e in events if e.HasField("answer_delta")) == final.text
    assert events[0].accepted.mode == pb.ASK_MODE_AUTO
    elapsed = [e.elapsed.ToNanoseconds() for e in events]
    assert elapsed == sorted(elapsed)


# --- documented errors -------------------------------------------------------------------


def _bad_requests(tenant: str) -> list[tuple[pb.AskRequest, str]]:
    def ask(**fields: Any) -> pb.AskRequest:
        options = fields.pop("options", {})
        return pb.AskRequest(
            **{"tenant_id": tenant, "question": "How many deals?", **fields},
            options=pb.AskOptions(**options),
        )

    return [
        (ask(tenant_id=""), "tenant_id"),
        (ask(tenant_id="Bad Tenant!"), "tenant_id"),
        (ask(question=""), "question"),
        (ask(question="   "), "question"),
        (ask(question="x" * 4001), "question"),
        (ask(options={"top_k": -1}), "options.top_k"),
        (ask(options={"top_k": 51}), "options.top_k"),
        (ask(options={"max_tool_calls": -1}), "options.max_tool_calls"),
        (ask(options={"max_tool_calls": 13}), "options.max_tool_calls"),
        (ask(options={"max_rows": -1}), "options.max_rows"),
        (ask(options={"max_rows": 1001}), "options.max_rows"),
        (
            ask(options={"search_filter": {"document_ids": [f"d{i}" for i in range(1001)]}}),
            "options.search_filter.document_ids",
        ),
        (ask(mode=99), "mode"),
    ]


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM)
async def test_invalid_requests_name_the_field(stub, tenant):
    for method in ("Ask", "StreamAsk"):
        for request, field in _bad_requests(tenant):
            code, fields, info = await _error(stub, method, request)
            assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field]), (method, field)
            assert info["reason"] == "INVALID_ARGUMENT"


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM)
async def test_unknown_database_and_forbidden_database(stub, tenant):
    for method in ("Ask", "StreamAsk"):
        unknown = pb.AskRequest(
            tenant_id=tenant, question=COMPOUND, options=pb.AskOptions(database="nope")
        )
        code, fields, info = await _error(stub, method, unknown)
        assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["options.database"])
        assert info == {"reason": "UNKNOWN_DATABASE", "database": "nope"}
        forbidden = pb.AskRequest(
            tenant_id=tenant, question=COMPOUND, options=pb.AskOptions(database="restricted")
        )
        code, _, info = await _error(stub, method, forbidden)
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert info == {"reason": "DATABASE_NOT_ALLOWED", "database": "restricted"}


@pytest.mark.rpc(ASK)
async def test_auto_for_a_tenant_without_a_database_answers_from_documents(
    pg_url, warehouse, embedding, telemetry_sink, channel_to
):
    # Every tenant a user adds has no SQL database until one is configured for it: a
    # countable question in AUTO degrades to the documents instead of failing the Ask.
    running = await start_engines(
        pg_url,
        warehouse.reader_url,
        embedding.server.address,
        telemetry_sink("engines").telemetry,
        warehouse_tenants=frozenset({"someone-else"}),
    )
    stub, server, deps = await _router(running, telemetry_sink, channel_to)
    try:
        name = new_tenant(pg_url, "nodb")
        await ingest(running.retrieval_stub, name, documents())
        for question in (COMPOUND, "How many onboarding call notes mention data migration?"):
            response = await stub.Ask(pb.AskRequest(tenant_id=name, question=question), timeout=30)
            answer = response.answer
            reasons = {d.reason for d in answer.degradations}
            assert cpb.DEGRADATION_REASON_NO_DATABASE in reasons
            assert cpb.DEGRADATION_REASON_STEP_FAILED not in reasons or (
                answer.outcome == pb.ANSWER_OUTCOME_PARTIAL
            )
            assert answer.confidence <= 0.5
        # The same question naming a database the tenant may not query is still refused.
        named = pb.AskRequest(
            tenant_id=name, question=COMPOUND, options=pb.AskOptions(database="warehouse")
        )
        code, _, info = await _error(stub, "Ask", named)
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert info["reason"] == "DATABASE_NOT_ALLOWED"
    finally:
        await server.stop(0)
        await deps.close()
        await running.close()


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM)
async def test_deadline_too_short_on_arrival(stub, tenant):
    for method in ("Ask", "StreamAsk"):
        request = pb.AskRequest(tenant_id=tenant, question=COMPOUND)
        code, _, info = await _error(stub, method, request, deadline_s=0.3)
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert info["reason"] == "DEADLINE_TOO_SHORT"


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM)
async def test_client_cancellation_is_cancelled(stub, engines, tenant):
    engines.retrieval_log.delays["Search"] = 5.0
    request = pb.AskRequest(tenant_id=tenant, question="healthcare", mode=pb.ASK_MODE_AGENTIC)
    call = stub.Ask(request, timeout=30)
    await asyncio.sleep(0.3)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert call.cancelled()
    stream = stub.StreamAsk(pb.StreamAskRequest(**_fields(request)), timeout=30)
    assert (await stream.read()).HasField("accepted")
    stream.cancel()
    assert stream.cancelled()


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM)
async def test_unreachable_engines_degrade_instead_of_unavailable(telemetry_sink, channel_to):
    stub, server, deps = await _router(None, telemetry_sink, channel_to)
    try:
        answer = (
            await stub.Ask(pb.AskRequest(tenant_id="acme", question=COMPOUND), timeout=20)
        ).answer
        assert answer.degraded and answer.outcome == pb.ANSWER_OUTCOME_PARTIAL
        reasons = {d.reason for d in answer.degradations}
        assert {
            cpb.DEGRADATION_REASON_RETRIEVAL_UNAVAILABLE,
            cpb.DEGRADATION_REASON_SQL_UNAVAILABLE,
        } <= reasons
        events = [
            e
            async for e in stub.StreamAsk(
                pb.StreamAskRequest(tenant_id="acme", question=COMPOUND), timeout=20
            )
        ]
        assert events[-1].final_answer.degraded
    finally:
        await server.stop(0)
        await deps.close()


@pytest.mark.rpc(ASK)
async def test_not_ready_is_unavailable_and_health_flips_when_ready(
    engines, telemetry_sink, channel_to
):
    telemetry = telemetry_sink("router").telemetry
    server, servicer = await create_server(server_settings("router"), telemetry)
    try:
        channel = channel_to(server.address)
        health = health_pb2_grpc.HealthStub(channel)
        check = health_pb2.HealthCheckRequest(service="tandem.v1.RouterService")
        assert (await health.Check(check, timeout=5)).status == (
            health_pb2.HealthCheckResponse.NOT_SERVING
        )
        code, _, _ = await _error(
            pb_grpc.RouterServiceStub(channel), "Ask", pb.AskRequest(tenant_id="a", question="q")
        )
        assert code == grpc.StatusCode.UNAVAILABLE
        settings = RouterSettings(
            retrieval_addr=engines.retrieval.address, sql_addr=engines.sql.address
        )
        deps = build_deps(settings, telemetry, llm=DeterministicProvider())
        await ready(server, servicer, deps)
        assert (await health.Check(check, timeout=5)).status == (
            health_pb2.HealthCheckResponse.SERVING
        )
        await deps.close()
    finally:
        await server.stop(0)


# --- conversations: follow-ups resolved against the history the gateway sends ------------


@pytest.mark.rpc(ASK)
async def test_a_follow_up_is_resolved_against_the_history_and_echoes_the_conversation(
    stub, tenant
):
    first = (
        await stub.Ask(
            pb.AskRequest(
                tenant_id=tenant, question="How many companies are in Germany?",
                conversation_id="c-1",
            ),
            timeout=30,
        )
    ).answer  # fmt: skip
    assert first.resolution.kind == pb.FOLLOW_UP_KIND_STANDALONE
    assert first.turn.question == "How many companies are in Germany?"
    assert first.turn.sql_fingerprints and first.turn.row_count == 1
    follow = (
        await stub.Ask(
            pb.AskRequest(
                tenant_id=tenant, question="what about France?", conversation_id="c-1",
                history=[first.turn],
            ),
            timeout=30,
        )
    ).answer  # fmt: skip
    assert follow.conversation_id == "c-1"
    assert follow.resolution.kind == pb.FOLLOW_UP_KIND_VALUE_SWAP
    assert follow.resolution.resolved_question == "How many companies are in France?"
    assert follow.resolution.history_turns == 1
    assert follow.turn.resolved_question == follow.resolution.resolved_question
    assert follow.timings[0].stage == "resolve"
    # The SQL service got the standalone question (France and Germany happen to hold the
    # same number of companies, so the statement tells them apart, not the fingerprint).
    assert "'France'" in follow.sql_results[0].result.sql


async def _turn(stub: Any, tenant: str, question: str, history: list[Any]) -> Any:
    reply = await stub.Ask(
        pb.AskRequest(tenant_id=tenant, question=question, conversation_id="c-3",
                      history=history),
        timeout=60,
    )  # fmt: skip
    return reply.answer


@pytest.mark.rpc(ASK)
async def test_a_narrowing_and_a_time_shift_edit_the_previous_statement(stub, tenant):
    first = await _turn(stub, tenant, "How many companies are there in each industry?", [])
    assert first.sql_results and "GROUP BY" in first.sql_results[0].result.sql
    narrowed = await _turn(stub, tenant, "only those in France", [first.turn])
    assert narrowed.resolution.kind == pb.FOLLOW_UP_KIND_FILTER
    sql = narrowed.sql_results[0].result.sql
    # the earlier grouping and count, with the condition the words link to added
    assert "'France'" in sql and "GROUP BY" in sql and "COUNT(" in sql.upper()
    total = sum(int(r.values[-1].int_value) for r in first.sql_results[0].result.rows)
    part = sum(int(r.values[-1].int_value) for r in narrowed.sql_results[0].result.rows)
    assert 0 < part < total
    counted = await _turn(stub, tenant, "How many opportunities were created in 2024?", [])
    shifted = await _turn(stub, tenant, "and the year before?", [counted.turn])
    assert shifted.resolution.kind == pb.FOLLOW_UP_KIND_TIME_SHIFT
    assert shifted.resolution.resolved_question == "How many opportunities were created in 2023?"
    moved = shifted.sql_results[0].result.sql
    assert "'2023-01-01'" in moved and "'2024-01-01'" in moved and "'2025-01-01'" not in moved


@pytest.mark.rpc(ASK)
async def test_the_group_with_the_most_and_a_row_count_said_with_reduce_cut_the_statement(
    stub, tenant
):
    """ "which one had the most?" after a breakdown is its first row by its measure;
    "reduce that to 1" after a ranking is a row count, not a request to change data."""
    first = await _turn(stub, tenant, "How many companies are there in each industry?", [])
    counts = [int(r.values[-1].int_value) for r in first.sql_results[0].result.rows]
    top = await _turn(stub, tenant, "which one had the most?", [first.turn])
    assert top.resolution.kind == pb.FOLLOW_UP_KIND_LIMIT
    (row,) = top.sql_results[0].result.rows
    assert int(row.values[-1].int_value) == max(counts)
    cut = await _turn(stub, tenant, "reduce that to 1", [first.turn])
    assert cut.resolution.kind == pb.FOLLOW_UP_KIND_LIMIT and not cut.refusal_reason
    assert [r.values[-1].int_value for r in cut.sql_results[0].result.rows] == [max(counts)]
    # after an answer of one row, "that" is the value shown: a change of data, declined
    again = await _turn(stub, tenant, "reduce that to 1", [first.turn, top.turn])
    assert again.refusal_reason == "SQL_READ_ONLY"


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM)
async def test_dropping_a_filter_removes_it_and_a_request_to_change_data_stays_declined(
    stub, tenant
):
    """ "drop the country filter" after a narrowing is the earlier breakdown again, not a
    request to change data (issue 45, s62); "delete …", "drop the … table", "remove the
    cancelled …" stay declined on Ask and StreamAsk, with and without an earlier answer."""
    first = await _turn(stub, tenant, "How many companies are there in each industry?", [])
    narrowed = await _turn(stub, tenant, "only those in France", [first.turn])
    assert "'France'" in narrowed.sql_results[0].result.sql
    dropped = await _turn(stub, tenant, "drop the country filter", [first.turn, narrowed.turn])
    assert dropped.resolution.kind == pb.FOLLOW_UP_KIND_FILTER and not dropped.refusal_reason
    assert "'France'" not in dropped.sql_results[0].result.sql
    rows = [[v.int_value for v in r.values[-1:]] for r in first.sql_results[0].result.rows]
    again = [[v.int_value for v in r.values[-1:]] for r in dropped.sql_results[0].result.rows]
    assert sorted(again) == sorted(rows)
    for question in (
        "Delete all cancelled orders", "drop the orders table", "remove the cancelled orders"
    ):  # fmt: skip
        for history in ([], [first.turn, narrowed.turn]):
            asked = await _turn(stub, tenant, question, history)
            assert asked.refusal_reason == "SQL_READ_ONLY", question
            events = [e async for e in stub.StreamAsk(
                pb.StreamAskRequest(tenant_id=tenant, question=question,
                                    conversation_id="c-4", history=history),
                timeout=30,
            )]  # fmt: skip
            assert events[-1].final_answer.refusal_reason == "SQL_READ_ONLY", question


@pytest.mark.rpc(STREAM)
async def test_stream_ask_resolves_and_an_unresolvable_reference_is_said_not_guessed(stub, tenant):
    count = pb.ConversationTurn(
        question="How many companies are in Germany?",
        resolved_question="How many companies are in Germany?",
        route=pb.ROUTE_SQL,
        row_count=1,
    )
    events = [
        e
        async for e in stub.StreamAsk(
            pb.StreamAskRequest(
                tenant_id=tenant, question="What do the call notes say about the second one?",
                conversation_id="c-2", history=[count],
            ),
            timeout=30,
        )
    ]  # fmt: skip
    assert events[0].accepted.conversation_id == "c-2"
    final = events[-1].final_answer
    assert final.resolution.kind == pb.FOLLOW_UP_KIND_UNRESOLVED
    assert "second one" in final.resolution.unresolved_reason
    assert final.outcome == pb.ANSWER_OUTCOME_NOT_FOUND
    assert "can't tell" in final.text and not final.citations and not final.sql_results
    assert "".join(e.answer_delta.text for e in events if e.HasField("answer_delta")) == final.text


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM)
async def test_oversized_history_and_conversation_ids_name_the_field(stub, tenant):
    long_turn = pb.ConversationTurn(question="q" * 4001, resolved_question="q")
    for request, field in (
        (pb.AskRequest(tenant_id=tenant, question="q", history=[long_turn]),
         "history[0].question"),
        (pb.AskRequest(tenant_id=tenant, question="q", conversation_id="c" * 257),
         "conversation_id"),
    ):  # fmt: skip
        code, fields, _ = await _error(stub, "Ask", request)
        assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])
        call = stub.StreamAsk(
            pb.StreamAskRequest(
                tenant_id=tenant, question="q", history=request.history,
                conversation_id=request.conversation_id,
            ),
            timeout=20,
        )  # fmt: skip
        with pytest.raises(grpc.aio.AioRpcError):
            async for _ in call:
                pytest.fail("errors end the stream before any event")
        assert (await _status(call))[:2] == (grpc.StatusCode.INVALID_ARGUMENT, [field])
