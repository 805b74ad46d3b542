"""The router with Gemini behind the LLM layer (a local fake endpoint with scripted
replies) over real retrieval and SQL servers: replans keep finished work, the replan
limit gives a partial answer, and the output check removes what the model invented."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb
from tests.fakes.gemini import FakeGemini, Reply
from tests.integration.router.conftest import gemini_provider
from tests.integration.router.corpus import EXFIL_HOST
from tests.integration.router.stack import Engines, RouterStack, start_router

pytestmark = pytest.mark.integration

NOTES = {"id": "s1", "tool": "semantic_search", "query": "onboarding call notes", "depends_on": []}
RELEVANT = {"relevant": True, "score": 0.9, "passages": [], "missing_terms": []}


def bad_question(step_id: str, table: str) -> dict[str, Any]:
    """A SQL question the SQL service will not answer (it only reads): the step fails."""
    return {
        "id": step_id,
        "tool": "sql_question",
        "query": f"Drop the {table} table",
        "depends_on": [],
    }


def answer_citing(*ids: str, text: str = "Globex said onboarding took too long.") -> Reply:
    return Reply.json(
        {
            "sentences": [{"text": text, "citations": list(ids)}],
            "supported": True,
            "confidence": 0.8,
        }
    )


@pytest.fixture
async def gemini_router(
    engines: Engines, fake_gemini: FakeGemini, telemetry_sink: Any
) -> AsyncIterator[RouterStack]:
    stack = await start_router(
        engines, telemetry_sink("router").telemetry, gemini_provider(fake_gemini)
    )
    yield stack
    await stack.close()


def _ask(tenant: str, question: str, **options: Any) -> pb.AskRequest:
    return pb.AskRequest(
        tenant_id=tenant,
        question=question,
        options=pb.AskOptions(
            include_trajectory=True,
            top_k=2,
            search_filter=rpb.SearchFilter(categories=["call_notes"]),
            **options,
        ),
    )


async def test_failed_second_step_is_replanned_and_the_first_never_rerun(
    gemini_router: RouterStack, engines: Engines, fake_gemini: FakeGemini, tenant: str
) -> None:
    fake_gemini.script("plan", Reply.json({"steps": [NOTES, bad_question("s2", "widgets")]}))
    replacement = {
        "id": "s3",
        "tool": "sql_question",
        "query": "How many opportunities are there?",
        "depends_on": [],
    }
    # The model first lists the finished s1 again; the LLM layer refuses that reply and
    # asks once more (the router would also drop it: tests/unit/router).
    fake_gemini.script(
        "replan",
        Reply.json({"steps": [NOTES, replacement]}),
        Reply.json({"steps": [replacement]}),
    )
    fake_gemini.script("grade", Reply.json(RELEVANT))
    fake_gemini.script("synthesize", answer_citing("1"), answer_citing("1"))

    answer = (
        await gemini_router.stub.Ask(
            _ask(tenant, "Summarise onboarding call notes and count widgets"), timeout=30
        )
    ).answer

    statuses = {s.step_id: s.status for s in answer.trajectory}
    assert statuses == {
        "s1": pb.STEP_STATUS_SUCCEEDED,
        "s2": pb.STEP_STATUS_FAILED,
        "s3": pb.STEP_STATUS_SUCCEEDED,
    }
    assert answer.replans == 1 and answer.plan.revision == 1
    assert engines.retrieval_log.count("Search") == 1  # s1's service: exactly one call
    assert engines.sql_log.count("AskQuestion") == 2  # s2 refused, then s3
    assert engines.sql_log.count("RunIntent") == 0
    failed = next(s for s in answer.trajectory if s.step_id == "s2")
    assert failed.failure_reason == "STEP_FAILED"
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED
    carried = {s.step_id: s.status for s in answer.plan.steps}
    assert carried["s1"] == pb.STEP_STATUS_SUCCEEDED
    first, _reasked = fake_gemini.requests_for("replan")
    prompt = first.turns[0][1]
    assert '"status": "completed", "id": "s1"' in prompt
    assert '"status": "failed", "id": "s2"' in prompt
    assert not answer.degraded or all(
        d.reason != cpb.DEGRADATION_REASON_LLM_UNAVAILABLE for d in answer.degradations
    )
    assert fake_gemini.pending() == 0


async def test_after_two_failed_replans_the_answer_is_partial_with_a_disclaimer(
    gemini_router: RouterStack, engines: Engines, fake_gemini: FakeGemini, tenant: str
) -> None:
    fake_gemini.script("plan", Reply.json({"steps": [NOTES, bad_question("s2", "widgets")]}))
    fake_gemini.script(
        "replan",
        Reply.json({"steps": [bad_question("s3", "gadgets")]}),
        Reply.json({"steps": [bad_question("s4", "gizmos")]}),
    )
    fake_gemini.script("grade", Reply.json(RELEVANT))
    fake_gemini.script("synthesize", answer_citing("1"))

    answer = (
        await gemini_router.stub.Ask(
            _ask(tenant, "Summarise onboarding call notes and count widgets"), timeout=30
        )
    ).answer

    assert answer.replans == 2 and answer.plan.revision == 2
    assert answer.outcome == pb.ANSWER_OUTCOME_PARTIAL
    assert "s4" in answer.disclaimer and "replan" in answer.disclaimer
    assert answer.degraded
    reasons = {d.reason for d in answer.degradations}
    assert cpb.DEGRADATION_REASON_REPLAN_LIMIT_REACHED in reasons
    assert 0 < answer.confidence <= 0.5
    assert engines.retrieval_log.count("Search") == 1
    assert engines.sql_log.count("AskQuestion") == 3
    assert engines.sql_log.count("RunIntent") == 0
    assert answer.citations and answer.citations[0].chunk_id


async def test_invented_citation_and_foreign_link_are_removed_and_counted(
    gemini_router: RouterStack, fake_gemini: FakeGemini, tenant: str
) -> None:
    fake_gemini.script("grade", Reply.json(RELEVANT))
    fake_gemini.script(
        "synthesize",
        Reply.json(
            {
                "sentences": [
                    {
                        "text": "Meridian Health is evaluating healthcare analytics.",
                        "citations": ["1"],
                    },
                    {"text": "Northwind also wants healthcare analytics.", "citations": ["42"]},
                    {
                        "text": f"Full list at https://{EXFIL_HOST}/collect?data=accounts",
                        "citations": [],
                    },
                ],
                "supported": True,
                "confidence": 0.9,
            }
        ),
    )
    answer = (
        await gemini_router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant,
                question="Which clinics want healthcare analytics?",
                mode=pb.ASK_MODE_AGENTIC,
            ),
            timeout=30,
        )
    ).answer
    report = answer.guardrail_report
    assert [(r.passage_id, r.reason) for r in report.removed_citations] == [
        (42, cpb.CITATION_REMOVAL_REASON_NOT_RETRIEVED)
    ]
    assert "[42]" not in answer.text
    assert EXFIL_HOST not in answer.text
    assert [(u.host, u.action) for u in report.url_findings] == [
        (EXFIL_HOST, cpb.URL_FINDING_ACTION_REMOVED)
    ]
    # The sentence that lost its only citation is flagged, and confidence reflects it.
    assert len(report.unsupported_sentences) >= 1
    assert [c.passage_id for c in answer.citations] == [1]
    assert answer.confidence < 0.9
