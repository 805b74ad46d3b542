"""Structured JSON logs that carry the active trace and span ids.

Callers pass metadata only, through ``extra={"fields": {...}}``: counts, lengths, codes,
durations. Question text, document text, SQL literals and answers never go in a log line.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from opentelemetry import trace


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, service, logger, message, trace ids, fields."""

    def __init__(self, service_name: str) -> None:
        super().__init__()
        self._service = service_name
        # The time to the second, formatted once per second (handlers format under
        # their lock): most lines of a busy service share it.
        self._second = -1
        self._stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        entry: dict[str, Any] = {
            "ts": f"{self._stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self._service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        span_context = trace.get_current_span().get_span_context()
        if span_context.is_valid:
            entry["trace_id"] = format(span_context.trace_id, "032x")
            entry["span_id"] = format(span_context.span_id, "016x")
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            # The type name only: exception messages can quote user input.
            entry["exc_type"] = record.exc_info[0].__name__
        return json.dumps(entry, default=str, separators=(",", ":"))


def configure_logging(service_name: str, level: str = "INFO", stream: TextIO | None = None) -> None:
    """Route the root logger to one JSON handler (process entry points call this once)."""
    # The JSON line holds none of a record's caller, thread or process fields: not
    # gathering them (the logging HOWTO's "Optimization") spares a walk of the stack
    # and three look-ups on every record, one access-log line per call of every hop.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(service_name))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("grpc", "urllib3", "httpx", "httpcore", "asyncio"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
