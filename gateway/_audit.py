"""The audit trail: one append-only row per public call, written off the request path.

Who made a call (key, principal), what it touched (RPC, route, tools, documents cited,
tables read) and how it ended (status, reason, answer outcome) — identifiers and enum
value names only, never question text, answers, SQL, literals or snippets: nothing here
reads a free-text field of a request or a response.

Recording is on every request, so it must cost next to nothing there: ``audited`` wraps
each servicer method, fills one small ``AuditEvent`` from the response it already holds
and appends it to a bounded in-memory buffer. A background task writes the buffer in
batches (one pipelined multi-row INSERT per batch) every ``flush_interval_s`` or as soon
as a batch is full, and once more on shutdown. A dead database never fails or slows a
call: records wait in the buffer while it is unreachable, and past ``buffer_size`` new
ones are dropped — counted (``tandem.gateway.audit.dropped``) and logged, never waited
for.

The table (migration 0007) is written and read as ``tandem_audit_app``, which may only
INSERT and SELECT; a trigger refuses UPDATE, DELETE and TRUNCATE for every role except
inside ``gateway_audit_purge``, the retention purge this module runs periodically.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import inspect
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import grpc
from google.protobuf.message import Message
from opentelemetry import metrics, trace

from gateway._admission import bearer_token
from gateway._keys import key_id_of
from gateway._settings import AuditSettings
from services.common import (
    Database,
    FailedPrecondition,
    InvalidArgument,
    TandemError,
    TenantStore,
    current_principal,
    decode_page_token,
    encode_page_token,
    role_conninfo,
)
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb

APP_ROLE = "tandem_audit_app"
DEFAULT_PAGE_SIZE = 50
# One call names at most this many documents or tables (a 256-document ingest, a
# 100-hit search): the row stays small whatever the call.
MAX_IDS = 256
_log = logging.getLogger("tandem.gateway.audit")
T = TypeVar("T")

GATEWAY_RPCS = frozenset(gpb.DESCRIPTOR.services_by_name["GatewayService"].methods_by_name)
STATUS_NAMES = frozenset(code.name for code in grpc.StatusCode)


def app_conninfo(owner_conninfo: str, app_url: str | None = None) -> str:
    """Where the audit trail's queries connect (see ``role_conninfo``)."""
    return role_conninfo(owner_conninfo, APP_ROLE, app_url)


@dataclass(slots=True)
class AuditEvent:
    """One call as the trail records it (filled while the call runs)."""

    rpc: str
    tenant_id: str | None = None
    key_id: str | None = None
    principal_id: str | None = None
    route: str = ""
    tools: list[str] = field(default_factory=list)
    document_ids: list[str] = field(default_factory=list)
    tables_read: list[str] = field(default_factory=list)
    status: str = "OK"
    reason: str = ""
    answer_outcome: str = ""
    request_id: str = ""
    trace_id: str = ""
    event_time: datetime | None = None
    event_id: int = 0

    def row(self) -> dict[str, Any]:
        """The event as one element of a batch's JSON (``_INSERT``)."""
        return {
            "event_time": self.event_time.isoformat() if self.event_time else None,
            "tenant_id": self.tenant_id, "key_id": self.key_id,
            "principal_id": self.principal_id, "rpc": self.rpc, "route": self.route,
            "tools": self.tools, "document_ids": self.document_ids[:MAX_IDS],
            "tables_read": self.tables_read[:MAX_IDS], "status": self.status,
            "reason": self.reason, "answer_outcome": self.answer_outcome,
            "request_id": self.request_id, "trace_id": self.trace_id,
        }  # fmt: skip


_COLUMNS = (
    "event_time, tenant_id, key_id, principal_id, rpc, route, tools, document_ids, "
    "tables_read, status, reason, answer_outcome, request_id, trace_id"
)
# A whole batch is one statement with one parameter (the rows as a JSON array): a third
# of the client CPU of one parameter set per row, and one round trip.
_INSERT = (
    f"INSERT INTO gateway_audit_events ({_COLUMNS}) SELECT {_COLUMNS} "
    "FROM jsonb_to_recordset(%s::jsonb) AS r(event_time timestamptz, tenant_id text, "
    "key_id text, principal_id text, rpc text, route text, tools text[], "
    "document_ids text[], tables_read text[], status text, reason text, "
    "answer_outcome text, request_id text, trace_id text)"
)


# -- what each response tells -----------------------------------------------------------


def _add(ids: list[str], value: str) -> None:
    if value and value not in ids:
        ids.append(value)


def _enum_name(enum: Any, value: int) -> str:
    try:
        return str(enum.Name(value)) if value else ""
    except ValueError:
        return str(value)


def _answer(event: AuditEvent, answer: qpb.Answer) -> None:
    event.route = _enum_name(qpb.Route, answer.route)
    event.answer_outcome = _enum_name(qpb.AnswerOutcome, answer.outcome)
    event.reason = answer.refusal_reason
    event.request_id = answer.request_id
    for step in answer.plan.steps:
        _add(event.tools, _enum_name(qpb.Tool, step.tool))
    for done in answer.trajectory:
        _add(event.tools, _enum_name(qpb.Tool, done.tool))
    for citation in answer.citations:
        _add(event.document_ids, citation.document_id)
    for sql in answer.sql_results:
        _tables(event, sql.result)


def _tables(event: AuditEvent, result: spb.SqlResult) -> None:
    for table in result.tables_used:
        _add(event.tables_read, table)


def _ask(event: AuditEvent, response: Any) -> None:
    _answer(event, response.answer)


def _stream_ask(event: AuditEvent, response: Any) -> None:
    if response.HasField("final_answer"):
        _answer(event, response.final_answer)


def _search(event: AuditEvent, response: Any) -> None:
    for hit in response.hits:
        _add(event.document_ids, hit.document_id)


def _ingested(event: AuditEvent, response: Any) -> None:
    if response.HasField("document_finished"):
        _add(event.document_ids, response.document_finished.document_id)


def _ask_sql(event: AuditEvent, response: Any) -> None:
    event.answer_outcome = _enum_name(spb.SqlAskOutcome, response.outcome)
    event.reason = response.refusal_reason
    _tables(event, response.result)


def _sql_result(event: AuditEvent, response: Any) -> None:
    _tables(event, response.result)


def _named_document(event: AuditEvent, response: Any) -> None:
    _add(event.document_ids, response.document_id)


def _observer(name: str) -> Callable[[AuditEvent, Any], None] | None:
    """What to take from RPC ``name``'s responses: its row below, else the one document a
    response names (a new per-document RPC, e.g. a change of rights, is covered as it is
    added), else nothing."""
    if name in OBSERVERS:
        return OBSERVERS[name]
    method = gpb.DESCRIPTOR.services_by_name["GatewayService"].methods_by_name.get(name)
    if method is not None and "document_id" in method.output_type.fields_by_name:
        return _named_document
    return None


# What the trail takes from each RPC's response (or stream event); other RPCs record
# who, which RPC and the outcome (and the document a response names, see ``_observer``).
OBSERVERS: dict[str, Callable[[AuditEvent, Any], None]] = {
    "Ask": _ask,
    "StreamAsk": _stream_ask,
    "Search": _search,
    "IngestDocuments": _ingested,
    "UploadDocument": _ingested,
    "AskSql": _ask_sql,
    "RunSqlIntent": _sql_result,
}


# -- the current call's event -------------------------------------------------------------

_current: contextvars.ContextVar[AuditEvent | None] = contextvars.ContextVar(
    "tandem_audit_event", default=None
)


def note_caller(tenant_id: str, key_id: str) -> None:
    """Admission verified the key: the current call's event names its tenant and key id."""
    event = _current.get()
    if event is not None:
        event.tenant_id = tenant_id
        event.key_id = key_id


def _failed(event: AuditEvent, exc: BaseException, context: Any) -> None:
    if isinstance(exc, TandemError):
        event.status, event.reason = exc.code.name, exc.reason
    elif isinstance(exc, asyncio.CancelledError | GeneratorExit):
        event.status = "CANCELLED"
    elif isinstance(exc, grpc.aio.AioRpcError):
        event.status = exc.code().name
    else:
        code = context.code() if hasattr(context, "code") else None
        event.status = code.name if isinstance(code, grpc.StatusCode) else "INTERNAL"


def _safely(step: Callable[[AuditEvent, Any], None], event: AuditEvent, value: Any) -> None:
    """Recording never fails a call: a bug here costs the record's detail, not the
    caller's answer."""
    try:
        step(event, value)
    except Exception:
        _log.exception("audit record incomplete", extra={"fields": {"rpc": event.rpc}})


class Audited(Protocol):
    """A servicer whose calls are audited: its trail, None while it has none."""

    @property
    def audit_log(self) -> AuditLog | None: ...


def audited(name: str, method: Any) -> Any:
    """``method`` (servicer RPC ``name``, unary or server-streaming) recording one event
    per call on the servicer's ``audit_log``, whatever the call's end."""
    observe = _observer(name)
    if inspect.isasyncgenfunction(method):

        async def stream(self: Audited, request: Any, context: Any) -> AsyncIterator[Message]:
            log = self.audit_log
            if log is None:
                async for item in method(self, request, context):
                    yield item
                return
            event = log.begin(name)
            try:
                async for item in method(self, request, context):
                    if observe is not None:
                        _safely(observe, event, item)
                    yield item
            except BaseException as exc:
                _failed(event, exc, context)
                raise
            finally:
                _safely(log.end, event, context)

        stream.__name__ = stream.__qualname__ = name
        return stream

    async def unary(self: Audited, request: Any, context: Any) -> Message:
        log = self.audit_log
        if log is None:
            return await method(self, request, context)  # type: ignore[no-any-return]
        event = log.begin(name)
        try:
            response = await method(self, request, context)
            if observe is not None:
                _safely(observe, event, response)
            return response  # type: ignore[no-any-return]
        except BaseException as exc:
            _failed(event, exc, context)
            raise
        finally:
            _safely(log.end, event, context)

    unary.__name__ = unary.__qualname__ = name
    return unary


# -- listing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditQuery:
    """A validated ListAuditEvents request."""

    page_size: int = DEFAULT_PAGE_SIZE
    before_event_id: int | None = None
    principal_id: str = ""
    key_id: str = ""
    rpc: str = ""
    outcome: str = ""
    start_time: datetime | None = None
    end_time: datetime | None = None

    def digest(self) -> str:
        """What a page token is bound to: the filters (not the page size)."""
        parts = (self.principal_id, self.key_id, self.rpc, self.outcome,
                 self.start_time and self.start_time.isoformat(),
                 self.end_time and self.end_time.isoformat())  # fmt: skip
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


@dataclass
class AuditPage:
    events: list[AuditEvent] = field(default_factory=list)
    next_page_token: str = ""


def parse_query(request: gpb.GatewayServiceListAuditEventsRequest) -> AuditQuery:
    """The request's filters and page (its shape already checked), or INVALID_ARGUMENT
    naming the field."""
    # Lengths, ranges and characters: gateway._validation.check_list_audit_events.
    if request.rpc and request.rpc not in GATEWAY_RPCS:
        raise InvalidArgument.field("rpc", "not a GatewayService RPC (e.g. Ask)")
    if request.outcome and request.outcome not in STATUS_NAMES:
        raise InvalidArgument.field("outcome", "not a gRPC status code name (e.g. OK)")
    start = request.start_time.ToDatetime(UTC) if request.HasField("start_time") else None
    end = request.end_time.ToDatetime(UTC) if request.HasField("end_time") else None
    if start is not None and end is not None and end < start:
        raise InvalidArgument.field("end_time", "is before start_time")
    query = AuditQuery(
        page_size=request.page_size or DEFAULT_PAGE_SIZE,
        principal_id=request.principal_id, key_id=request.key_id, rpc=request.rpc,
        outcome=request.outcome, start_time=start, end_time=end,
    )  # fmt: skip
    if not request.page_token:
        return query
    return AuditQuery(
        **{**query.__dict__, "before_event_id": _decode_token(request.page_token, query)}
    )


def _encode_token(event_id: int, query: AuditQuery) -> str:
    return encode_page_token(event_id, query.digest())


def _decode_token(token: str, query: AuditQuery) -> int:
    def parse(parts: list[str]) -> int:
        event_id, digest = parts
        if digest != query.digest():
            raise ValueError("issued for other filters")
        return int(event_id)

    return decode_page_token(
        token, parse, description="not a token this RPC issued for these filters"
    )


def event_pb(event: AuditEvent) -> gpb.AuditEvent:
    out = gpb.AuditEvent(
        event_id=event.event_id, key_id=event.key_id or "",
        principal_id=event.principal_id or "", rpc=event.rpc, route=event.route,
        tools=event.tools, document_ids=event.document_ids, tables_read=event.tables_read,
        status=event.status, reason=event.reason, answer_outcome=event.answer_outcome,
        request_id=event.request_id, trace_id=event.trace_id,
    )  # fmt: skip
    if event.event_time is not None:
        out.event_time.FromDatetime(event.event_time)
    return out


def audit_off() -> FailedPrecondition:
    return FailedPrecondition(
        "the audit trail is switched off on this gateway (GATEWAY_AUDIT)",
        reason="AUDIT_DISABLED",
    )


# -- the store -----------------------------------------------------------------------------


class AuditLog(TenantStore):
    """Buffers call records and writes them in batches; lists and purges the trail."""

    name = "the audit trail"

    def __init__(
        self,
        database: Database,
        settings: AuditSettings,
        *,
        meter: metrics.Meter | None = None,
        recent_tenant: Callable[[str | None], str | None] = lambda _key: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(database)
        self.settings = settings
        self._recent_tenant = recent_tenant
        self._clock = clock
        self._buffer: deque[AuditEvent] = deque()
        self._full = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._flushing = asyncio.Lock()
        self._logged_at = -1e9
        self.dropped = 0
        self.written = 0
        meter = meter or metrics.NoOpMeter("tandem.gateway")
        meter.create_observable_counter(
            "tandem.gateway.audit.dropped",
            callbacks=[lambda _options: [metrics.Observation(self.dropped)]],
            description="audit records dropped: buffer full while the database was away",
        )
        meter.create_observable_counter(
            "tandem.gateway.audit.written",
            callbacks=[lambda _options: [metrics.Observation(self.written)]],
            description="audit records written",
        )

    # -- recording (on the request path: no I/O) ---------------------------------------

    def begin(self, rpc: str) -> AuditEvent:
        event = AuditEvent(rpc)
        _current.set(event)
        return event

    def end(self, event: AuditEvent, context: Any) -> None:
        """Complete ``event`` (who, when, the trace) and buffer it."""
        if event.tenant_id is None:
            # Refused at admission: a verified key's tenant and id are still known (a
            # key lacking the RPC's scope); an unknown or forged key names no one.
            with contextlib.suppress(TandemError):
                presented = bearer_token(context.invocation_metadata())
                tenant = self._recent_tenant(presented)
                if tenant is not None:
                    event.tenant_id, event.key_id = tenant, key_id_of(presented)
        principal = current_principal.get()
        if principal is not None and event.tenant_id is not None:
            event.principal_id = principal.id
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            event.trace_id = format(span.trace_id, "032x")
        event.event_time = datetime.now(UTC)
        self.record(event)

    def record(self, event: AuditEvent) -> None:
        """Buffer ``event`` for the next batch; dropped (and counted) when the buffer is
        full, so a database that is away never holds a call up."""
        if len(self._buffer) >= self.settings.buffer_size:
            self._drop(1, "the buffer is full")
            return
        self._buffer.append(event)
        if len(self._buffer) >= self.settings.batch_size:
            self._full.set()

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def _drop(self, count: int, why: str) -> None:
        self.dropped += count
        now = self._clock()
        if now - self._logged_at >= 10.0:
            self._logged_at = now
            _log.warning(
                "audit records dropped",
                extra={"fields": {"why": why, "dropped_total": self.dropped}},
            )

    # -- writing (the background task) -------------------------------------------------

    async def start(self) -> None:
        """Open the pool and start the writer (which purges first, then periodically)."""
        await self.open()
        self._task = asyncio.create_task(self._run(), name="audit-writer")

    async def close(self) -> None:
        """Stop the writer, write what is buffered (bounded by the pool's timeout), close."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()
        await super().close()

    async def _run(self) -> None:
        next_purge = self._clock()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), self.settings.flush_interval_s)
            self._full.clear()
            # The writer outlives any one failure: a lost batch is counted in ``flush``,
            # and a bug here must not stop every later record from being written.
            try:
                await self.flush()
                if self._clock() >= next_purge:
                    next_purge = self._clock() + self.settings.purge_interval_s
                    await self.purge()
            except TandemError as exc:
                _log.warning(
                    "audit write or purge failed", extra={"fields": {"reason": exc.reason}}
                )
            except Exception:
                _log.exception("audit writer failed; continuing")

    async def flush(self) -> int:
        """Write everything buffered, in batches; returns how many were written. A batch
        the database cannot take now goes back to the buffer's front (what no longer fits
        is dropped); one it refuses outright is dropped."""
        written = 0
        async with self._flushing:
            while self._buffer:
                size = min(self.settings.batch_size, len(self._buffer))
                batch = [self._buffer.popleft() for _ in range(size)]
                try:
                    await self._write(batch)
                except TandemError as exc:
                    self._requeue(batch, exc)
                    return written
                written += len(batch)
                self.written += len(batch)
        return written

    def _requeue(self, batch: list[AuditEvent], exc: TandemError) -> None:
        if exc.code is not grpc.StatusCode.UNAVAILABLE:
            self._drop(len(batch), f"the database refused a batch ({exc.reason})")
            return
        room = self.settings.buffer_size - len(self._buffer)
        kept = batch[:room] if room > 0 else []
        self._buffer.extendleft(reversed(kept))
        if len(kept) < len(batch):
            self._drop(len(batch) - len(kept), "the database is unreachable")
        else:
            now = self._clock()
            if now - self._logged_at >= 10.0:
                self._logged_at = now
                _log.warning(
                    "audit records waiting: the database is unreachable",
                    extra={"fields": {"pending": len(self._buffer)}},
                )

    async def _write(self, batch: list[AuditEvent]) -> None:
        """One batch, one statement, one round trip."""
        rows = json.dumps([e.row() for e in batch], separators=(",", ":"))
        async with self._unavailable(), self._db.autocommit() as conn:
            await conn.execute(_INSERT, (rows,))

    async def purge(self) -> int:
        """Delete rows past retention (the only deletion path); how many went."""
        async with self._unavailable(), self._db.autocommit() as conn:
            cur = await conn.execute(
                "SELECT gateway_audit_purge(%s)", (self.settings.retention_days,)
            )
            row = await cur.fetchone()
        purged = int(row[0]) if row else 0
        if purged:
            _log.info("audit events purged", extra={"fields": {"purged": purged}})
        return purged

    # -- reading -------------------------------------------------------------------------

    async def page(self, tenant_id: str, query: AuditQuery) -> AuditPage:
        """One page of the tenant's trail, newest first."""
        sql = f"SELECT event_id, {_COLUMNS} FROM gateway_audit_events WHERE tenant_id = %s"
        params: list[Any] = [tenant_id]
        for column, value in (
            ("principal_id", query.principal_id), ("key_id", query.key_id),
            ("rpc", query.rpc), ("status", query.outcome),
        ):  # fmt: skip
            if value:
                sql += f" AND {column} = %s"
                params.append(value)
        if query.start_time is not None:
            sql += " AND event_time >= %s"
            params.append(query.start_time)
        if query.end_time is not None:
            sql += " AND event_time < %s"
            params.append(query.end_time)
        if query.before_event_id is not None:
            sql += " AND event_id < %s"
            params.append(query.before_event_id)
        sql += " ORDER BY event_id DESC LIMIT %s"
        params.append(query.page_size + 1)
        async with self._tx(tenant_id, pipelined=False) as conn:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        events = [_event(row) for row in rows[: query.page_size]]
        page = AuditPage(events)
        if len(rows) > query.page_size:
            page.next_page_token = _encode_token(events[-1].event_id, query)
        return page


def _event(row: Iterable[Any]) -> AuditEvent:
    (event_id, event_time, tenant_id, key_id, principal_id, rpc, route, tools, document_ids,
     tables_read, status, reason, answer_outcome, request_id, trace_id) = row  # fmt: skip
    return AuditEvent(
        rpc=rpc, tenant_id=tenant_id, key_id=key_id, principal_id=principal_id, route=route,
        tools=list(tools), document_ids=list(document_ids), tables_read=list(tables_read),
        status=status, reason=reason, answer_outcome=answer_outcome, request_id=request_id,
        trace_id=trace_id, event_time=event_time, event_id=event_id,
    )  # fmt: skip


def audit_rpcs(names: Iterable[str]) -> Callable[[type[T]], type[T]]:
    """A class decorator: every servicer method named in ``names`` is ``audited``."""

    def decorate(cls: type[T]) -> type[T]:
        for name in names:
            setattr(cls, name, audited(name, getattr(cls, name)))
        return cls

    return decorate
