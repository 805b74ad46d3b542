"""Conversations keep their turns in Postgres, per tenant under row-level security, and
nowhere else: a canary in the questions reaches the stored turns but no gateway or router
span, event, log line or metric label (principle 6)."""

from __future__ import annotations

import psycopg
import pytest

from gateway._conversations import app_conninfo
from tandem.v1 import gateway_service_pb2 as gpb
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


async def test_conversation_turns_are_stored_but_never_in_telemetry(
    pg_url, retrieval, sql, telemetry_sink
) -> None:
    canary = new_canary()
    gateway_sink, router_sink = telemetry_sink("gateway"), telemetry_sink("router")
    router = await start_router(retrieval.server.address, sql.address, router_sink.telemetry)
    # What the code tries to export, before the privacy filter: it must not even try.
    raw = [raw_spans(sink.telemetry.tracer_provider) for sink in (gateway_sink, router_sink)]
    gateway = await start_gateway(
        pg_url, gateway_sink.telemetry, router_addr=router.address,
        retrieval_addr=retrieval.server.address, sql_addr=sql.address,
    )  # fmt: skip
    tenant = new_tenant(pg_url, "conv-privacy")
    try:
        key = await gateway.key(tenant)
        with captured_logs() as logs:
            first = await gateway.stub.Ask(
                gpb.GatewayServiceAskRequest(
                    question=f"How many companies are in Germany, says {canary}?"
                ),
                metadata=bearer(key), timeout=30,
            )  # fmt: skip
            conversation_id = first.answer.conversation_id
            second = await gateway.stub.Ask(
                gpb.GatewayServiceAskRequest(
                    question=f"what about {canary.capitalize()}?", conversation_id=conversation_id
                ),
                metadata=bearer(key), timeout=30,
            )  # fmt: skip
            events = [
                e
                async for e in gateway.stub.StreamAsk(
                    gpb.GatewayServiceStreamAskRequest(
                        question=f"only the {canary} ones", conversation_id=conversation_id
                    ),
                    metadata=bearer(key), timeout=30,
                )
            ]  # fmt: skip
    finally:
        await gateway.close()
        await router.close()
    assert canary.capitalize() in second.answer.resolution.resolved_question
    # the filter qualifies the noun the count opens with
    resolved = events[-1].final_answer.turn.resolved_question
    assert resolved.startswith(f"How many companies that are {canary} are in ")
    # Stored: every turn, with the text as asked and as resolved.
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        rows = await (
            await conn.execute(
                "SELECT turn_index, question, resolved_question FROM gateway_conversation_turns "
                "WHERE conversation_id = %s ORDER BY turn_index",
                (conversation_id,),
            )
        ).fetchall()
    assert [r[0] for r in rows] == [1, 2, 3]
    assert all(canary in r[1].lower() and canary in r[2].lower() for r in rows)
    # Row-level security: the application role sees no turn without the tenant set, and
    # none of this tenant's with another tenant set.
    async with await psycopg.AsyncConnection.connect(app_conninfo(pg_url)) as conn:
        unset = await (
            await conn.execute("SELECT count(*) FROM gateway_conversation_turns")
        ).fetchone()
        await conn.execute("SELECT set_config('tandem.tenant_id', 'someone-else', false)")
        other = await (
            await conn.execute("SELECT count(*) FROM gateway_conversation_turns")
        ).fetchone()
    assert unset == (0,) and other == (0,)
    # Never in telemetry, on either side of the router call.
    for sink in (gateway_sink, router_sink):
        assert_no_canary(
            canary, spans=sink.spans.get_finished_spans(),
            metrics=sink.metrics.get_metrics_data(), logs=logs,
        )  # fmt: skip
    assert "router.resolve_follow_up" in {s.name for s in router_sink.spans.get_finished_spans()}
    for exporter in raw:
        assert_code_never_tries(canary, exporter.get_finished_spans())
