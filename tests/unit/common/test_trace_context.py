"""Spans are recorded only where they are exported: without any exporter every span
would be pure cost on every call of every hop. The trace context still travels: a
process that exports nothing continues its caller's trace and hands it on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common import Telemetry, TelemetrySettings, create_channel
from services.common._interceptors import TRACE_ID_HEADER, RuntimeInterceptor


def test_without_an_exporter_spans_are_not_recorded_but_carry_a_trace() -> None:
    telemetry = Telemetry(TelemetrySettings("t"))
    with telemetry.tracer("t").start_as_current_span("work") as span:
        span.set_attribute("n", 1)
        assert not span.is_recording()
        # the trace id still reaches logs, trailers and the next hop (unsampled)
        context = span.get_span_context()
        assert context.is_valid and not context.trace_flags.sampled
    telemetry.shutdown()


def test_without_an_exporter_a_node_span_inside_a_hop_is_the_hops_own() -> None:
    """Nothing is made for a span nobody exports: the node continues the hop's context
    (its trace and span id reach logs and the next hop as before)."""
    telemetry = Telemetry(TelemetrySettings("t"))
    tracer = telemetry.tracer("t")
    with tracer.start_as_current_span("hop") as hop, tracer.start_as_current_span("node") as node:
        assert node is hop and trace.get_current_span() is hop
        assert tracer.start_span("other").get_span_context() == hop.get_span_context()
    # once exported, the node is a span of its own, a child of the hop
    exporter = InMemorySpanExporter()
    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    with tracer.start_as_current_span("hop") as hop, tracer.start_as_current_span("node") as node:
        assert node is not hop and node.is_recording()
    assert [s.name for s in exporter.get_finished_spans()] == ["node", "hop"]
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


def _method(channel: grpc.aio.Channel) -> Any:
    return channel.unary_unary("/t.T/Call")


def _trace_id() -> bytes:
    return format(trace.get_current_span().get_span_context().trace_id, "032x").encode()


async def _serve(telemetry: Telemetry, handler: Any) -> tuple[grpc.aio.Server, str]:
    tracing = telemetry.server_interceptors()
    server = grpc.aio.server(
        interceptors=[*tracing, RuntimeInterceptor(5.0, carry_trace_context=not tracing)]
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "t.T", {"Call": grpc.unary_unary_rpc_method_handler(handler)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture
async def two_hops() -> AsyncIterator[str]:
    """A -> B, neither exporting spans; A answers "its trace id/B's trace id"."""
    front, back = Telemetry(TelemetrySettings("front")), Telemetry(TelemetrySettings("back"))
    assert front.server_interceptors() == [] and not back.exporting

    async def downstream(request: bytes, context: grpc.aio.ServicerContext) -> bytes:  # type: ignore[type-arg]
        return _trace_id()

    b_server, b_address = await _serve(back, downstream)
    channel = create_channel(b_address, interceptors=front.client_interceptors())

    async def upstream(request: bytes, context: grpc.aio.ServicerContext) -> bytes:  # type: ignore[type-arg]
        theirs: bytes = await _method(channel)(b"")
        return _trace_id() + b"/" + theirs

    a_server, a_address = await _serve(front, upstream)
    yield a_address
    await channel.close()
    await a_server.stop(0)
    await b_server.stop(0)


async def test_without_exporters_each_hop_continues_the_callers_trace(two_hops: str) -> None:
    sent = "4bf92f3577b34da6a3ce929d0e0e4736"
    async with grpc.aio.insecure_channel(two_hops) as channel:
        call = _method(channel)(b"", metadata=(("traceparent", f"00-{sent}-00f067aa0ba902b7-01"),))
        reply = await call
        trailers = dict(await call.trailing_metadata() or ())
    assert reply == f"{sent}/{sent}".encode()
    assert trailers[TRACE_ID_HEADER] == sent


async def test_without_exporters_a_call_with_no_context_starts_one_trace(two_hops: str) -> None:
    async with grpc.aio.insecure_channel(two_hops) as channel:
        call = _method(channel)(b"")
        mine, theirs = (await call).split(b"/")
        trailers = dict(await call.trailing_metadata() or ())
    assert mine == theirs and int(mine, 16) != 0
    assert trailers[TRACE_ID_HEADER] == mine.decode()
