"""A minimal OTLP/gRPC collector for whole-stack tests: the processes export to it through
``OTEL_EXPORTER_OTLP_ENDPOINT`` exactly as they would to a real OpenTelemetry Collector,
and the test reads back every span and metric data point they sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


def any_value(value: common_pb2.AnyValue) -> Any:
    """An OTLP attribute value as plain Python (arrays as lists)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span and the ``service.name`` of the process that sent it."""

    service: str
    span: trace_pb2.Span

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def span_id(self) -> str:
        return self.span.span_id.hex()

    @property
    def parent_id(self) -> str | None:
        return self.span.parent_span_id.hex() or None


class OtlpSink(
    trace_service_pb2_grpc.TraceServiceServicer, metrics_service_pb2_grpc.MetricsServiceServicer
):
    """An OTLP receiver on a loopback port; keeps every export request it is sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.trace_requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.metric_requests: list[metrics_service_pb2.ExportMetricsServiceRequest] = []
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def endpoint(self) -> str:
        """The value for ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> OtlpSink:
        self._server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.stop(grace=None)

    # -- the collector's two services ------------------------------------------------

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            if isinstance(request, trace_service_pb2.ExportTraceServiceRequest):
                self.trace_requests.append(request)
                return trace_service_pb2.ExportTraceServiceResponse()
            self.metric_requests.append(request)
            return metrics_service_pb2.ExportMetricsServiceResponse()

    # -- reading back ----------------------------------------------------------------

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            requests = list(self.trace_requests)
        found: list[ReceivedSpan] = []
        for request in requests:
            for resource_spans in request.resource_spans:
                service = str(attributes(resource_spans.resource.attributes).get("service.name"))
                for scope in resource_spans.scope_spans:
                    found.extend(ReceivedSpan(service, span) for span in scope.spans)
        return found

    def metric_points(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """``(service.name, metric name, labels)`` for every data point received."""
        with self._lock:
            requests = list(self.metric_requests)
        for request in requests:
            for resource_metrics in request.resource_metrics:
                service = str(attributes(resource_metrics.resource.attributes).get("service.name"))
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        kind = metric.WhichOneof("data")
                        points = getattr(metric, kind).data_points if kind else []
                        for point in points:
                            yield service, metric.name, attributes(point.attributes)

    def texts(self) -> Iterator[tuple[str, str]]:
        """``(where, text)`` for every exported request as a whole (its wire bytes carry
        every string it holds: names, attributes, events, statuses, labels, resources),
        then per span and per data point, so a hit can be located."""
        with self._lock:
            requests: list[Any] = [*self.trace_requests, *self.metric_requests]
        for number, request in enumerate(requests):
            yield (
                f"OTLP {type(request).__name__} {number} (wire bytes)",
                request.SerializeToString().decode("utf-8", "replace"),
            )
        for received in self.spans():
            yield f"OTLP span {received.span.name!r} [{received.service}]", str(received.span)
        for service, name, labels in self.metric_points():
            yield f"OTLP metric {name!r} [{service}]", f"{name} {labels!r}"
