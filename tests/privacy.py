"""Canary scanning for telemetry: plant a unique string in the input, then look for it in
everything that leaves a process — span names, attributes, events, statuses, log lines
and metric names and labels (principle 6). Shared by the per-service privacy tests and
the end-to-end one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics.export import MetricsData
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common import JsonFormatter
from services.common._observability import DENIED_KEYS


def new_canary() -> str:
    """A string no code or data contains by chance: one token, so no rule strips it for
    looking like prose."""
    return f"zqcanary{uuid.uuid4().hex[:12]}"


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _texts(item)
    elif isinstance(value, Iterable):
        for item in value:
            yield from _texts(item)
    elif value is not None:
        yield str(value)


def span_texts(spans: Iterable[ReadableSpan]) -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every piece of text a span carries."""
    for span in spans:
        where = f"span {span.name!r}"
        yield where + " name", span.name
        for key, value in (span.attributes or {}).items():
            yield f"{where} attribute key", key
            for text in _texts(value):
                yield f"{where} attribute {key}", text
        for event in span.events:
            yield f"{where} event name", event.name
            for key, value in (event.attributes or {}).items():
                yield f"{where} event {event.name} key", key
                for text in _texts(value):
                    yield f"{where} event {event.name} {key}", text
        for link in span.links:
            for text in _texts(dict(link.attributes or {})):
                yield f"{where} link", text
        if span.status.description:
            yield f"{where} status", span.status.description
        for text in _texts(dict(span.resource.attributes)):
            yield f"{where} resource", text


def metric_texts(data: MetricsData | None) -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every metric name, description and label key and value."""
    if data is None:
        return
    for resource_metrics in data.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                where = f"metric {metric.name!r}"
                yield where, metric.name
                yield where + " description", metric.description or ""
                for point in metric.data.data_points:
                    for key, value in (point.attributes or {}).items():
                        yield f"{where} label key", key
                        for text in _texts(value):
                            yield f"{where} label {key}", text


def log_texts(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    for number, line in enumerate(lines):
        yield f"log line {number}", line


@dataclass
class CanaryReport:
    """Where a canary was found; empty means it leaked nowhere that was scanned."""

    canary: str
    found: list[str] = field(default_factory=list)
    scanned: int = 0

    def check(self, sources: Iterable[tuple[str, str]]) -> CanaryReport:
        needle = self.canary.lower()
        for where, text in sources:
            self.scanned += 1
            if needle in text.lower():
                self.found.append(f"{where}: {text[:200]!r}")
        return self


def find_canary(canary: str, *sources: Iterable[tuple[str, str]]) -> CanaryReport:
    report = CanaryReport(canary)
    for source in sources:
        report.check(source)
    return report


def assert_no_canary(
    canary: str,
    *,
    spans: Sequence[ReadableSpan] = (),
    metrics: MetricsData | None = None,
    logs: Sequence[str] = (),
) -> CanaryReport:
    """Fail naming every place the canary appeared; also fail if nothing was scanned."""
    report = find_canary(canary, span_texts(spans), metric_texts(metrics), log_texts(logs))
    assert report.scanned > 0, "nothing was scanned: the sinks are not wired"
    assert not report.found, "canary leaked:\n" + "\n".join(report.found)
    return report


def assert_code_never_tries(canary: str, raw_spans: Sequence[ReadableSpan]) -> None:
    """On spans *before* the privacy filter: our code put the canary nowhere. Only what the
    filter exists to strip from third-party instrumentation (exception messages and
    stack traces, error status descriptions) may hold it."""
    found = [
        where
        for where, text in span_texts(raw_spans)
        if canary.lower() in text.lower()
        and not any(key in where for key in DENIED_KEYS)
        and not where.endswith(" status")
    ]
    assert not found, "code wrote the canary into telemetry:\n" + "\n".join(found)


def raw_spans(provider: TracerProvider) -> InMemorySpanExporter:
    """An exporter on ``provider`` that sees spans as recorded, before the privacy filter."""
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@contextlib.contextmanager
def captured_logs(level: int = logging.DEBUG) -> Iterator[list[str]]:
    """Every log line, formatted exactly as services ship them (JSON), at ``level``+."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("test"))
    handler.setLevel(level)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    lines: list[str] = []
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        lines.extend(stream.getvalue().splitlines())
