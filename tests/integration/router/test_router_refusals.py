"""Declined questions on the real router over real retrieval and SQL servers (documents
ingested that a search would find): a request to change data gets the read-only answer
on Ask and StreamAsk, never a document passage; offline a question in another language
is refused by its language, and with a model (the scripted Gemini endpoint) it goes to
the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.common import Principal
from tandem.v1 import router_service_pb2 as pb
from tests.fakes.gemini import FakeGemini, Reply
from tests.integration.router.conftest import gemini_provider
from tests.integration.router.stack import Engines, RouterStack, start_router

pytestmark = pytest.mark.integration

# Its words are those of the onboarding call notes: a search would find them.
DELETE = "Delete the onboarding call notes"


def _refused_for_writing(answer: pb.Answer) -> None:
    assert answer.outcome == pb.ANSWER_OUTCOME_REFUSED
    assert answer.refusal_reason == "SQL_READ_ONLY" and answer.route == pb.ROUTE_SQL
    assert answer.text.startswith("Tandem never changes your data")
    assert not answer.citations and not answer.sql_results and answer.tool_calls == 0


async def test_ask_a_request_to_change_data_gets_the_read_only_answer(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    answer = (await router.stub.Ask(pb.AskRequest(tenant_id=tenant, question=DELETE))).answer
    _refused_for_writing(answer)
    assert not engines.retrieval_log.calls and not engines.sql_log.calls


async def test_stream_ask_a_request_to_change_data_gets_the_read_only_answer(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    events = [
        e
        async for e in router.stub.StreamAsk(
            pb.StreamAskRequest(tenant_id=tenant, question=DELETE, mode=pb.ASK_MODE_AGENTIC),
            timeout=30,
        )
    ]
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds == ["accepted", "answer_delta", "final_answer"]
    final = events[-1].final_answer
    _refused_for_writing(final)
    assert events[1].answer_delta.text == final.text
    assert not engines.retrieval_log.calls and not engines.sql_log.calls


async def test_a_question_about_changes_is_answered_from_the_records(
    router: RouterStack, tenant: str
) -> None:
    answer = (
        await router.stub.Ask(
            pb.AskRequest(tenant_id=tenant, question="How many deals were lost last year?")
        )
    ).answer
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED and not answer.refusal_reason
    assert answer.route == pb.ROUTE_SQL and answer.sql_results


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Wie viele Verkaufschancen gibt es?", "German (de)"),
        ("Combien d'opportunités y a-t-il ?", "French (fr)"),
        ("商談は何件ありますか", "Japanese (ja)"),
    ],
)
async def test_offline_another_language_is_refused_naming_it(
    router: RouterStack, engines: Engines, tenant: str, question: str, named: str
) -> None:
    answer = (await router.stub.Ask(pb.AskRequest(tenant_id=tenant, question=question))).answer
    assert answer.outcome == pb.ANSWER_OUTCOME_REFUSED
    assert answer.refusal_reason == "LANGUAGE_UNSUPPORTED"
    assert named in answer.text and not answer.degraded
    assert not engines.retrieval_log.calls and not engines.sql_log.calls


@pytest.fixture
async def gemini_router(
    engines: Engines, fake_gemini: FakeGemini, telemetry_sink: Any
) -> AsyncIterator[RouterStack]:
    stack = await start_router(
        engines, telemetry_sink("router").telemetry, gemini_provider(fake_gemini)
    )
    yield stack
    await stack.close()


async def test_with_a_model_another_language_goes_to_the_model(
    gemini_router: RouterStack, engines: Engines, fake_gemini: FakeGemini, tenant: str
) -> None:
    step = {
        "id": "s1",
        "tool": "sql_question",
        "query": "How many opportunities are there?",
        "depends_on": [],
    }
    fake_gemini.script("plan", Reply.json({"steps": [step]}))
    fake_gemini.script(
        "synthesize",
        Reply.json(
            {
                "sentences": [{"text": "Es gibt Verkaufschancen.", "citations": ["1"]}],
                "supported": True,
                "confidence": 0.9,
            }
        ),
    )
    answer = (
        await gemini_router.stub.Ask(
            pb.AskRequest(tenant_id=tenant, question="Wie viele Verkaufschancen gibt es?"),
            timeout=30,
        )
    ).answer
    assert fake_gemini.requests_for("plan")
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED and not answer.refusal_reason
    assert engines.sql_log.count("AskQuestion") == 1 and answer.sql_results


@pytest.mark.parametrize("mode", [pb.ASK_MODE_SQL, pb.ASK_MODE_AUTO])
async def test_a_question_the_sql_service_declines_says_what_it_could_not_place(
    router: RouterStack, engines: Engines, tenant: str, mode: int
) -> None:
    """The SQL service's reason (the phrase, the nearest names) reaches the answer: a bare
    "the data does not contain it" reads as if the warehouse could never answer."""
    answer = (
        await router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant,
                question="How many deals have a flux capacitor rating above 3?",
                mode=mode,  # type: ignore[arg-type]
            ),
            timeout=30,
        )
    ).answer
    assert engines.sql_log.count("AskQuestion") >= 1
    assert answer.outcome != pb.ANSWER_OUTCOME_ANSWERED and not answer.sql_results
    assert answer.text.startswith("The data does not contain the answer")
    assert "Asked of the database: could not place 'flux'" in answer.text


async def test_a_principal_is_told_what_the_sql_service_could_not_place_too(
    router: RouterStack, engines: Engines, tenant: str
) -> None:
    """A person inside the tenant gets the same helpful reason: the SQL service reads and
    words it through their own view (tests/security/test_permission_matrix.py shows it
    tells a value only hidden rows hold from one no row holds no better than AskSql)."""
    answer = (
        await router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant,
                question="How many deals have a flux capacitor rating above 3?",
                mode=pb.ASK_MODE_SQL,
            ),
            metadata=Principal.of("alice", ["sales"], {"region_id": "1"}).headers(),
            timeout=30,
        )
    ).answer
    assert engines.sql_log.count("AskQuestion") >= 1
    assert answer.outcome != pb.ANSWER_OUTCOME_ANSWERED and not answer.sql_results
    assert "Asked of the database: could not place 'flux'" in answer.text
