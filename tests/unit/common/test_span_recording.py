"""Spans are recorded only where they are exported: without any exporter every span
would be pure cost on every call of every hop."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common import Telemetry, TelemetrySettings


def test_without_an_exporter_spans_are_not_recorded_but_carry_a_trace() -> None:
    telemetry = Telemetry(TelemetrySettings("t"))
    with telemetry.tracer("t").start_as_current_span("work") as span:
        span.set_attribute("n", 1)
        assert not span.is_recording()
        # the trace id still reaches logs, trailers and the next hop (unsampled)
        context = span.get_span_context()
        assert context.is_valid and not context.trace_flags.sampled
    telemetry.shutdown()


def test_an_exporter_records_every_span() -> None:
    exporter = InMemorySpanExporter()
    telemetry = Telemetry(TelemetrySettings("t"), span_exporter=exporter)
    with telemetry.tracer("t").start_as_current_span("work") as span:
        assert span.is_recording() and span.get_span_context().trace_flags.sampled
    assert [s.name for s in exporter.get_finished_spans()] == ["work"]
    telemetry.shutdown()


def test_a_processor_added_later_turns_recording_on() -> None:
    telemetry = Telemetry(TelemetrySettings("t"))
    exporter = InMemorySpanExporter()
    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    with telemetry.tracer("t").start_as_current_span("work"):
        pass
    assert [s.name for s in exporter.get_finished_spans()] == ["work"]
    telemetry.shutdown()


def test_the_configured_sampler_decides_once_exporting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    exporter = InMemorySpanExporter()
    telemetry = Telemetry(TelemetrySettings("t"), span_exporter=exporter)
    with telemetry.tracer("t").start_as_current_span("work") as span:
        assert not span.is_recording()
    assert exporter.get_finished_spans() == ()
    telemetry.shutdown()
