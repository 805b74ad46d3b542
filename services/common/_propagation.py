"""W3C trace context without the tracing instrumentation, for a process that exports no
spans.

The OpenTelemetry gRPC interceptors make and annotate a span on every call of every hop;
with nothing to export it to, that is cost without use. What still matters is the
context: log lines and the ``x-trace-id`` trailer name the caller's trace, and the next
hop continues it. This module carries exactly that, as the instrumentation would with
every span dropped: the caller's trace id (a new one at the root), a span id per hop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from services.common._channels import rewriting_interceptors

_IDS = RandomIdGenerator()


def enter_remote_context(metadata: Iterable[tuple[str, Any]] | None) -> object:
    """Make the trace context the caller sent in ``metadata`` (a new root when none)
    current, as a non-recording span of this hop; returns the token to detach."""
    fields = propagate.get_global_textmap().fields
    carrier = {key: value for key, value in metadata or () if key in fields}
    parent = (
        trace.get_current_span(propagate.extract(carrier)).get_span_context()
        if carrier
        else trace.INVALID_SPAN_CONTEXT
    )
    if parent.is_valid:
        trace_id, flags, state = parent.trace_id, parent.trace_flags, parent.trace_state
    else:
        trace_id, flags, state = _IDS.generate_trace_id(), trace.TraceFlags(), None
    here = trace.SpanContext(
        trace_id, _IDS.generate_span_id(), is_remote=False, trace_flags=flags, trace_state=state
    )
    return otel_context.attach(trace.set_span_in_context(trace.NonRecordingSpan(here)))


def leave_remote_context(token: object) -> None:
    otel_context.detach(token)  # type: ignore[arg-type]


def _with_context(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if not carrier:
        return details
    return grpc.aio.ClientCallDetails(
        method=details.method,
        timeout=details.timeout,
        metadata=grpc.aio.Metadata(*(details.metadata or ()), *carrier.items()),
        credentials=details.credentials,
        wait_for_ready=details.wait_for_ready,
    )


def context_interceptors() -> list[grpc.aio.ClientInterceptor]:
    """Client interceptors that send the current trace context with every call."""
    return rewriting_interceptors(_with_context)
