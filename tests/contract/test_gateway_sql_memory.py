"""GatewayService's answer-memory RPCs through the generated stubs, in front of the real
SQL service with its memory on (embedded Postgres, the real embedding model over gRPC):
SubmitSqlFeedback, TeachSql, ListConfirmedPairs, DeleteConfirmedPair — success, the
gateway's own errors (UNAUTHENTICATED, RESOURCE_EXHAUSTED, INVALID_ARGUMENT naming the
field) and the SQL service's errors passed through; and AskSql's answer_id, reuse and
citation crossing the public contract."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gateway import GatewaySettings, Scope
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import router_service_pb2 as rpb
from tandem.v1 import sql_service_pb2 as spb
from tests.integration.gateway.stack import (
    Gateway,
    Sql,
    bearer,
    start_gateway,
    start_router,
    start_sql,
)
from tests.integration.retrieval.stack import new_tenant
from tests.scopes import PINNED_RPC_SCOPES

FEEDBACK = "tandem.v1.GatewayService/SubmitSqlFeedback"
TEACH = "tandem.v1.GatewayService/TeachSql"
LIST = "tandem.v1.GatewayService/ListConfirmedPairs"
DELETE = "tandem.v1.GatewayService/DeleteConfirmedPair"
ASK_SQL = "tandem.v1.GatewayService/AskSql"
ASK = "tandem.v1.GatewayService/Ask"
STREAM_ASK = "tandem.v1.GatewayService/StreamAsk"

pytestmark = pytest.mark.integration

GERMANY = "How many companies are in Germany?"
GERMANY_SQL = "SELECT count(*) FROM companies WHERE country = 'Germany'"
UNREACHABLE = "127.0.0.1:9"  # router and retrieval: these RPCs never call them


@pytest.fixture
async def memory_sql(pg_url, embedding, telemetry_sink) -> AsyncIterator[Sql]:
    service = await start_sql(
        pg_url, telemetry_sink("sql").telemetry, embedding_addr=embedding.server.address
    )
    yield service
    await service.close()


@pytest.fixture
async def make_gateway(pg_url, memory_sql, telemetry_sink) -> AsyncIterator[Any]:
    made: list[Gateway] = []

    async def make(**settings: Any) -> Gateway:
        made.append(
            await start_gateway(
                pg_url,
                telemetry_sink("gateway").telemetry,
                router_addr=UNREACHABLE,
                retrieval_addr=UNREACHABLE,
                sql_addr=memory_sql.address,
                settings=GatewaySettings(**{"rate_per_s": 1000.0, "burst": 1000.0, **settings}),
            )
        )
        return made[-1]

    yield make
    for gateway in made:
        await gateway.close()


@pytest.fixture
async def gateway(make_gateway) -> Gateway:
    return await make_gateway()  # type: ignore[no-any-return]


async def _key(gateway: Gateway, pg_url: str) -> tuple[tuple[str, str], ...]:
    return bearer(await gateway.key(new_tenant(pg_url, "mem")))


async def _error(call: Any) -> tuple[grpc.StatusCode, list[str], str, dict[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    status = await rpc_status.aio.from_call(call)
    fields: list[str] = []
    reason, metadata = "", {}
    for detail in status.details if status else []:
        bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
        if detail.Unpack(bad):
            fields = [v.field for v in bad.field_violations]
        elif detail.Unpack(info):
            reason, metadata = info.reason, dict(info.metadata)
    return err.value.code(), fields, reason, metadata


VALID: dict[str, tuple[str, Any]] = {
    FEEDBACK: ("SubmitSqlFeedback", gpb.GatewayServiceSubmitSqlFeedbackRequest(
        answer_id=str(uuid.uuid4()), rating=spb.FEEDBACK_RATING_WRONG)),
    TEACH: ("TeachSql", gpb.GatewayServiceTeachSqlRequest(question=GERMANY, sql=GERMANY_SQL)),
    LIST: ("ListConfirmedPairs", gpb.GatewayServiceListConfirmedPairsRequest()),
    DELETE: ("DeleteConfirmedPair", gpb.GatewayServiceDeleteConfirmedPairRequest(
        pair_id=str(uuid.uuid4()), allow_missing=True)),
}  # fmt: skip
INVALID: dict[str, tuple[Any, str]] = {
    FEEDBACK: (gpb.GatewayServiceSubmitSqlFeedbackRequest(answer_id=str(uuid.uuid4())), "rating"),
    TEACH: (gpb.GatewayServiceTeachSqlRequest(question=GERMANY), "sql"),
    LIST: (gpb.GatewayServiceListConfirmedPairsRequest(page_size=1001), "page_size"),
    DELETE: (gpb.GatewayServiceDeleteConfirmedPairRequest(), "pair_id"),
}
ALL = list(VALID)


def _each() -> list[Any]:
    return [pytest.param(name, marks=pytest.mark.rpc(name), id=name.split("/")[1]) for name in ALL]


@pytest.mark.parametrize("rpc", _each())
async def test_without_a_key_each_memory_rpc_is_unauthenticated(gateway, rpc):
    method, request = VALID[rpc]
    code, _, _, _ = await _error(getattr(gateway.stub, method)(request))
    assert code == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize("rpc", _each())
async def test_a_key_without_the_rpcs_scope_is_refused_and_nothing_is_taught(gateway, pg_url, rpc):
    # A second key of the tenant once taught "refunded -> SELECT 0" to every user: pairs
    # and feedback that change reuse need the teach scope; listing pairs only ask.
    method, request = VALID[rpc]
    needed = Scope(PINNED_RPC_SCOPES[method])  # by hand, not read from the gateway
    tenant = new_tenant(pg_url, "mem")
    narrow = await gateway.key(tenant, scopes=tuple(s for s in Scope if s is not needed))
    code, _, reason, metadata = await _error(
        getattr(gateway.stub, method)(request, metadata=bearer(narrow))
    )
    assert (code, reason, metadata) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "API_KEY_SCOPE_MISSING",
        {"scope": needed.value},
    )
    full = bearer(await gateway.key(tenant))
    listed = await gateway.stub.ListConfirmedPairs(
        gpb.GatewayServiceListConfirmedPairsRequest(), metadata=full
    )
    assert list(listed.pairs) == []


@pytest.mark.parametrize("rpc", _each())
async def test_each_memory_rpc_names_the_invalid_field(gateway, pg_url, rpc):
    method, _ = VALID[rpc]
    request, field = INVALID[rpc]
    metadata = await _key(gateway, pg_url)
    code, fields, _, _ = await _error(getattr(gateway.stub, method)(request, metadata=metadata))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


@pytest.mark.parametrize("rpc", _each())
async def test_past_the_quota_each_memory_rpc_is_resource_exhausted(make_gateway, pg_url, rpc):
    gateway = await make_gateway(rate_per_s=0.01, burst=1.0)
    method, request = VALID[rpc]
    metadata = await _key(gateway, pg_url)
    with pytest.raises(grpc.aio.AioRpcError):  # the first call spends the burst
        await getattr(gateway.stub, method)(
            gpb.GatewayServiceListConfirmedPairsRequest(page_size=-1)
            if method == "ListConfirmedPairs"
            else type(request)(),
            metadata=metadata,
        )
    code, _, _, _ = await _error(getattr(gateway.stub, method)(request, metadata=metadata))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.mark.rpc(TEACH)
@pytest.mark.rpc(LIST)
@pytest.mark.rpc(DELETE)
async def test_teach_list_delete_round_trip_scoped_to_the_key(gateway, pg_url):
    mine, theirs = await _key(gateway, pg_url), await _key(gateway, pg_url)
    taught = await gateway.stub.TeachSql(
        gpb.GatewayServiceTeachSqlRequest(question=GERMANY, sql=GERMANY_SQL), metadata=mine
    )
    assert taught.pair.source == spb.CONFIRMED_PAIR_SOURCE_TAUGHT
    listed = await gateway.stub.ListConfirmedPairs(
        gpb.GatewayServiceListConfirmedPairsRequest(), metadata=mine
    )
    assert [p.pair_id for p in listed.pairs] == [taught.pair.pair_id]
    other = await gateway.stub.ListConfirmedPairs(
        gpb.GatewayServiceListConfirmedPairsRequest(), metadata=theirs
    )
    assert not other.pairs
    code, _, reason, _ = await _error(
        gateway.stub.DeleteConfirmedPair(
            gpb.GatewayServiceDeleteConfirmedPairRequest(pair_id=taught.pair.pair_id),
            metadata=theirs,
        )
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "CONFIRMED_PAIR_NOT_FOUND")
    deleted = await gateway.stub.DeleteConfirmedPair(
        gpb.GatewayServiceDeleteConfirmedPairRequest(pair_id=taught.pair.pair_id), metadata=mine
    )
    assert deleted.deleted


@pytest.mark.rpc(TEACH)
async def test_teach_passes_the_gate_refusal_through_naming_the_rule(gateway, pg_url):
    code, fields, reason, metadata = await _error(
        gateway.stub.TeachSql(
            gpb.GatewayServiceTeachSqlRequest(
                question="q", sql="SELECT * FROM pg_catalog.pg_roles"
            ),
            metadata=await _key(gateway, pg_url),
        )
    )
    assert (code, fields, reason) == (grpc.StatusCode.INVALID_ARGUMENT, ["sql"], "SQL_REJECTED")
    assert metadata["rule"] == "SQL_GATE_RULE_SYSTEM_SCHEMA"


@pytest.mark.rpc(ASK_SQL)
@pytest.mark.rpc(FEEDBACK)
async def test_feedback_on_an_answer_then_reuse_with_another_value(gateway, pg_url):
    mine, theirs = await _key(gateway, pg_url), await _key(gateway, pg_url)
    answer = await gateway.stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question=GERMANY), metadata=mine
    )
    assert answer.outcome == spb.SQL_ASK_OUTCOME_ANSWERED
    assert uuid.UUID(answer.answer_id)
    code, _, reason, _ = await _error(
        gateway.stub.SubmitSqlFeedback(
            gpb.GatewayServiceSubmitSqlFeedbackRequest(
                answer_id=answer.answer_id, rating=spb.FEEDBACK_RATING_HELPFUL
            ),
            metadata=theirs,
        )
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "ANSWER_NOT_FOUND")
    feedback = await gateway.stub.SubmitSqlFeedback(
        gpb.GatewayServiceSubmitSqlFeedbackRequest(
            answer_id=answer.answer_id, rating=spb.FEEDBACK_RATING_HELPFUL, note="right"
        ),
        metadata=mine,
    )
    assert feedback.pair.source == spb.CONFIRMED_PAIR_SOURCE_HELPFUL
    reused = await gateway.stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question="How many companies are in Japan?"),
        metadata=mine,
    )
    assert reused.confirmed_pair.pair_id == feedback.pair.pair_id
    assert reused.confirmed_pair.similarity > 0.9
    assert "'Japan'" in reused.result.sql
    assert [c.kind for c in reused.citations] == [cpb.CITATION_KIND_CONFIRMED_PAIR]
    stranger = await gateway.stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question="How many companies are in Japan?"),
        metadata=theirs,
    )
    assert not stranger.HasField("confirmed_pair")


@pytest.mark.rpc(FEEDBACK)
async def test_a_refused_correction_passes_through_naming_the_rule(gateway, pg_url):
    mine = await _key(gateway, pg_url)
    answer = await gateway.stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question=GERMANY), metadata=mine
    )
    code, fields, reason, metadata = await _error(
        gateway.stub.SubmitSqlFeedback(
            gpb.GatewayServiceSubmitSqlFeedbackRequest(
                answer_id=answer.answer_id, rating=spb.FEEDBACK_RATING_WRONG,
                corrected_sql="SELECT 1; DROP TABLE companies",
            ),
            metadata=mine,
        )
    )  # fmt: skip
    assert (code, fields, reason) == (
        grpc.StatusCode.INVALID_ARGUMENT, ["corrected_sql"], "SQL_REJECTED"
    )  # fmt: skip
    assert metadata["rule"] == "SQL_GATE_RULE_SINGLE_STATEMENT"


@pytest.fixture
async def asking_gateway(pg_url, memory_sql, telemetry_sink) -> AsyncIterator[Gateway]:
    """The gateway in front of the real router, which asks the memory-on SQL service
    (retrieval unreachable: these questions never search)."""
    router = await start_router(UNREACHABLE, memory_sql.address, telemetry_sink("router").telemetry)
    made = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr=router.address,
        retrieval_addr=UNREACHABLE,
        sql_addr=memory_sql.address,
    )
    yield made
    await made.close()
    await router.close()


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(STREAM_ASK)
@pytest.mark.rpc(FEEDBACK)
async def test_an_ask_answer_carries_the_sql_answer_id_that_feedback_accepts(
    asking_gateway, pg_url
):
    gateway = asking_gateway
    mine, theirs = await _key(gateway, pg_url), await _key(gateway, pg_url)
    sql_mode = gpb.GatewayServiceAskRequest(question=GERMANY, mode=rpb.ASK_MODE_SQL)
    answer = (await gateway.stub.Ask(sql_mode, metadata=mine)).answer
    assert answer.route == rpb.ROUTE_SQL
    assert uuid.UUID(answer.answer_id)
    assert [r.answer_id for r in answer.sql_results] == [answer.answer_id]
    code, _, reason, _ = await _error(
        gateway.stub.SubmitSqlFeedback(
            gpb.GatewayServiceSubmitSqlFeedbackRequest(
                answer_id=answer.answer_id, rating=spb.FEEDBACK_RATING_HELPFUL
            ),
            metadata=theirs,
        )
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "ANSWER_NOT_FOUND")
    feedback = await gateway.stub.SubmitSqlFeedback(
        gpb.GatewayServiceSubmitSqlFeedbackRequest(
            answer_id=answer.answer_id, rating=spb.FEEDBACK_RATING_HELPFUL
        ),
        metadata=mine,
    )
    assert feedback.pair.source == spb.CONFIRMED_PAIR_SOURCE_HELPFUL
    assert feedback.pair.question == GERMANY
    # The stream's final answer carries its own answer id (a new answer, a new id).
    events = [
        e
        async for e in gateway.stub.StreamAsk(
            gpb.GatewayServiceStreamAskRequest(question=GERMANY, mode=rpb.ASK_MODE_SQL),
            metadata=mine,
        )
    ]
    final = events[-1].final_answer
    assert uuid.UUID(final.answer_id) and final.answer_id != answer.answer_id
    assert final.sql_results[0].answer_id == final.answer_id
    # An answer that drew on no SQL result has nothing to give feedback on.
    retrieved = await gateway.stub.Ask(
        gpb.GatewayServiceAskRequest(question=GERMANY, mode=rpb.ASK_MODE_RETRIEVE), metadata=mine
    )
    assert not retrieved.answer.sql_results and retrieved.answer.answer_id == ""
