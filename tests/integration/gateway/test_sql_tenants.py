"""SQL databases are closed to tenants by default: the demo warehouse, set up exactly as
the SQL service sets it up from its settings, serves tenant ``demo`` and nobody else,
through every public RPC that can reach it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass

import grpc
import psycopg
import pytest

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import router_service_pb2 as rpb
from tandem.v1 import sql_service_pb2 as spb
from tests.integration.gateway.stack import (
    Gateway,
    Router,
    Sql,
    bearer,
    start_gateway,
    start_router,
    start_sql,
)

pytestmark = pytest.mark.integration

QUESTION = "How many companies are there?"
MODES = (rpb.ASK_MODE_AUTO, rpb.ASK_MODE_RETRIEVE, rpb.ASK_MODE_AGENTIC, rpb.ASK_MODE_SQL)


@dataclass
class Stack:
    gateway: Gateway
    demo_key: str
    other_key: str
    companies: int


@pytest.fixture
async def stack(pg_url, retrieval, telemetry_sink) -> AsyncIterator[Stack]:
    sql: Sql = await start_sql(pg_url, telemetry_sink("sql").telemetry, as_configured=True)
    router: Router = await start_router(
        retrieval.server.address, sql.address, telemetry_sink("router").telemetry
    )
    gateway = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr=router.address,
        retrieval_addr=retrieval.server.address,
        sql_addr=sql.address,
    )
    with psycopg.connect(sql.deps.targets.get("warehouse").config.url) as conn:
        row = conn.execute("SELECT count(*) FROM public.companies").fetchone()
    assert row is not None
    try:
        yield Stack(gateway, await gateway.key("demo"), await gateway.key("acme"), int(row[0]))
    finally:
        await gateway.close()
        await router.close()
        await sql.close()


def _intent() -> spb.SqlIntent:
    return spb.SqlIntent(kind=spb.INTENT_KIND_COUNT, table="companies")


async def _denied(call: Awaitable[object]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() is grpc.StatusCode.PERMISSION_DENIED, caught.value.details()
    assert "'warehouse'" in (caught.value.details() or "")  # names the database
    return caught.value


async def test_the_demo_tenant_reads_the_demo_warehouse(stack: Stack) -> None:
    stub, key = stack.gateway.stub, bearer(stack.demo_key)
    counted = await stub.RunSqlIntent(
        gpb.GatewayServiceRunSqlIntentRequest(intent=_intent()), metadata=key, timeout=30
    )
    assert counted.result.rows[0].values[0].int_value == stack.companies
    asked = await stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question=QUESTION), metadata=key, timeout=30
    )
    assert asked.outcome == spb.SQL_ASK_OUTCOME_ANSWERED
    answer = await stub.Ask(
        gpb.GatewayServiceAskRequest(question=QUESTION, mode=rpb.ASK_MODE_SQL),
        metadata=key,
        timeout=60,
    )
    assert any(r.result.rows for r in answer.answer.sql_results)


async def test_another_tenant_cannot_read_the_demo_warehouse_through_any_rpc(
    stack: Stack,
) -> None:
    stub, key = stack.gateway.stub, bearer(stack.other_key)
    await _denied(
        stub.AskSql(gpb.GatewayServiceAskSqlRequest(question=QUESTION), metadata=key, timeout=30)
    )
    await _denied(
        stub.RunSqlIntent(
            gpb.GatewayServiceRunSqlIntentRequest(intent=_intent()), metadata=key, timeout=30
        )
    )
    await _denied(
        stub.ValidateSql(
            gpb.GatewayServiceValidateSqlRequest(sql="SELECT name FROM companies"),
            metadata=key,
            timeout=30,
        )
    )
    await _denied(
        stub.DescribeSchema(gpb.GatewayServiceDescribeSchemaRequest(), metadata=key, timeout=30)
    )
    for mode in MODES:
        name = rpb.AskMode.Name(mode)
        try:
            reply = await stub.Ask(
                gpb.GatewayServiceAskRequest(question=QUESTION, mode=mode),
                metadata=key,
                timeout=60,
            )
        except grpc.aio.AioRpcError as exc:  # refused outright: nothing was read either
            assert exc.code() is grpc.StatusCode.PERMISSION_DENIED, (name, exc.details())
        else:
            _no_warehouse_rows(reply.answer, stack.companies, name)
        try:
            async for event in stub.StreamAsk(
                gpb.GatewayServiceStreamAskRequest(question=QUESTION, mode=mode),
                metadata=key,
                timeout=60,
            ):
                if event.HasField("final_answer"):
                    _no_warehouse_rows(event.final_answer, stack.companies, name)
        except grpc.aio.AioRpcError as exc:
            assert exc.code() is grpc.StatusCode.PERMISSION_DENIED, (name, exc.details())


def _no_warehouse_rows(answer: rpb.Answer, companies: int, mode: str) -> None:
    assert not any(r.result.rows for r in answer.sql_results), mode
    assert not any(c.sql_fingerprint for c in answer.citations), mode
    assert str(companies) not in answer.text, mode
