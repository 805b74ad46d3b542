"""The audit trail records who asked what kind of thing, never what was asked or answered:
a canary in questions, a search query, SQL literals, instructions and a document's text
and title reaches no audit column — and, with the trail on, no gateway or router span,
event, log line or metric label (principle 6)."""

from __future__ import annotations

import grpc
import psycopg
import pytest

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tests.integration.gateway.stack import bearer, start_gateway, start_router
from tests.integration.retrieval.stack import new_tenant
from tests.privacy import (
    assert_code_never_tries,
    assert_no_canary,
    captured_logs,
    new_canary,
    raw_spans,
)

pytestmark = pytest.mark.integration


async def test_no_audit_column_and_no_telemetry_holds_the_canary(
    pg_url, retrieval, sql, telemetry_sink
) -> None:
    canary = new_canary()
    gateway_sink, router_sink = telemetry_sink("gateway"), telemetry_sink("router")
    router = await start_router(retrieval.server.address, sql.address, router_sink.telemetry)
    raw = [raw_spans(sink.telemetry.tracer_provider) for sink in (gateway_sink, router_sink)]
    gateway = await start_gateway(
        pg_url, gateway_sink.telemetry, router_addr=router.address,
        retrieval_addr=retrieval.server.address, sql_addr=sql.address,
    )  # fmt: skip
    tenant = new_tenant(pg_url, "audit-privacy")
    try:
        key = bearer(await gateway.key(tenant))
        with captured_logs() as logs:
            document = rpb.DocumentInput(
                document_id="policy", title=f"Policy {canary}",
                text=f"Refunds are granted within 30 days. The code word is {canary}.",
            )  # fmt: skip
            [
                e async for e in gateway.stub.IngestDocuments(
                    gpb.GatewayServiceIngestDocumentsRequest(documents=[document]), metadata=key
                )
            ]  # fmt: skip
            search = await gateway.stub.Search(
                gpb.GatewayServiceSearchRequest(query=f"code word {canary}"), metadata=key
            )
            answer = await gateway.stub.Ask(
                gpb.GatewayServiceAskRequest(question=f"What is the code word {canary}?"),
                metadata=key, timeout=30,
            )  # fmt: skip
            [
                e async for e in gateway.stub.StreamAsk(
                    gpb.GatewayServiceStreamAskRequest(
                        question=f"How many companies are in {canary}?"
                    ),
                    metadata=key, timeout=30,
                )
            ]  # fmt: skip
            await gateway.stub.AskSql(
                gpb.GatewayServiceAskSqlRequest(
                    question=f"How many companies are named {canary}?",
                    instructions=f"Treat {canary} as a country.",
                ),
                metadata=key, timeout=30,
            )  # fmt: skip
            await gateway.stub.ValidateSql(
                gpb.GatewayServiceValidateSqlRequest(
                    sql=f"SELECT count(*) FROM companies WHERE name = '{canary}'"
                ),
                metadata=key,
            )
            # Refused here (the answer memory is off): a refusal is recorded all the same.
            with pytest.raises(grpc.aio.AioRpcError):
                await gateway.stub.TeachSql(
                    gpb.GatewayServiceTeachSqlRequest(
                        question=f"How many {canary} companies?",
                        sql=f"SELECT count(*) FROM companies WHERE name = '{canary}'",
                    ),
                    metadata=key,
                )
            assert gateway.audit is not None
            await gateway.audit.flush()
    finally:
        await gateway.close()
        await router.close()
    assert any(canary in h.text for h in search.hits) and answer.answer.text
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        rows = await (
            await conn.execute(
                "SELECT rpc, to_jsonb(e)::text FROM gateway_audit_events e WHERE tenant_id = %s",
                (tenant,),
            )
        ).fetchall()
    assert sorted(r[0] for r in rows) == sorted(
        ["IngestDocuments", "Search", "Ask", "StreamAsk", "AskSql", "ValidateSql", "TeachSql"]
    )
    leaked = [row for row in rows if canary in row[1].lower()]
    assert not leaked, f"canary in audit rows: {leaked}"
    assert any('"policy"' in row[1] for row in rows)  # the ids are there, the text is not
    for sink in (gateway_sink, router_sink):
        assert_no_canary(
            canary, spans=sink.spans.get_finished_spans(),
            metrics=sink.metrics.get_metrics_data(), logs=logs,
        )  # fmt: skip
    for exporter in raw:
        assert_code_never_tries(canary, exporter.get_finished_spans())
