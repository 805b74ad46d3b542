"""The router over real retrieval and SQL servers on the embedded Postgres, with the
deterministic provider: routing, parallel waves, citations, guardrails, deadlines and
cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import router_service_pb2 as pb
from tests.integration.router.corpus import EXFIL_HOST
from tests.integration.router.stack import Engines, RouterStack

pytestmark = pytest.mark.integration

COMPOUND = "How many opportunities are there, and summarize the onboarding call notes?"


def _window(step: pb.TrajectoryStep) -> tuple[float, float]:
    start = step.start_time.ToNanoseconds() / 1e9
    return start, start + step.duration.ToNanoseconds() / 1e9


async def test_compound_question_runs_both_engines_in_parallel_with_both_citations(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    response = await router.stub.Ask(
        pb.AskRequest(
            tenant_id=tenant,
            question=COMPOUND,
            options=pb.AskOptions(include_trajectory=True),
        ),
        timeout=30,
    )
    answer = response.answer
    assert answer.question_class == pb.QUESTION_CLASS_COMPOUND
    assert answer.route == pb.ROUTE_COMPOUND
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED
    tools = {s.tool: s for s in answer.trajectory}
    assert set(tools) == {pb.TOOL_SQL_QUESTION, pb.TOOL_SEMANTIC_SEARCH}
    assert all(s.status == pb.STEP_STATUS_SUCCEEDED for s in answer.trajectory)
    assert {s.wave for s in answer.plan.steps} == {0}
    # Overlapping timestamps, seen by the router and by the engines themselves.
    sql_start, sql_end = _window(tools[pb.TOOL_SQL_QUESTION])
    rag_start, rag_end = _window(tools[pb.TOOL_SEMANTIC_SEARCH])
    assert sql_start < rag_end and rag_start < sql_end
    (asked,) = engines.sql_log.of("AskQuestion")
    first_search = engines.retrieval_log.of("Search")[0]
    assert asked["start"] < first_search["end"] and first_search["start"] < asked["end"]
    # Cited chunks and a cited SQL fingerprint.
    passages = [c for c in answer.citations if c.kind == cpb.CITATION_KIND_PASSAGE]
    results = [c for c in answer.citations if c.kind == cpb.CITATION_KIND_SQL_RESULT]
    assert passages and all(c.chunk_id and c.document_id for c in passages)
    assert "notes-globex" in {c.document_id for c in passages}
    (sql_result,) = answer.sql_results
    assert results and results[0].sql_fingerprint == sql_result.result.fingerprint
    assert results[0].passage_id == sql_result.passage_id
    for citation in answer.citations:
        span = answer.text[citation.answer_span.start_offset : citation.answer_span.end_offset]
        assert f"[{citation.passage_id}]" in span
    assert answer.tool_calls == len(engines.retrieval_log.calls) + len(engines.sql_log.calls)


async def test_countable_question_goes_to_sql(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    answer = (
        await router.stub.Ask(
            pb.AskRequest(tenant_id=tenant, question="How many opportunities are there?"),
            timeout=30,
        )
    ).answer
    assert answer.question_class == pb.QUESTION_CLASS_COUNTABLE
    assert answer.route == pb.ROUTE_SQL
    assert engines.sql_log.count("AskQuestion") == 1
    assert engines.retrieval_log.count("Search") == 0
    (citation,) = answer.citations
    assert citation.kind == cpb.CITATION_KIND_SQL_RESULT and citation.sql_fingerprint


async def test_fuzzy_question_goes_to_retrieval(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    answer = (
        await router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant,
                question="Which accounts look like a good fit for a healthcare analytics platform?",
            ),
            timeout=30,
        )
    ).answer
    assert answer.question_class == pb.QUESTION_CLASS_SEMANTIC
    assert answer.route == pb.ROUTE_AGENTIC
    assert engines.retrieval_log.count("Search") >= 1
    assert engines.sql_log.count("AskQuestion") == 0
    assert "brief-meridian" in {c.document_id for c in answer.citations}


async def test_injected_document_is_retrieved_quarantined_and_its_link_never_answered(
    router: RouterStack, tenant: str
) -> None:
    for mode in (pb.ASK_MODE_RETRIEVE, pb.ASK_MODE_AGENTIC):
        answer = (
            await router.stub.Ask(
                pb.AskRequest(
                    tenant_id=tenant,
                    question="What do healthcare clinics ask about analytics dashboards?",
                    mode=mode,
                ),
                timeout=30,
            )
        ).answer
        report = answer.guardrail_report
        hostile = [
            f for f in report.injection_findings if f.document_id == "faq-healthcare-partner"
        ]
        assert hostile and all(f.quarantined for f in hostile)
        assert {f.kind for f in hostile} >= {
            cpb.INJECTION_KIND_OVERRIDE_PHRASING,
            cpb.INJECTION_KIND_EXFILTRATION_LINK,
        }
        assert report.passages_quarantined >= 1 and report.passages_scanned > 1
        assert EXFIL_HOST not in answer.text
        assert all(c.document_id != "faq-healthcare-partner" for c in answer.citations)
        assert cpb.GUARDRAIL_LAYER_INJECTION_SCAN in report.enabled_layers


async def test_deadline_mid_plan_returns_finished_work_marked_partial(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    engines.retrieval_log.delays["Search"] = 5.0
    answer = (
        await router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant, question=COMPOUND, options=pb.AskOptions(include_trajectory=True)
            ),
            timeout=1.5,
        )
    ).answer
    assert answer.outcome == pb.ANSWER_OUTCOME_PARTIAL
    assert answer.disclaimer and answer.confidence <= 0.5
    statuses = {s.tool: s.status for s in answer.trajectory}
    assert statuses[pb.TOOL_SQL_QUESTION] == pb.STEP_STATUS_SUCCEEDED
    assert statuses[pb.TOOL_SEMANTIC_SEARCH] in (
        pb.STEP_STATUS_CANCELLED,
        pb.STEP_STATUS_TIMED_OUT,
    )
    assert any(c.kind == cpb.CITATION_KIND_SQL_RESULT for c in answer.citations)
    assert cpb.DEGRADATION_REASON_DEADLINE_EXCEEDED in {d.reason for d in answer.degradations}
    await _eventually(lambda: engines.retrieval_log.of("Search")[0]["cancelled"])


async def test_client_cancellation_stops_outstanding_steps(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    engines.retrieval_log.delays["Search"] = 5.0
    call = router.stub.StreamAsk(
        pb.StreamAskRequest(
            tenant_id=tenant, question="healthcare analytics", mode=pb.ASK_MODE_AGENTIC
        ),
        timeout=30,
    )
    async for event in call:
        if event.HasField("step_started"):
            break
    await _eventually(lambda: engines.retrieval_log.count("Search") == 1)
    assert router.router.active_steps == 1
    call.cancel()
    await _eventually(lambda: engines.retrieval_log.of("Search")[0]["cancelled"])
    await _eventually(lambda: router.router.active_steps == 0)
    assert engines.retrieval_log.of("Search")[0]["end"] is None
    with pytest.raises(asyncio.CancelledError):
        await call.read()


async def test_stream_events_in_order_and_deltas_equal_the_final_text(
    router: RouterStack, tenant: str
) -> None:
    events = [
        e
        async for e in router.stub.StreamAsk(
            pb.StreamAskRequest(tenant_id=tenant, question=COMPOUND), timeout=30
        )
    ]
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "accepted" and kinds[1] == "plan" and kinds[-1] == "final_answer"
    assert kinds.count("final_answer") == 1
    assert kinds.count("step_started") == kinds.count("step_finished") == 2
    final = events[-1].final_answer
    deltas = "".join(e.answer_delta.text for e in events if e.HasField("answer_delta"))
    assert deltas == final.text
    streamed = [e.citation.passage_id for e in events if e.HasField("citation")]
    assert streamed == [c.passage_id for c in final.citations]
    assert events[0].accepted.request_id == final.request_id
    assert kinds.index("answer_delta") > max(i for i, k in enumerate(kinds) if k == "step_finished")


async def test_unknown_database_is_invalid_argument_before_any_event(
    router: RouterStack, tenant: str
) -> None:
    call = router.stub.StreamAsk(
        pb.StreamAskRequest(
            tenant_id=tenant, question=COMPOUND, options=pb.AskOptions(database="nope")
        ),
        timeout=30,
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in call:
            pytest.fail("no event may precede the error")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def _eventually(check: Callable[[], Any], within_s: float = 3.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)
