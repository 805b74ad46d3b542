"""The OpenAI-compatible provider (Ollama, vLLM, llama.cpp server, LM Studio) through its real
httpx client against a scripted local endpoint of the chat-completions wire: every role on
its tier, JSON-schema structured output, repair of a reply from a server that ignores
``response_format``, retries (Retry-After honoured), timeouts, the same offline fallback as
Gemini, streamed replies assembled in order, and the API key sent only as a bearer token."""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common.llm import (
    Answer,
    FallbackProvider,
    GeminiProvider,
    LlmOutputInvalid,
    LlmSettings,
    LlmTimeout,
    LlmUnavailable,
    OpenAIProvider,
    Passage,
    QuestionClass,
    Role,
    RouteAction,
    SynthesizeRequest,
    Tier,
    create_provider,
)
from services.router.offline import DeterministicProvider
from tests.conftest import TelemetrySink
from tests.fakes.openai import FakeOpenAI, Reply
from tests.privacy import assert_no_canary, captured_logs, new_canary
from tests.unit.llm.conftest import gemini_settings, openai_settings
from tests.unit.llm.fix_roles import MALFORMED_ROUTES, QUESTION, REQUESTS, STRONG_ROLES, VALID, call


def dead_url() -> str:
    """A loopback URL nothing listens on: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Sleeps:
    """Records the backoff waits instead of sleeping them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_each_role_runs_on_its_tier(openai: OpenAIProvider, fake_openai: FakeOpenAI) -> None:
    for role in Role:
        fake_openai.script(role.value, Reply.json(VALID[role]))
    for role in Role:
        result = await call(openai, role)
        expected_tier = Tier.STRONG if role in STRONG_ROLES else Tier.FAST
        assert result.usage.tier is expected_tier, role
        assert result.usage.model == ("qwen2.5:32b" if role in STRONG_ROLES else "qwen2.5:7b")
        assert not result.degraded
    models = {r.role: r.model for r in fake_openai.requests}
    assert models == {
        role.value: "qwen2.5:32b" if role in STRONG_ROLES else "qwen2.5:7b" for role in Role
    }
    assert fake_openai.pending() == 0


async def test_request_asks_for_json_against_the_output_schema(
    openai: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script("route", Reply.json(VALID[Role.ROUTE], input_tokens=31, output_tokens=9))
    result = await openai.route(REQUESTS[Role.ROUTE])
    (request,) = fake_openai.requests
    assert request.path == "/v1/chat/completions"
    assert request.authorization is None  # no key configured: no header at all
    body = request.body
    assert body["temperature"] == 0.0 and "stream" not in body
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.system_text.startswith("Task: route.")
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    spec = response_format["json_schema"]
    assert spec["name"] == "RouteDecision" and spec["strict"] is False
    schema = spec["schema"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["properties"]["action"]["enum"] == ["retrieve", "respond"]
    assert "action" in schema["required"]
    # With the schema on the wire, the prompt does not repeat it.
    assert "JSON Schema" not in request.system_text
    assert (result.usage.input_tokens, result.usage.output_tokens) == (31, 9)
    assert result.usage.cost_usd is None  # a local model has no list price


async def test_nullable_fields_are_standard_json_schema(
    openai: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script("generate_sql", Reply.json({"sql": None, "explanation": "no table"}))
    result = await openai.generate_sql(REQUESTS[Role.GENERATE_SQL])
    assert result.output.sql is None
    schema = fake_openai.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["sql"]["type"] == ["string", "null"]
    assert "nullable" not in json.dumps(schema)


@pytest.mark.parametrize(("mode", "format_type"), [("json_object", "json_object"), ("none", None)])
async def test_without_a_schema_on_the_wire_the_prompt_carries_it(
    fake_openai: FakeOpenAI, mode: str, format_type: str | None
) -> None:
    provider = OpenAIProvider(openai_settings(fake_openai.base_url, openai_structured=mode))
    fake_openai.script("route", Reply.json(VALID[Role.ROUTE]))
    try:
        result = await provider.route(REQUESTS[Role.ROUTE])
    finally:
        await provider.aclose()
    assert result.output.action is RouteAction.RETRIEVE
    (request,) = fake_openai.requests
    assert request.body.get("response_format", {}).get("type") == format_type
    assert '"question_class"' in request.system_text and "JSON Schema" in request.system_text


@pytest.mark.parametrize("raw", MALFORMED_ROUTES.values(), ids=MALFORMED_ROUTES.keys())
async def test_a_server_that_ignores_response_format_is_repaired_without_a_reask(
    openai: OpenAIProvider, fake_openai: FakeOpenAI, raw: str
) -> None:
    fake_openai.script("route", Reply(text=raw))
    result = await openai.route(REQUESTS[Role.ROUTE])
    assert result.output.action is RouteAction.RETRIEVE
    assert result.output.question_class is QuestionClass.SEMANTIC
    assert result.output.search_query == "g"
    assert len(fake_openai.requests) == 1
    assert not result.usage.reasked


async def test_schema_violation_is_reasked_once_with_the_models_own_turn(
    openai: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    bad = {"action": "maybe", "question_class": "semantic"}
    fake_openai.script("route", Reply.json(bad), Reply.json(VALID[Role.ROUTE]))
    result = await openai.route(REQUESTS[Role.ROUTE])
    assert result.output.action is RouteAction.RETRIEVE
    assert result.usage.reasked and result.usage.calls == 2
    first, second = fake_openai.requests
    assert [role for role, _ in first.turns] == ["user"]
    assert [role for role, _ in second.turns] == ["user", "assistant", "user"]
    assert json.loads(second.turns[1][1]) == bad
    correction = second.turns[-1][1]
    assert "$.action" in correction and "retrieve, respond" in correction


async def test_second_schema_violation_gives_up(
    openai: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    bad = Reply.json({"question_class": "semantic"})  # action missing
    fake_openai.script("route", bad, bad, bad)
    with pytest.raises(LlmOutputInvalid) as caught:
        await openai.route(REQUESTS[Role.ROUTE])
    assert caught.value.cause == "invalid_output"
    assert len(fake_openai.requests) == 2


async def test_429_with_retry_after_is_retried_after_that_wait(fake_openai: FakeOpenAI) -> None:
    sleeps = Sleeps()
    provider = OpenAIProvider(openai_settings(fake_openai.base_url), sleep=sleeps)
    fake_openai.script("grade", Reply.error(429, retry_after="2"), Reply.json(VALID[Role.GRADE]))
    try:
        result = await provider.grade(REQUESTS[Role.GRADE])
    finally:
        await provider.aclose()
    assert result.output.relevant
    assert result.usage.retries == 1 and result.usage.calls == 2
    assert sleeps.waits == [2.0]  # the server's wait, not the 10 ms backoff


async def test_a_retry_after_past_the_backoff_cap_fails_at_once(fake_openai: FakeOpenAI) -> None:
    sleeps = Sleeps()
    provider = OpenAIProvider(openai_settings(fake_openai.base_url), sleep=sleeps)
    fake_openai.script("grade", Reply.error(429, retry_after="120"), Reply.json(VALID[Role.GRADE]))
    try:
        with pytest.raises(LlmUnavailable) as caught:
            await provider.grade(REQUESTS[Role.GRADE])
    finally:
        await provider.aclose()
    assert caught.value.cause == "http_429"
    assert len(fake_openai.requests) == 1 and sleeps.waits == []


@pytest.mark.parametrize("status", [503, 500, 502])
async def test_retryable_status_is_retried_then_succeeds(
    openai: OpenAIProvider, fake_openai: FakeOpenAI, status: int
) -> None:
    fake_openai.script("grade", Reply.error(status), Reply.json(VALID[Role.GRADE]))
    result = await openai.grade(REQUESTS[Role.GRADE])
    assert result.output.relevant
    assert result.usage.retries == 1 and len(fake_openai.requests) == 2


async def test_retries_are_bounded_and_client_errors_not_retried(
    openai: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script("grade", *[Reply.error(503)] * 5)
    with pytest.raises(LlmUnavailable) as caught:
        await openai.grade(REQUESTS[Role.GRADE])
    assert caught.value.cause == "http_503"
    assert len(fake_openai.requests) == 3  # max_retries=2
    fake_openai.script("route", Reply.error(404), Reply.json(VALID[Role.ROUTE]))
    with pytest.raises(LlmUnavailable) as refused:
        await openai.route(REQUESTS[Role.ROUTE])  # e.g. a model the server has not pulled
    assert refused.value.cause == "http_404"
    assert len(fake_openai.requests_for("route")) == 1


async def test_slow_reply_times_out(fake_openai: FakeOpenAI) -> None:
    provider = OpenAIProvider(openai_settings(fake_openai.base_url, timeout_s=0.2))
    fake_openai.script("route", Reply.json(VALID[Role.ROUTE], delay_s=3.0))
    try:
        with pytest.raises(LlmTimeout) as caught:
            await provider.route(REQUESTS[Role.ROUTE])
    finally:
        await provider.aclose()
    assert caught.value.cause == "timeout"


async def test_a_dead_endpoint_falls_back_exactly_as_gemini_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = REQUESTS[Role.PLAN]
    results = {}
    for name, model in (
        ("openai", OpenAIProvider(openai_settings(dead_url(), max_retries=1))),
        ("gemini", GeminiProvider(gemini_settings(dead_url(), max_retries=1))),
    ):
        provider = FallbackProvider(model, DeterministicProvider())
        try:
            with caplog.at_level(logging.WARNING):
                results[name] = await provider.plan(request)
        finally:
            await provider.aclose()
    local, gemini = results["openai"], results["gemini"]
    assert local.degraded and gemini.degraded
    assert local.degraded_reason == "openai: transport_ConnectError"
    assert gemini.degraded_reason is not None and gemini.degraded_reason.startswith("gemini: ")
    assert local.output == gemini.output and local.output.steps
    assert local.usage.model == gemini.usage.model == "deterministic"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.__dict__["fields"]["primary"] for r in warnings] == ["openai", "gemini"]


async def test_settings_select_the_local_server_with_the_offline_fallback() -> None:
    settings = LlmSettings.from_env(
        {
            "LLM_PROVIDER": "openai",
            "OPENAI_BASE_URL": dead_url(),
            "LLM_STRONG_MODEL": "llama3.1:8b",
            "LLM_MAX_RETRIES": "0",
        }
    )
    assert (settings.strong_model, settings.fast_model) == ("llama3.1:8b", "llama3.1:8b")
    provider = create_provider(settings, offline=DeterministicProvider())
    try:
        assert isinstance(provider, FallbackProvider)
        assert provider.name == "openai+deterministic"
        result = await provider.route(REQUESTS[Role.ROUTE])
    finally:
        await provider.aclose()
    assert result.degraded and result.degraded_reason == "openai: transport_ConnectError"


def _streamed(openai_url: str, **overrides: Any) -> OpenAIProvider:
    return OpenAIProvider(openai_settings(openai_url, openai_stream=True, **overrides))


async def test_streamed_deltas_are_assembled_in_order(fake_openai: FakeOpenAI) -> None:
    words = " ".join(f"w{i:02d}" for i in range(40))
    answer = {"sentences": [{"text": words, "citations": ["1"]}], "supported": True}
    # ~3 characters a delta: any reordering or loss breaks the JSON or the sentence.
    text = json.dumps(answer)
    fake_openai.script(
        "synthesize", Reply(text=text, chunks=len(text) // 3, input_tokens=70, output_tokens=55)
    )
    provider = _streamed(fake_openai.base_url)
    try:
        result = await provider.synthesize(REQUESTS[Role.SYNTHESIZE])
    finally:
        await provider.aclose()
    assert isinstance(result.output, Answer)
    assert result.output.sentences[0].text == words
    assert (result.usage.input_tokens, result.usage.output_tokens) == (70, 55)
    (request,) = fake_openai.requests
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["response_format"]["type"] == "json_schema"


async def test_a_stream_cut_before_done_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        "grade",
        Reply.json(VALID[Role.GRADE], cut=True),
        Reply.json(VALID[Role.GRADE]),
    )
    provider = _streamed(fake_openai.base_url)
    try:
        result = await provider.grade(REQUESTS[Role.GRADE])
    finally:
        await provider.aclose()
    assert result.output.relevant and result.usage.retries == 1
    assert len(fake_openai.requests) == 2


async def test_api_key_is_a_bearer_token_and_never_logged(fake_openai: FakeOpenAI) -> None:
    secret = "sk-local-" + new_canary()
    settings = openai_settings(fake_openai.base_url, openai_api_key=secret, max_retries=0)
    fake_openai.script("route", Reply.error(401), Reply.json(VALID[Role.ROUTE]))
    with captured_logs(logging.DEBUG) as logs:
        provider = OpenAIProvider(settings)  # built inside: its set-up is scanned too
        try:
            with pytest.raises(LlmUnavailable) as caught:
                await provider.route(REQUESTS[Role.ROUTE])
            await provider.route(REQUESTS[Role.ROUTE])
        finally:
            await provider.aclose()
    assert caught.value.cause == "http_401"
    assert [r.authorization for r in fake_openai.requests] == [f"Bearer {secret}"] * 2
    assert logs, "httpx logs each request at DEBUG/INFO: the scan saw something"
    assert not any(secret in line for line in logs)
    assert secret not in repr(settings) and secret not in str(caught.value)


async def test_spans_and_metrics_carry_metadata_only(fake_openai: FakeOpenAI) -> None:
    canary = new_canary()
    sink = TelemetrySink("router")
    provider = create_provider(
        openai_settings(fake_openai.base_url, max_retries=0),
        offline=DeterministicProvider(),
        tracer=sink.telemetry.tracer("tandem.router.llm"),
        metrics=sink.telemetry.metrics,
    )
    answer = {"sentences": [{"text": f"{canary} raised pricing.", "citations": ["1"]}]}
    fake_openai.script(
        "synthesize",
        Reply.json(answer | {"supported": True}, input_tokens=900, output_tokens=120),
    )
    passages = (Passage("1", f"{canary} raised pricing concerns.", f"{canary} call"),)
    try:
        with captured_logs() as logs:
            result = await provider.synthesize(
                SynthesizeRequest(f"What did {canary} say? {QUESTION}", passages)
            )
    finally:
        await provider.aclose()
        sink.telemetry.shutdown()
    assert not result.degraded
    (span,) = [s for s in sink.spans.get_finished_spans() if s.name == "llm.synthesize"]
    attributes = dict(span.attributes or {})
    assert attributes["llm.provider"] == "openai+deterministic"
    assert attributes["llm.model"] == "qwen2.5:32b" and attributes["llm.tier"] == "strong"
    assert (attributes["llm.input_tokens"], attributes["llm.output_tokens"]) == (900, 120)
    assert attributes["llm.outcome"] == "ok"
    (event,) = [e for e in span.events if e.name == "llm.call"]
    assert event.attributes is not None and event.attributes["llm.provider"] == "openai"
    assert isinstance(event.attributes["llm.duration_ms"], float)
    assert_no_canary(
        canary,
        spans=sink.spans.get_finished_spans(),
        metrics=sink.metrics.get_metrics_data(),
        logs=logs,
    )


async def test_own_span_when_given_a_tracer(
    openai: OpenAIProvider,
    fake_openai: FakeOpenAI,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    fake_openai.script("synthesize", Reply(text="not json"), Reply.json(VALID[Role.SYNTHESIZE]))
    result = await openai.synthesize(REQUESTS[Role.SYNTHESIZE])
    assert result.usage.reasked
    (span,) = spans[1].get_finished_spans()
    attributes = dict(span.attributes or {})
    assert span.name == "llm.synthesize" and attributes["llm.provider"] == "openai"
    assert attributes["llm.calls"] == 2 and attributes["llm.reasked"] is True
    assert not any(QUESTION in str(v) or "Globex" in str(v) for v in attributes.values())
