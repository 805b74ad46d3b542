"""One ``llm.<role>`` span and the ``tandem.llm.*`` metrics per model call — role, model,
tier, tokens, cost, degraded — through the real google-genai client against the fake
Gemini endpoint, and never the question, the passages or the answer."""

from __future__ import annotations

from typing import Any

from services.common.llm import (
    LlmSettings,
    Passage,
    PlanRequest,
    SynthesizeRequest,
    create_provider,
)
from services.common.llm._observed import degraded_cause
from services.router.offline import DeterministicProvider
from tests.conftest import TelemetrySink
from tests.fakes.gemini import FakeGemini, Reply
from tests.privacy import (
    assert_code_never_tries,
    assert_no_canary,
    captured_logs,
    new_canary,
    raw_spans,
)
from tests.unit.llm.conftest import gemini_settings


def _points(sink: TelemetrySink, name: str) -> list[tuple[dict[str, Any], Any]]:
    data = sink.metrics.get_metrics_data()
    found: list[tuple[dict[str, Any], Any]] = []
    for rm in data.resource_metrics if data else ():
        for scope in rm.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found += [
                        (dict(p.attributes or {}), getattr(p, "value", None))
                        for p in metric.data.data_points
                    ]
    return found


async def test_each_call_is_one_span_with_usage_and_no_content(fake_gemini: FakeGemini) -> None:
    canary = new_canary()
    sink = TelemetrySink("router")
    raw = raw_spans(sink.telemetry.tracer_provider)
    provider = create_provider(
        gemini_settings(fake_gemini.base_url, max_retries=0),
        offline=DeterministicProvider(),
        tracer=sink.telemetry.tracer("tandem.router.llm"),
        metrics=sink.telemetry.metrics,
    )
    answer = {
        "sentences": [{"text": f"{canary} raised pricing.", "citations": ["1"]}],
        "supported": True,
    }
    fake_gemini.script("synthesize", Reply.json(answer, input_tokens=1200, output_tokens=300))
    fake_gemini.script("plan", Reply.error(503))
    passages = (Passage("1", f"{canary} raised pricing concerns.", f"{canary} call"),)
    try:
        with captured_logs() as logs:
            synthesized = await provider.synthesize(
                SynthesizeRequest(f"What did {canary} say about pricing?", passages)
            )
            planned = await provider.plan(PlanRequest(f"how many deals did {canary} close"))
    finally:
        await provider.aclose()
        sink.telemetry.shutdown()
    assert not synthesized.degraded and planned.degraded

    spans = {
        dict(s.attributes or {})["llm.role"]: s
        for s in sink.spans.get_finished_spans()
        if s.name == f"llm.{dict(s.attributes or {})['llm.role']}"
    }
    ok: dict[str, Any] = dict(spans["synthesize"].attributes or {})
    assert ok["llm.model"] == "gemini-2.5-pro" and ok["llm.tier"] == "strong"
    assert (ok["llm.input_tokens"], ok["llm.output_tokens"]) == (1200, 300)
    assert ok["llm.cost_usd"] > 0 and ok["llm.degraded"] is False
    assert [e.name for e in spans["synthesize"].events] == ["llm.call"]
    degraded: dict[str, Any] = dict(spans["plan"].attributes or {})
    assert degraded["llm.degraded"] is True and degraded["llm.degraded_reason"] == "http_503"
    assert degraded["llm.model"] == "deterministic"
    assert "llm.fallback" in [e.name for e in spans["plan"].events]

    tokens = _points(sink, "tandem.llm.tokens")
    assert ({"role": "synthesize", "tier": "strong", "type": "input"}, 1200) in tokens
    assert ({"role": "synthesize", "tier": "strong", "type": "output"}, 300) in tokens
    (cost,) = _points(sink, "tandem.llm.cost")
    assert cost[0] == {"role": "synthesize", "tier": "strong"} and cost[1] > 0
    calls = {(a["role"], a["degraded"]) for a, _ in _points(sink, "tandem.llm.calls")}
    assert calls == {("synthesize", False), ("plan", True)}

    assert_no_canary(
        canary,
        spans=sink.spans.get_finished_spans(),
        metrics=sink.metrics.get_metrics_data(),
        logs=logs,
    )
    assert_code_never_tries(canary, raw.get_finished_spans())


async def test_the_offline_provider_is_observed_too() -> None:
    sink = TelemetrySink("router")
    provider = create_provider(
        LlmSettings(),
        offline=DeterministicProvider(),
        tracer=sink.telemetry.tracer("t"),
        metrics=sink.telemetry.metrics,
    )
    await provider.plan(PlanRequest("how many deals closed last quarter"))
    (span,) = sink.spans.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["llm.model"] == "deterministic" and attributes["llm.degraded"] is False
    assert attributes["llm.outcome"] == "ok"
    sink.telemetry.shutdown()


def test_degraded_reasons_become_short_labels() -> None:
    assert degraded_cause("gemini: timeout") == "timeout"
    assert degraded_cause("gemini: refused because 'x y'") == "fallback"
    assert degraded_cause(None) == "fallback"
