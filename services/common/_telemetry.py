"""OpenTelemetry tracer and meter providers, and the gRPC tracing interceptors.

Tracing uses the maintained ``opentelemetry-instrumentation-grpc`` aio interceptors: they
handle unary and streaming calls and W3C context propagation through gRPC metadata, so
there is no home-made interceptor to keep in step with the spec. Providers are explicit
objects handed to whoever needs them, never process globals.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from opentelemetry import metrics, trace
from opentelemetry.instrumentation.grpc import aio_client_interceptors, aio_server_interceptor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import Attributes

from services.common._observability import Metrics, PrivacyFilter
from services.common._propagation import context_interceptors
from services.common._settings import TelemetrySettings
from services.common._spanstore import JsonlSpanExporter

# Health checks and reflection are probes, not work: tracing them floods the backend.
UNTRACED_SERVICES = (
    "grpc.health.v1.Health",
    "grpc.reflection.v1alpha.ServerReflection",
    "grpc.reflection.v1.ServerReflection",
)


def _traced_filter() -> Callable[[Any], bool]:
    """Whether a call is traced (server side: its handler details; client side: its call
    details). The same verdict as ``negate(any_of(service_name(s) …))`` of the
    instrumentation's filters, which run on every call of every hop and cost a protocol
    ``isinstance`` and path normalisation per service name."""
    untraced = frozenset(UNTRACED_SERVICES)

    def traced(details: Any) -> bool:
        method = getattr(details, "method", None) or getattr(details, "full_method", "") or ""
        if isinstance(method, bytes):
            method = method.decode()
        return method.lstrip("/").rpartition("/")[0] not in untraced

    return traced


class _TypeOnlyExceptions:
    """A server span that records an exception by its type only.

    Every refused call (``context.abort``) raises through the tracing interceptor, which
    records the exception with a formatted stack trace; the privacy filter never exports
    a trace or message, and formatting them took about 45% of a refused call's CPU (a
    flooding tenant's rejections slowed every other tenant).
    """

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def __getattr__(self, name: str) -> Any:
        return getattr(self._span, name)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Any = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        self._span.add_event("exception", {"exception.type": type(exception).__name__}, timestamp)


class _TypeOnlyTracer:
    """The interceptor's tracer, handing out spans that record exceptions by type only."""

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tracer, name)

    @contextlib.contextmanager
    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        kwargs["record_exception"] = False
        with self._tracer.start_as_current_span(*args, **kwargs) as span:
            yield _TypeOnlyExceptions(span)


class _WhenExported(Sampler):
    """The configured sampler (``OTEL_TRACES_SAMPLER``, else parent-based always-on) once
    the process exports spans anywhere; until then every span is dropped.

    A span nobody exports is pure cost on every call of every hop (the span, its
    attributes, the interceptors' bookkeeping). A dropped span still carries its trace
    context to the next hop, marked unsampled.
    """

    def __init__(self, delegate: Sampler) -> None:
        self.delegate = delegate
        self.exporting = False

    def should_sample(  # noqa: PLR0917 (the Sampler interface)
        self,
        parent_context: Any,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Any = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        if self.exporting:
            return self.delegate.should_sample(
                parent_context, trace_id, name, kind, attributes, links, trace_state
            )
        return SamplingResult(Decision.DROP)

    def get_description(self) -> str:
        return f"WhenExported{{{self.delegate.get_description()}}}"


class _Provider(TracerProvider):
    """A tracer provider whose spans are recorded only once a processor is added."""

    def __init__(self, resource: Resource) -> None:
        # what the environment configures (a provider made only to read it, never used)
        delegate = TracerProvider(shutdown_on_exit=False).sampler
        self._when_exported = _WhenExported(delegate)
        super().__init__(resource=resource, sampler=self._when_exported)

    @property
    def exporting(self) -> bool:
        return self._when_exported.exporting

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        super().add_span_processor(span_processor)
        self._when_exported.exporting = True


class _HopTracer(trace.Tracer):
    """A tracer that, while its provider exports nothing, makes no span inside a traced
    hop: the hop's own (non-recording) span stands for each node span, so logs and the
    next hop carry the same trace; once a processor is added it is the SDK's tracer.

    With nothing exported the SDK still made every node span (a sampling decision, an
    id, a context attached and detached) only to drop it: a dozen per SQL question.
    Outside any trace (no current span) the SDK's root span is made, as before.
    """

    def __init__(self, tracer: trace.Tracer, provider: _Provider) -> None:
        self._tracer = tracer
        self._provider = provider

    def _hop(self, context: Any) -> trace.Span | None:
        if self._provider.exporting or context is not None:
            return None
        current = trace.get_current_span()
        return current if current.get_span_context().is_valid else None

    def start_span(self, name: str, context: Any = None, *args: Any, **kwargs: Any) -> trace.Span:
        hop = self._hop(context)
        if hop is not None:
            return trace.NonRecordingSpan(hop.get_span_context())
        return self._tracer.start_span(name, context, *args, **kwargs)

    @contextlib.contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, context: Any = None, *args: Any, **kwargs: Any
    ) -> Iterator[trace.Span]:
        hop = self._hop(context)
        if hop is not None:
            yield hop
            return
        with self._tracer.start_as_current_span(name, context, *args, **kwargs) as span:
            yield span


class Telemetry:
    """A service's tracer and meter providers plus the gRPC interceptors that use them.

    ``span_exporter``/``metric_reader`` let tests plug in-memory sinks; with
    ``otlp_endpoint`` set, spans are batched (bounded queue, export timeout) so a dead or
    slow collector never slows a request; with ``trace_dir`` set, spans also go to the
    local span store. Every exporter sits behind :class:`PrivacyFilter`, so only
    metadata leaves the process whichever code made the span. With no exporter at all,
    spans are not recorded (see :class:`_WhenExported`).
    """

    def __init__(
        self,
        settings: TelemetrySettings,
        *,
        span_exporter: SpanExporter | None = None,
        metric_reader: MetricReader | None = None,
    ) -> None:
        self.settings = settings
        resource = Resource.create({"service.name": f"tandem-{settings.service_name}"})
        self._provider = _Provider(resource)
        self.tracer_provider: TracerProvider = self._provider
        readers: list[MetricReader] = []
        self.filters: list[PrivacyFilter] = []
        if settings.otlp_endpoint:
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (  # noqa: PLC0415
                OTLPMetricExporter,
            )
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # noqa: PLC0415
                OTLPSpanExporter,
            )

            self.tracer_provider.add_span_processor(
                BatchSpanProcessor(
                    self._filtered(
                        OTLPSpanExporter(
                            endpoint=settings.otlp_endpoint,
                            insecure=True,
                            timeout=max(1, int(settings.export_timeout_s)),
                        )
                    ),
                    max_queue_size=4096,
                    export_timeout_millis=int(settings.export_timeout_s * 1000),
                )
            )
            readers.append(
                PeriodicExportingMetricReader(
                    OTLPMetricExporter(
                        endpoint=settings.otlp_endpoint,
                        insecure=True,
                        timeout=max(1, int(settings.export_timeout_s)),
                    ),
                    export_timeout_millis=settings.export_timeout_s * 1000,
                )
            )
        if settings.trace_dir:
            self.tracer_provider.add_span_processor(
                BatchSpanProcessor(
                    self._filtered(
                        JsonlSpanExporter(
                            settings.trace_dir,
                            settings.service_name,
                            max_bytes=settings.trace_max_bytes,
                        )
                    ),
                    max_queue_size=4096,
                    schedule_delay_millis=500,
                    export_timeout_millis=int(settings.export_timeout_s * 1000),
                )
            )
        if span_exporter is not None:
            self.tracer_provider.add_span_processor(
                SimpleSpanProcessor(self._filtered(span_exporter))
            )
        if metric_reader is not None:
            readers.append(metric_reader)
        # With no reader, no measurement is ever read: the SDK would still build each
        # one (its time, its context, the exemplar filter) on every RPC, query and model
        # call, only to hand it to no one. A reader cannot be added to an SDK provider
        # later, so without one the meters are no-ops from the start.
        self.meter_provider: metrics.MeterProvider = (
            MeterProvider(resource=resource, metric_readers=readers)
            if readers
            else metrics.NoOpMeterProvider()
        )
        self.metrics = Metrics(self.meter("tandem"))
        for privacy in self.filters:
            privacy.use_meter(self.meter("tandem.telemetry"))

    def _filtered(self, exporter: SpanExporter) -> PrivacyFilter:
        privacy = PrivacyFilter(exporter)
        self.filters.append(privacy)
        return privacy

    def tracer(self, name: str) -> trace.Tracer:
        return _HopTracer(self.tracer_provider.get_tracer(name), self._provider)

    def meter(self, name: str) -> metrics.Meter:
        return self.meter_provider.get_meter(name)

    @property
    def exporting(self) -> bool:
        """Whether spans go anywhere (an exporter, the span store, a test's sink)."""
        return self._provider.exporting

    def server_interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        """Server spans continuing the caller's W3C trace context, when spans are
        exported; none otherwise (the runtime interceptor then carries the context, see
        :mod:`services.common._propagation`)."""
        if not self.exporting:
            return []
        interceptor: grpc.aio.ServerInterceptor = aio_server_interceptor(  # type: ignore[no-untyped-call]
            tracer_provider=self.tracer_provider, filter_=_traced_filter()
        )
        interceptor._tracer = _TypeOnlyTracer(interceptor._tracer)  # type: ignore[attr-defined]
        return [interceptor]

    def client_interceptors(self) -> list[grpc.aio.ClientInterceptor]:
        """Client spans that inject W3C context into outgoing metadata, when spans are
        exported; otherwise the context alone is sent."""
        if not self.exporting:
            return context_interceptors()
        return list(
            aio_client_interceptors(  # type: ignore[no-untyped-call]
                tracer_provider=self.tracer_provider, filter_=_traced_filter()
            )
        )

    def shutdown(self) -> None:
        """Flush what is queued; returns within about the export timeout.

        Spans and metrics flush side by side, and a collector that does not answer in
        time loses what was still queued rather than holding up the process's exit.
        """
        timeout_s = self.settings.export_timeout_s
        workers = [threading.Thread(target=self.tracer_provider.shutdown, daemon=True)]
        if isinstance(self.meter_provider, MeterProvider):
            workers.append(
                threading.Thread(
                    target=self.meter_provider.shutdown,
                    kwargs={"timeout_millis": timeout_s * 1000},
                    daemon=True,
                )
            )
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + timeout_s + 0.5
        for worker in workers:
            worker.join(max(deadline - time.monotonic(), 0.0))
