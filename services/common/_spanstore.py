"""A local span store: finished spans as JSON lines, one file per service, for ``tandem trace``.

With ``TANDEM_TRACE_DIR`` set, every service appends its (privacy-filtered) spans to
``<dir>/<service>.jsonl`` through a batch processor, so writing never runs on a request's
path. Files are bounded: when one would pass ``max_bytes`` it becomes ``<service>.jsonl.1``
(replacing the previous one) and a fresh file starts, so at most twice the cap is kept.
The reader gathers one trace's spans from every file in the directory and renders the tree.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

_log = logging.getLogger("tandem.telemetry")

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
SUFFIX = ".jsonl"


def _hex(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def span_record(span: ReadableSpan, service: str) -> dict[str, Any]:
    """One span as a JSON-ready dict (ids in W3C hex)."""
    context = span.context
    return {
        "trace_id": _hex(context.trace_id, 32) if context else "",
        "span_id": _hex(context.span_id, 16) if context else "",
        "parent_id": _hex(span.parent.span_id, 16) if span.parent else None,
        "name": span.name,
        "service": service,
        "kind": span.kind.name,
        "start_ns": span.start_time or 0,
        "end_ns": span.end_time or 0,
        "status": span.status.status_code.name,
        "status_description": span.status.description or "",
        "attributes": dict(span.attributes or {}),
        "events": [
            {"name": e.name, "ts_ns": e.timestamp, "attributes": dict(e.attributes or {})}
            for e in span.events
        ],
    }


class JsonlSpanExporter(SpanExporter):
    """Appends spans to ``<directory>/<service>.jsonl``, rotating at ``max_bytes``.

    Run it behind a ``BatchSpanProcessor`` (as :class:`Telemetry` does): the queue is
    bounded and the file is written from the processor's thread, never a request's.
    """

    def __init__(
        self, directory: Path | str, service: str, *, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        if max_bytes < 1024:
            raise ValueError("max_bytes must be at least 1024")
        self.directory = Path(directory)
        self.service = service
        self.max_bytes = max_bytes
        self.path = self.directory / f"{service}{SUFFIX}"
        self._lock = threading.Lock()
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed:
            return SpanExportResult.FAILURE
        lines = "".join(
            json.dumps(span_record(s, self.service), separators=(",", ":"), default=str) + "\n"
            for s in spans
        )
        data = lines.encode()
        try:
            with self._lock:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._rotate_if_needed(len(data))
                # one append per batch: O_APPEND keeps lines whole between replicas
                with open(self.path, "ab") as handle:
                    handle.write(data)
        except OSError as exc:
            _log.warning(
                "span store write failed", extra={"fields": {"error.type": type(exc).__name__}}
            )
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _rotate_if_needed(self, incoming: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size and size + incoming > self.max_bytes:
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))

    def shutdown(self) -> None:
        self._closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


# --- reading -----------------------------------------------------------------------------


@dataclass
class StoredSpan:
    """A span read back from the store, with its children once the tree is built."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    service: str
    start_ns: int
    end_ns: int
    status: str
    status_description: str
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    children: list[StoredSpan] = field(default_factory=list)

    @property
    def duration_ms(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e6

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StoredSpan:
        return cls(
            trace_id=str(record.get("trace_id", "")),
            span_id=str(record.get("span_id", "")),
            parent_id=record.get("parent_id") or None,
            name=str(record.get("name", "")),
            service=str(record.get("service", "")),
            start_ns=int(record.get("start_ns", 0)),
            end_ns=int(record.get("end_ns", 0)),
            status=str(record.get("status", "UNSET")),
            status_description=str(record.get("status_description", "")),
            attributes=dict(record.get("attributes") or {}),
            events=list(record.get("events") or []),
        )


def store_files(directory: Path | str) -> list[Path]:
    """Every span file in the directory, rotated ones included."""
    root = Path(directory)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.name.endswith((SUFFIX, SUFFIX + ".1")))


def _records(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by a crash mid-write
                    if isinstance(record, dict):
                        yield record
        except OSError:
            continue


def load_trace(directory: Path | str, trace_id: str) -> list[StoredSpan]:
    """Every stored span of one trace, across services, oldest first (no duplicates)."""
    wanted = trace_id.strip().lower()
    found: dict[str, StoredSpan] = {}
    for record in _records(store_files(directory)):
        if record.get("trace_id") == wanted:
            span = StoredSpan.from_record(record)
            found[span.span_id] = span
    return sorted(found.values(), key=lambda s: (s.start_ns, s.end_ns))


def build_tree(spans: Sequence[StoredSpan]) -> list[StoredSpan]:
    """Link children to parents; spans whose parent is not stored become roots."""
    by_id = {s.span_id: s for s in spans}
    roots: list[StoredSpan] = []
    for span in spans:
        span.children = []
    for span in spans:
        parent = by_id.get(span.parent_id or "")
        if parent is None or parent is span:
            roots.append(span)
        else:
            parent.children.append(span)
    return roots


# Attributes worth a glance in the tree; everything else is in the file.
KEY_ATTRIBUTES = (
    "rpc.grpc.status_code",
    "tandem.mode",
    "tandem.kind",
    "tandem.count",
    "tandem.hits",
    "tandem.hits.dense",
    "tandem.hits.sparse",
    "tandem.chunks",
    "tandem.documents",
    "tandem.cache.hits",
    "tandem.degraded",
    "tandem.degraded_reason",
    "tandem.redactions",
    "sql.tables",
    "sql.gate.rules",
    "sql.row_count",
    "sql.ask.outcome",
    "sql.ask.repairs",
    "sql.fingerprint",
    "llm.role",
    "llm.model",
    "llm.tier",
    "llm.input_tokens",
    "llm.output_tokens",
    "llm.cost_usd",
    "llm.degraded",
)


def _format_value(key: str, value: Any) -> str:
    if key == "sql.fingerprint" and isinstance(value, str):
        return value[:12]
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


def render_tree(roots: Sequence[StoredSpan], *, all_attributes: bool = False) -> list[str]:
    """One line per span: indentation by depth, duration, service, name, status, key attributes."""
    lines: list[str] = []

    def walk(span: StoredSpan, depth: int) -> None:
        keys = sorted(span.attributes) if all_attributes else KEY_ATTRIBUTES
        shown = " ".join(
            f"{k.split('.', 1)[-1] if not all_attributes else k}="
            f"{_format_value(k, span.attributes[k])}"
            for k in keys
            if k in span.attributes
        )
        status = "" if span.status in ("UNSET", "OK") else f" !{span.status}"
        if span.status_description and status:
            status += f"({span.status_description})"
        lines.append(
            f"{'  ' * depth}{span.name}  [{span.service}] {span.duration_ms:.1f} ms{status}"
            + (f"  {shown}" if shown else "")
        )
        for child in sorted(span.children, key=lambda s: s.start_ns):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return lines
