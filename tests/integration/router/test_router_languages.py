"""A question in a language the engines do not read, on the real router over real
retrieval and SQL servers: in every mode the answer is one line naming the language
(REFUSED, LANGUAGE_UNSUPPORTED), never failed steps, replans and a "partial" answer:
offline (the rules read English) and when the configured model fails and the rules
stand in for it (the scripted Gemini endpoint answering errors)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tandem.v1 import common_pb2
from tandem.v1 import router_service_pb2 as pb
from tests.fakes.gemini import FakeGemini
from tests.integration.router.conftest import gemini_provider
from tests.integration.router.stack import Engines, RouterStack, start_router

pytestmark = pytest.mark.integration

QUESTIONS = [
    ("Wo stehen die Notizen zum Onboarding-Gespräch?", "German (de)"),
    ("Où sont les notes de l'appel d'intégration ?", "French (fr)"),
    ("オンボーディングの通話メモはどこにありますか", "Japanese (ja)"),
]


def _names_the_language(answer: pb.Answer, named: str) -> None:
    assert answer.outcome == pb.ANSWER_OUTCOME_REFUSED, answer.text
    assert answer.refusal_reason == "LANGUAGE_UNSUPPORTED"
    assert named in answer.text and "English" in answer.text and "\n" not in answer.text
    step_failed = common_pb2.DEGRADATION_REASON_STEP_FAILED
    assert not [d for d in answer.degradations if d.reason == step_failed]
    assert answer.replans == 0 and not answer.citations


@pytest.mark.parametrize("mode", [pb.ASK_MODE_RETRIEVE, pb.ASK_MODE_AGENTIC])
@pytest.mark.parametrize("case", QUESTIONS)
async def test_offline_search_modes_name_the_language(
    router: RouterStack,
    engines: Engines,
    tenant: str,
    case: tuple[str, str],
    mode: pb.AskMode.ValueType,
) -> None:
    question, named = case
    answer = (
        await router.stub.Ask(pb.AskRequest(tenant_id=tenant, question=question, mode=mode))
    ).answer
    _names_the_language(answer, named)
    # the documents were still searched, once, by the question's own words
    assert engines.retrieval_log.count("Search") == 1


@pytest.fixture
async def failing_model_router(
    engines: Engines, fake_gemini: FakeGemini, telemetry_sink: Any
) -> AsyncIterator[RouterStack]:
    """A model is configured but answers every call with an error (nothing scripted):
    the rules stand in for it, step after step."""
    stack = await start_router(
        engines, telemetry_sink("router").telemetry, gemini_provider(fake_gemini)
    )
    yield stack
    await stack.close()


@pytest.mark.parametrize("mode", [pb.ASK_MODE_AUTO, pb.ASK_MODE_SQL])
async def test_when_the_rules_stand_in_for_a_failing_model_the_answer_names_the_language(
    failing_model_router: RouterStack, engines: Engines, tenant: str, mode: pb.AskMode.ValueType
) -> None:
    answer = (
        await failing_model_router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant, question="Wie viele Verkaufschancen gibt es?", mode=mode
            ),
            timeout=30,
        )
    ).answer
    _names_the_language(answer, "German (de)")
    # one search or one SQL question, not one per replan
    calls = engines.retrieval_log.count("Search") + engines.sql_log.count("AskQuestion")
    assert calls == 1
