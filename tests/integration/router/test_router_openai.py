"""The router with a local model behind the LLM layer: an OpenAI-compatible server (a local
endpoint of the chat-completions wire with scripted replies, as Ollama or vLLM would
answer) over real retrieval and SQL servers. Every router role runs on it at least once
(route, plan, replan, grade, rewrite, synthesize, resolve_follow_up), streamed and not;
StreamAsk's deltas add up to the final answer; and a dead endpoint degrades the answer
exactly as a dead Gemini endpoint does."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.common.llm import FallbackProvider, GeminiProvider, LlmProvider, LlmSettings
from services.router.offline import DeterministicProvider
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb
from tests.fakes.openai import FakeOpenAI, Reply
from tests.integration.router.conftest import openai_provider
from tests.integration.router.stack import Engines, RouterStack, start_router

pytestmark = pytest.mark.integration

NOTES = {"id": "s1", "tool": "semantic_search", "query": "onboarding call notes", "depends_on": []}
RELEVANT = {"relevant": True, "score": 0.9, "passages": [], "missing_terms": []}
GLOBEX = "Globex said onboarding took too long."


def answer_citing(*ids: str, texts: tuple[str, ...] = (GLOBEX,)) -> Reply:
    return Reply.json(
        {
            "sentences": [{"text": text, "citations": list(ids)} for text in texts],
            "supported": True,
            "confidence": 0.8,
        }
    )


def _options() -> pb.AskOptions:
    return pb.AskOptions(
        include_trajectory=True, top_k=2, search_filter=rpb.SearchFilter(categories=["call_notes"])
    )


def _dead_url(path: str = "/v1") -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


async def _router(engines: Engines, telemetry_sink: Any, llm: LlmProvider) -> RouterStack:
    return await start_router(engines, telemetry_sink("router").telemetry, llm)


@pytest.fixture(params=[False, True], ids=["whole", "streamed"])
async def local_router(
    request: pytest.FixtureRequest, engines: Engines, fake_openai: FakeOpenAI, telemetry_sink: Any
) -> AsyncIterator[RouterStack]:
    stack = await _router(
        engines, telemetry_sink, openai_provider(fake_openai.base_url, stream=request.param)
    )
    stack.streamed = request.param  # type: ignore[attr-defined]
    yield stack
    await stack.close()


def _no_llm_degradation(answer: pb.Answer) -> bool:
    return all(d.reason != cpb.DEGRADATION_REASON_LLM_UNAVAILABLE for d in answer.degradations)


async def test_agentic_ask_grades_rewrites_and_synthesizes_on_the_local_model(
    local_router: RouterStack, fake_openai: FakeOpenAI, tenant: str
) -> None:
    fake_openai.script(
        "grade",
        Reply.json({"relevant": False, "score": 0.2, "missing_terms": ["onboarding"]}),
        Reply.json(RELEVANT),
    )
    fake_openai.script("rewrite", Reply.json({"query": "onboarding call notes migration"}))
    fake_openai.script("synthesize", answer_citing("1"))
    answer = (
        await local_router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant,
                question="What did customers say about onboarding?",
                mode=pb.ASK_MODE_AGENTIC,
                options=_options(),
            ),
            timeout=30,
        )
    ).answer
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED
    assert GLOBEX in answer.text and answer.citations
    assert _no_llm_degradation(answer)
    assert fake_openai.pending() == 0
    roles = [r.role for r in fake_openai.requests]
    assert roles == ["grade", "rewrite", "grade", "synthesize"]
    models = {r.role: r.model for r in fake_openai.requests}
    assert models == {"grade": "qwen2.5:7b", "rewrite": "qwen2.5:7b", "synthesize": "qwen2.5:32b"}
    streamed = local_router.streamed  # type: ignore[attr-defined]
    assert all(bool(r.body.get("stream")) is streamed for r in fake_openai.requests)
    assert all(r.body["response_format"]["type"] == "json_schema" for r in fake_openai.requests)
    strong = {e.role for e in answer.usage.entries if e.model_name == "qwen2.5:32b"}
    assert strong == {cpb.LLM_ROLE_SYNTHESIZE}


async def test_a_failed_step_is_replanned_by_the_local_model(
    local_router: RouterStack, engines: Engines, fake_openai: FakeOpenAI, tenant: str
) -> None:
    bad = {"id": "s2", "tool": "sql_question", "query": "Drop the widgets table"}
    replacement = {"id": "s3", "tool": "sql_question", "query": "How many opportunities are there?"}
    fake_openai.script("plan", Reply.json({"steps": [NOTES, bad]}))
    fake_openai.script("replan", Reply.json({"steps": [replacement]}))
    fake_openai.script("grade", Reply.json(RELEVANT))
    fake_openai.script("synthesize", answer_citing("1"), answer_citing("1"))
    answer = (
        await local_router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant,
                question="Summarise onboarding call notes and count widgets",
                options=_options(),
            ),
            timeout=30,
        )
    ).answer
    statuses = {s.step_id: s.status for s in answer.trajectory}
    assert statuses == {
        "s1": pb.STEP_STATUS_SUCCEEDED,
        "s2": pb.STEP_STATUS_FAILED,
        "s3": pb.STEP_STATUS_SUCCEEDED,
    }
    assert answer.replans == 1 and answer.outcome == pb.ANSWER_OUTCOME_ANSWERED
    assert engines.retrieval_log.count("Search") == 1
    (replan,) = fake_openai.requests_for("replan")
    assert replan.model == "qwen2.5:32b"
    assert '"status": "failed", "id": "s2"' in replan.turns[0][1]
    assert _no_llm_degradation(answer)


async def test_a_conversational_question_is_answered_by_the_route_role(
    local_router: RouterStack, fake_openai: FakeOpenAI, tenant: str
) -> None:
    fake_openai.script("plan", Reply.json({"steps": []}))
    greeting = "Hello! Ask me about your accounts, deals or call notes."
    fake_openai.script(
        "route",
        Reply.json(
            {
                "action": "respond",
                "question_class": "conversational",
                "answer": greeting,
                "confidence": 0.9,
            }
        ),
    )
    answer = (
        await local_router.stub.Ask(pb.AskRequest(tenant_id=tenant, question="hi there"))
    ).answer
    assert answer.text == greeting
    assert [r.role for r in fake_openai.requests] == ["plan", "route"]
    assert fake_openai.requests_for("route")[0].model == "qwen2.5:7b"
    assert _no_llm_degradation(answer)


async def test_a_follow_up_is_rewritten_by_the_local_fast_model(
    local_router: RouterStack, fake_openai: FakeOpenAI, tenant: str
) -> None:
    germany = pb.ConversationTurn(
        question="How many companies are in Germany?",
        resolved_question="How many companies are in Germany?",
        route=pb.ROUTE_SQL,
        row_count=1,
    )
    fake_openai.script(
        "resolve_follow_up",
        Reply.json({"kind": "value_swap", "question": "How many companies are in France?"}),
    )
    answer = (
        await local_router.stub.Ask(
            pb.AskRequest(
                tenant_id=tenant,
                question="same again but for France",
                mode=pb.ASK_MODE_SQL,
                history=[germany],
            )
        )
    ).answer
    assert answer.resolution.kind == pb.FOLLOW_UP_KIND_VALUE_SWAP
    assert answer.resolution.resolved_question == "How many companies are in France?"
    assert "'France'" in answer.sql_results[0].result.sql
    (request,) = fake_openai.requests_for("resolve_follow_up")
    assert request.model == "qwen2.5:7b"


async def test_stream_ask_deltas_add_up_to_the_final_answer(
    engines: Engines, fake_openai: FakeOpenAI, telemetry_sink: Any, tenant: str
) -> None:
    stack = await _router(
        engines, telemetry_sink, openai_provider(fake_openai.base_url, stream=True)
    )
    texts = (GLOBEX, "Migration stalled for three weeks.", "Globex wants an onboarding engineer.")
    fake_openai.script("grade", Reply.json(RELEVANT))
    fake_openai.script("synthesize", answer_citing("1", texts=texts))
    try:
        events = [
            e
            async for e in stack.stub.StreamAsk(
                pb.StreamAskRequest(
                    tenant_id=tenant,
                    question="What did Globex say about onboarding?",
                    mode=pb.ASK_MODE_AGENTIC,
                    options=_options(),
                ),
                timeout=30,
            )
        ]
    finally:
        await stack.close()
    final = events[-1].final_answer
    deltas = [e.answer_delta.text for e in events if e.HasField("answer_delta")]
    assert len(deltas) == 3 and "".join(deltas) == final.text
    assert [d.split(" [")[0].strip() for d in deltas] == list(texts)
    assert fake_openai.requests_for("synthesize")[0].body["stream"] is True
    assert _no_llm_degradation(final)


async def test_a_dead_local_endpoint_degrades_the_answer_exactly_as_dead_gemini_does(
    engines: Engines, telemetry_sink: Any, tenant: str
) -> None:
    gemini = GeminiProvider(
        LlmSettings(api_key="k", base_url=_dead_url(""), timeout_s=5.0, max_retries=0)
    )
    providers = {
        "openai": openai_provider(_dead_url()),
        "gemini": FallbackProvider(gemini, DeterministicProvider()),
    }
    answers = {}
    for name, provider in providers.items():
        stack = await _router(engines, telemetry_sink, provider)
        try:
            answers[name] = (
                await stack.stub.Ask(
                    pb.AskRequest(
                        tenant_id=tenant,
                        question="What did Globex say about onboarding?",
                        options=_options(),
                    ),
                    timeout=30,
                )
            ).answer
        finally:
            await stack.close()
    local, remote = answers["openai"], answers["gemini"]
    assert local.degraded and remote.degraded
    assert cpb.DEGRADATION_REASON_LLM_UNAVAILABLE in {d.reason for d in local.degradations}
    assert [(d.reason, d.component, d.message) for d in local.degradations] == [
        (d.reason, d.component, d.message) for d in remote.degradations
    ]
    assert (local.outcome, local.text) == (remote.outcome, remote.text)
    assert [c.chunk_id for c in local.citations] == [c.chunk_id for c in remote.citations]
