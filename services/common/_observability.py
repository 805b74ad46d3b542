"""Metadata-only telemetry: the attribute rules, the export-time privacy filter, the shared
``tandem.*`` metrics and the SQL fingerprint.

Principle 6 made structural. Code records counts, lengths, durations, flags and short
names (modes, rules, tables, models, reasons); it never records question text, document
text, SQL text or literals, answers or keys. Every exporter a :class:`Telemetry` builds
sits behind :class:`PrivacyFilter`, which drops, before anything leaves the process:

- attributes whose key is not allowed (exact keys, or a ``tandem.``/``sql.``/``llm.``/
  ``retrieval.``/``embedding.``/``router.``/``gateway.`` prefix);
- string values that are not a short token (no whitespace, no quotes, at most
  ``MAX_TOKEN_CHARS``): free text cannot pass, whatever key it is put under;
- span and event names that are not short tokens;
- the message and stack trace of exception events (an exception message can quote
  input; the type is kept);
- status descriptions that are long or hold quotes.

What was dropped is counted (``tandem.telemetry.dropped``, by kind), so a span that
lost an attribute shows up on a dashboard rather than silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

# --- attribute keys shared by the services -------------------------------------------

SERVICE = "tandem.service"
MODE = "tandem.mode"
KIND = "tandem.kind"
COUNT = "tandem.count"
CHARS = "tandem.chars"
HITS = "tandem.hits"
ROWS = "sql.row_count"
CHUNKS = "tandem.chunks"
DOCUMENTS = "tandem.documents"
DEGRADED = "tandem.degraded"
DEGRADED_REASON = "tandem.degraded_reason"
CACHE_HITS = "tandem.cache.hits"
CACHE_MISSES = "tandem.cache.misses"
MODEL = "tandem.model"
TABLES = "sql.tables"
GATE_RULES = "sql.gate.rules"
SQL_FINGERPRINT = "sql.fingerprint"
REPAIRS = "sql.ask.repairs"
LLM_ROLE = "llm.role"
LLM_MODEL = "llm.model"
LLM_TIER = "llm.tier"
LLM_PROVIDER = "llm.provider"
LLM_INPUT_TOKENS = "llm.input_tokens"
LLM_OUTPUT_TOKENS = "llm.output_tokens"
LLM_COST_USD = "llm.cost_usd"
LLM_DEGRADED = "llm.degraded"
LLM_DEGRADED_REASON = "llm.degraded_reason"

ALLOWED_PREFIXES = (
    "tandem.",
    "sql.",
    "llm.",
    "retrieval.",
    "embedding.",
    "router.",
    "gateway.",
)
# Keys outside the prefixes: OpenTelemetry's gRPC instrumentation, the database name and
# SQLSTATE, the exception type of exception events, and what may be said of a question:
# its length and its detected language's code.
ALLOWED_KEYS = frozenset(
    {
        "rpc.system",
        "rpc.service",
        "rpc.method",
        "rpc.grpc.status_code",
        "net.peer.ip",
        "net.peer.port",
        "net.peer.name",
        "db.name",
        "db.sqlstate",
        "exception.type",
        "exception.escaped",
        "question.length",
        "question.language",
    }
)
# Never exported, whatever the prefix rules say: these carry content by definition.
DENIED_KEYS = frozenset(
    {
        "exception.message",
        "exception.stacktrace",
        "db.statement",
        "db.query.text",
        "sql.text",
        "llm.prompt",
        "llm.completion",
    }
)

MAX_TOKEN_CHARS = 128
MAX_SEQUENCE = 64
MAX_STATUS_CHARS = 120
_TOKEN = re.compile(r"[A-Za-z0-9_.:/+\-@=]{1,128}")
_STATUS = re.compile(r"[A-Za-z0-9_ .,:;()/=<>+\-]{0,120}")


def key_allowed(key: str) -> bool:
    """Whether an attribute key may be exported at all."""
    if key in DENIED_KEYS:
        return False
    return key in ALLOWED_KEYS or key.startswith(ALLOWED_PREFIXES)


def is_token(value: str) -> bool:
    """A short name: no whitespace, no quotes, at most ``MAX_TOKEN_CHARS`` characters."""
    return _TOKEN.fullmatch(value) is not None


def value_allowed(value: object) -> bool:
    """Numbers, flags, short tokens, and short sequences of those."""
    if isinstance(value, bool | int | float):
        return True
    if isinstance(value, str):
        return is_token(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return len(value) <= MAX_SEQUENCE and all(
            isinstance(v, bool | int | float) or (isinstance(v, str) and is_token(v)) for v in value
        )
    return False


def safe_attributes(attributes: Mapping[str, object] | None) -> tuple[dict[str, Any], int]:
    """The attributes that pass both rules, and how many were dropped."""
    kept: dict[str, Any] = {}
    dropped = 0
    for key, value in (attributes or {}).items():
        if key_allowed(key) and value_allowed(value):
            kept[key] = value
        else:
            dropped += 1
    return kept, dropped


def safe_status(status: Status) -> Status:
    """The status with a description only when it is short and quotes nothing."""
    description = status.description
    if status.status_code is not StatusCode.ERROR or not description:
        return status
    if _STATUS.fullmatch(description) is None:
        return Status(StatusCode.ERROR, "redacted")
    return status


def token(value: str, default: str = "other") -> str:
    """``value`` when it is a short token, else ``default`` (for labels built from data)."""
    return value if is_token(value) else default


def fingerprint_sql(text: str) -> str:
    """SHA-256 of a statement's shape: parsed (Postgres), every literal a placeholder.

    Two statements that differ only in their values share a fingerprint, so it can be
    logged, compared and grouped without exposing a value. Unparseable text gets the
    hash of its whitespace-normalised, literal-stripped form instead.
    """
    import sqlglot  # noqa: PLC0415

    try:
        tree = sqlglot.parse_one(text, dialect="postgres")
    except Exception:  # sqlglot raises several error types; any of them means "unparseable"
        stripped = re.sub(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b", "?", text)
        return hashlib.sha256(" ".join(stripped.split()).lower().encode()).hexdigest()
    return fingerprint_tree(tree)


def fingerprint_tree(tree: Any) -> str:
    """:func:`fingerprint_sql` for an already parsed sqlglot tree."""
    from sqlglot import exp  # noqa: PLC0415

    shape = tree.copy()
    for literal in list(shape.find_all(exp.Literal)):
        literal.replace(exp.Placeholder())
    rendered = shape.sql(dialect="postgres", comments=False)
    return hashlib.sha256(rendered.encode()).hexdigest()


@contextlib.contextmanager
def node_span(
    tracer: trace.Tracer, name: str, attributes: Mapping[str, AttributeValue] | None = None
) -> Iterator[trace.Span]:
    """A child span for one pipeline node. An exception marks it ERROR with the exception's
    type only: messages can quote input, so none is recorded."""
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


# --- the export-time filter ------------------------------------------------------------


def scrub_span(span: ReadableSpan) -> tuple[ReadableSpan, int]:
    """A copy of ``span`` that passes the rules, and how many items were dropped."""
    attributes, dropped = safe_attributes(span.attributes)
    events: list[Event] = []
    for event in span.events:
        event_attributes, lost = safe_attributes(event.attributes)
        dropped += lost
        name = event.name if is_token(event.name) else "event"
        events.append(Event(name, event_attributes, event.timestamp))
    links = []
    for link in span.links:
        link_attributes, lost = safe_attributes(link.attributes)
        dropped += lost
        links.append(type(link)(link.context, link_attributes))
    status = safe_status(span.status)
    if status is not span.status:
        dropped += 1
    name = span.name
    if not is_token(name):
        name, dropped = "span", dropped + 1
    copy = ReadableSpan(
        name=name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
    return copy, dropped


class PrivacyFilter(SpanExporter):
    """Wraps an exporter so that only metadata reaches it (see the module docstring)."""

    def __init__(self, inner: SpanExporter, meter: metrics.Meter | None = None) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self.dropped = 0
        self.use_meter(meter or metrics.NoOpMeter("tandem.telemetry"))

    def use_meter(self, meter: metrics.Meter) -> None:
        """Count what is withheld on ``meter`` (the provider may be built after the filter)."""
        self._counter = meter.create_counter(
            "tandem.telemetry.dropped",
            description="span attributes, events and statuses withheld by the privacy filter",
        )

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        scrubbed: list[ReadableSpan] = []
        dropped = 0
        for span in spans:
            copy, lost = scrub_span(span)
            scrubbed.append(copy)
            dropped += lost
        if dropped:
            with self._lock:
                self.dropped += dropped
            self._counter.add(dropped)
        return self.inner.export(scrubbed)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


# --- the shared metrics ----------------------------------------------------------------


class Metrics:
    """The ``tandem.*`` instruments every service records into; labels are low-cardinality
    names only (service, reason, role, tier, rule, kind), passed through :func:`token`."""

    def __init__(self, meter: metrics.Meter | None = None) -> None:
        meter = meter or metrics.NoOpMeter("tandem")
        self._degraded = meter.create_counter(
            "tandem.degraded", description="responses answered degraded, by service and reason"
        )
        self._llm_tokens = meter.create_counter(
            "tandem.llm.tokens", unit="{token}", description="LLM tokens by role, tier and type"
        )
        self._llm_cost = meter.create_counter(
            "tandem.llm.cost", unit="USD", description="estimated LLM cost by role and tier"
        )
        self._llm_calls = meter.create_counter(
            "tandem.llm.calls", description="LLM role calls by role, tier and degraded"
        )
        self._repairs = meter.create_counter(
            "tandem.sql.repairs", description="SQL repair attempts, by what failed"
        )
        self._gate = meter.create_counter(
            "tandem.sql.gate.rejections", description="statements the gate refused, by rule"
        )
        self._cache_hits = meter.create_counter(
            "tandem.embedding.cache.hits", description="query embeddings served from cache"
        )
        self._cache_misses = meter.create_counter(
            "tandem.embedding.cache.misses", description="query embeddings computed"
        )
        self._chunks = meter.create_counter(
            "tandem.retrieval.ingest.chunks_written", description="chunks written by ingest"
        )

    def degraded(self, service: str, reason: str) -> None:
        self._degraded.add(1, {"service": token(service), "reason": token(reason)})

    def llm_call(
        self,
        *,
        role: str,
        tier: str,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None,
        degraded: bool,
    ) -> None:
        labels: dict[str, AttributeValue] = {"role": token(role), "tier": token(tier)}
        self._llm_calls.add(1, {**labels, "degraded": degraded})
        if input_tokens:
            self._llm_tokens.add(input_tokens, {**labels, "type": "input"})
        if output_tokens:
            self._llm_tokens.add(output_tokens, {**labels, "type": "output"})
        if cost_usd:
            self._llm_cost.add(cost_usd, labels)

    def repair(self, failed: str) -> None:
        self._repairs.add(1, {"failed": token(failed)})

    def gate_rejection(self, rule: str) -> None:
        self._gate.add(1, {"rule": token(rule)})

    def cache(self, hits: int, misses: int) -> None:
        if hits:
            self._cache_hits.add(hits)
        if misses:
            self._cache_misses.add(misses)

    def chunks_written(self, count: int) -> None:
        self._chunks.add(count)
