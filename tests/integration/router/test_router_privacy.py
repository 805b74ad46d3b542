"""Principle 6 on the real router: a canary in the question and in a retrieved document
reaches the answer but no router span, event, log line or metric label."""

from __future__ import annotations

import pytest

from services.router.offline import DeterministicProvider
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant
from tests.integration.router.stack import Engines, start_router
from tests.privacy import (
    assert_code_never_tries,
    assert_no_canary,
    captured_logs,
    new_canary,
    raw_spans,
)

pytestmark = pytest.mark.integration


async def test_router_telemetry_carries_metadata_only(
    engines: Engines, pg_url: str, telemetry_sink
) -> None:
    canary = new_canary()
    tenant = new_tenant(pg_url, "privacy")
    await ingest(
        engines.retrieval_stub,
        tenant,
        [
            rpb.DocumentInput(
                document_id="codename",
                title="Onboarding call notes",
                text=f"The onboarding call notes name {canary} as the Globex onboarding codename.",
            )
        ],
    )
    sink = telemetry_sink("router")
    before_filter = raw_spans(sink.telemetry.tracer_provider)
    stack = await start_router(engines, sink.telemetry, DeterministicProvider())
    question = f"How many opportunities are there, and summarize the onboarding notes on {canary}?"
    try:
        with captured_logs() as logs:
            answer = (
                await stack.stub.Ask(pb.AskRequest(tenant_id=tenant, question=question), timeout=30)
            ).answer
            events = [
                e
                async for e in stack.stub.StreamAsk(
                    pb.StreamAskRequest(tenant_id=tenant, question=question), timeout=30
                )
            ]
    finally:
        await stack.close()
    assert canary in answer.text  # the content did flow: only telemetry must not carry it
    assert events[-1].final_answer.text == answer.text
    spans = sink.spans.get_finished_spans()
    assert {"router.ask", "router.step"} <= {s.name for s in spans}
    assert_no_canary(canary, spans=spans, metrics=sink.metrics.get_metrics_data(), logs=logs)
    assert_code_never_tries(canary, before_filter.get_finished_spans())


async def test_declined_questions_carry_the_reason_and_no_question_text(
    engines: Engines, pg_url: str, telemetry_sink
) -> None:
    canary = new_canary()
    tenant = new_tenant(pg_url, "privacy")
    sink = telemetry_sink("router")
    before_filter = raw_spans(sink.telemetry.tracer_provider)
    stack = await start_router(engines, sink.telemetry, DeterministicProvider())
    try:
        with captured_logs() as logs:
            write = (
                await stack.stub.Ask(
                    pb.AskRequest(tenant_id=tenant, question=f"Delete all {canary} deals"),
                    timeout=30,
                )
            ).answer
            events = [
                e
                async for e in stack.stub.StreamAsk(
                    pb.StreamAskRequest(
                        tenant_id=tenant, question=f"Wie viele Geschäfte heißen {canary} hier?"
                    ),
                    timeout=30,
                )
            ]
    finally:
        await stack.close()
    assert write.refusal_reason == "SQL_READ_ONLY" and canary in write.text
    assert events[-1].final_answer.refusal_reason == "LANGUAGE_UNSUPPORTED"
    spans = sink.spans.get_finished_spans()
    asks = [dict(s.attributes or {}) for s in spans if s.name == "router.ask"]
    assert {a.get("router.refusal") for a in asks} == {"SQL_READ_ONLY", "LANGUAGE_UNSUPPORTED"}
    assert "de" in {a.get("question.language") for a in asks}
    assert_no_canary(canary, spans=spans, metrics=sink.metrics.get_metrics_data(), logs=logs)
    assert_code_never_tries(canary, before_filter.get_finished_spans())
