"""Follow-up resolution with Gemini (a local fake endpoint) in front of the real engines:
the fast tier proposes the standalone question from fenced history, the router enforces
what the rules can prove, and a broken reply falls back to the rules."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import router_service_pb2 as pb
from tests.fakes.gemini import FakeGemini, Reply
from tests.integration.router.conftest import gemini_provider
from tests.integration.router.stack import Engines, RouterStack, start_router

pytestmark = pytest.mark.integration

GERMANY = pb.ConversationTurn(
    question="How many companies are in Germany?",
    resolved_question="How many companies are in Germany?",
    route=pb.ROUTE_SQL,
    row_count=1,
)
TOP3 = pb.ConversationTurn(
    question="List the top 3 companies by open pipeline.",
    resolved_question="List the top 3 companies by open pipeline.",
    route=pb.ROUTE_SQL,
    members=["Larkspur Industries", "Monarch Care", "Tidewater Department"],
    row_count=3,
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


def _ask(tenant: str, question: str, *history: pb.ConversationTurn) -> pb.AskRequest:
    # SQL mode: the only other model role left is synthesis, unscripted here (the rules
    # answer it), so the test is about the rewrite alone.
    return pb.AskRequest(
        tenant_id=tenant, question=question, mode=pb.ASK_MODE_SQL, history=list(history)
    )


async def test_the_fast_tier_rewrites_a_follow_up_the_rules_do_not_recognise(
    gemini_router: RouterStack, fake_gemini: FakeGemini, tenant: str
) -> None:
    fake_gemini.script(
        "resolve_follow_up",
        Reply.json({"kind": "value_swap", "question": "How many companies are in France?"}),
    )
    answer = (
        await gemini_router.stub.Ask(_ask(tenant, "same again but for France", GERMANY))
    ).answer
    assert answer.resolution.kind == pb.FOLLOW_UP_KIND_VALUE_SWAP
    assert answer.resolution.resolved_question == "How many companies are in France?"
    assert "'France'" in answer.sql_results[0].result.sql
    (request,) = fake_gemini.requests_for("resolve_follow_up")
    prompt = request.turns[0][1]
    # The history reached the model fenced as data, with this request's sentinel.
    block = re.search(r"<<<BEGIN CONVERSATION (\S+)>>>\n(.*?)\n<<<END CONVERSATION \1>>>",
                      prompt, re.S)  # fmt: skip
    assert block is not None and "How many companies are in Germany?" in block.group(2)
    assert request.model == "gemini-2.5-flash"  # the cheap tier
    entries = [e for e in answer.usage.entries if e.role == cpb.LLM_ROLE_RESOLVE_FOLLOW_UP]
    assert entries and entries[0].tier == cpb.MODEL_TIER_FAST and entries[0].calls == 1


async def test_a_model_that_invents_a_member_is_overruled_by_what_the_rules_prove(
    gemini_router: RouterStack, fake_gemini: FakeGemini, tenant: str
) -> None:
    fake_gemini.script(
        "resolve_follow_up",
        Reply.json({"kind": "ordinal", "question": "How many contacts does Acme Corp have?"}),
    )
    answer = (
        await gemini_router.stub.Ask(_ask(tenant, "How many contacts does the fifth one have?",
                                          TOP3))
    ).answer  # fmt: skip
    assert answer.resolution.kind == pb.FOLLOW_UP_KIND_UNRESOLVED
    assert "listed 3" in answer.resolution.unresolved_reason
    assert answer.outcome == pb.ANSWER_OUTCOME_NOT_FOUND and not answer.sql_results


async def test_a_broken_reply_falls_back_to_the_rules(
    gemini_router: RouterStack, fake_gemini: FakeGemini, tenant: str
) -> None:
    fake_gemini.script(
        "resolve_follow_up",
        Reply.json({"kind": "telepathy", "question": "?"}),
        Reply.json({"kind": "telepathy", "question": "?"}),
    )
    answer = (await gemini_router.stub.Ask(_ask(tenant, "and France?", GERMANY))).answer
    assert answer.resolution.kind == pb.FOLLOW_UP_KIND_VALUE_SWAP
    assert answer.resolution.resolved_question == "How many companies are in France?"
    assert len(fake_gemini.requests_for("resolve_follow_up")) == 2  # asked, re-asked once
