"""Server interceptor: deadlines enforced, exceptions mapped to rich status, one log per call."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from grpc_status import rpc_status
from opentelemetry import metrics, trace

from services.common._deadline import deadline_scope
from services.common._errors import DeadlineExceeded, InvalidArgument, TandemError, status_for
from services.common._lsn import lsn_from_metadata, read_after
from services.common._principal import current_principal, parse_principal
from services.common._propagation import enter_remote_context, leave_remote_context

_log = logging.getLogger("tandem.rpc")

Behavior = Callable[..., Any]
# Runs before each handler with the method, the parsed request and the context; raises a
# TandemError to refuse the call (the mutual-TLS caller guard).
Guard = Callable[[str, Any, grpc.aio.ServicerContext[Any, Any]], None]


class _Malformed:
    """Stands in for a request whose bytes are not the expected message, so the handler
    wrapper answers INVALID_ARGUMENT instead of gRPC's UNKNOWN naming the parser error."""


_MALFORMED = _Malformed()


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:
            return _MALFORMED

    return parse


def _check_parsed(request: Any) -> None:
    if request is _MALFORMED:
        raise InvalidArgument.field(
            "request", "is not a valid protobuf message for this method", reason="MALFORMED_REQUEST"
        )


Partial = Callable[[], Message | None]
# What a streaming call has done so far, for its status should it end with an error (an
# ingest's settled documents): providers a handler registers with ``report_on_error``.
_PARTIAL: contextvars.ContextVar[list[Partial] | None] = contextvars.ContextVar(
    "tandem_partial", default=None
)


def report_on_error(provider: Partial) -> None:
    """Should the current streaming call end with an error, add ``provider()`` (unless
    None) to its status details: what a caller needs to resume. A detail of the same type
    already in the status (relayed from the service that did the work) wins. Outside a
    streaming call this does nothing."""
    providers = _PARTIAL.get()
    if providers is not None:
        providers.append(provider)


async def abort_with(
    context: grpc.aio.ServicerContext[Any, Any],
    exc: BaseException,
    extra: Sequence[Partial] = (),
) -> None:
    """Abort the call with the rich status for ``exc`` (BadRequest, RetryInfo, ErrorInfo…)
    and what ``extra`` reports."""
    proto = status_for(exc)
    present = {detail.type_url for detail in proto.details}
    for provider in extra:
        found = provider()
        if found is None:
            continue
        packed = any_pb2.Any()
        packed.Pack(found)
        if packed.type_url not in present:
            proto.details.append(packed)
            present.add(packed.type_url)
    status = rpc_status.to_status(proto)
    await context.abort(
        status.code, status.details, (*status.trailing_metadata, *_trace_id_metadata())
    )


# Methods whose wrapped handlers are kept (a server has a few dozen; unknown method
# names get no handler, so they are never kept).
_MAX_WRAPPED = 1024


class RuntimeInterceptor(grpc.aio.ServerInterceptor):
    """Wraps every handler: deadline scope, error mapping and an access-log line.

    Calls without a deadline get ``default_deadline_s`` so no work runs unbounded; with
    ``max_deadline_s`` (the gateway), a longer deadline than it is cut to it, so no
    internal call outlives the connections' grace (``ServerSettings``).
    Unexpected exceptions become INTERNAL with a fixed message (the cause goes to the
    log and the span, never to the client) and are never surfaced as UNKNOWN.
    """

    def __init__(
        self,
        default_deadline_s: float,
        meter: metrics.Meter | None = None,
        *,
        carry_trace_context: bool = False,
        guard: Guard | None = None,
        max_deadline_s: float | None = None,
        accept_principal: bool = True,
    ) -> None:
        self._default_deadline_s = default_deadline_s
        self._max_deadline_s = max_deadline_s
        self._guard = guard
        # Internal servers take the request's principal from its headers (after the guard
        # checked them against the signed token), and the WAL position its reads must see
        # (``x-tandem-lsn``); the gateway decides itself whether a key may name a
        # principal, and keeps positions itself, so it does not.
        self._accept_principal = accept_principal
        # Without the tracing interceptor before it, this one makes the caller's trace
        # context current (for logs, the trailer and the next hop).
        self._carry = carry_trace_context
        self._duration = (meter or metrics.NoOpMeter("tandem.rpc")).create_histogram(
            "tandem.rpc.server.duration",
            unit="ms",
            description="Server-side RPC latency by method and status code",
        )
        # Each method's handler as wrapped, kept while the handler behind it is the same
        # object (a server's registered handlers are): wrapping it anew took a handler,
        # two closures and a deserializer per call.
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler[Any, Any], Any]] = {}

    def _record(self, method: str, code: grpc.StatusCode, started: float) -> None:
        elapsed_ms = (time.perf_counter() - started) * 1000
        _access_log(method, code, elapsed_ms)
        if not method.startswith(_PROBES):
            self._duration.record(elapsed_ms, {"rpc.method": method, "rpc.code": code.name})

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        known = self._wrapped.get(method)
        if known is not None and known[0] is handler:
            wrapped: grpc.RpcMethodHandler[Any, Any] = known[1]
            return wrapped
        wrapped = self._wrap(handler, method)
        if len(self._wrapped) >= _MAX_WRAPPED:
            self._wrapped.clear()
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(
        self, handler: grpc.RpcMethodHandler[Any, Any], method: str
    ) -> grpc.RpcMethodHandler[Any, Any]:
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(handler.unary_unary, method),
                request_deserializer=_tolerant(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(handler.unary_stream, method),
                request_deserializer=_tolerant(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap_unary(handler.stream_unary, method),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if not handler.stream_stream:
            return handler
        return grpc.stream_stream_rpc_method_handler(
            self._wrap_stream(handler.stream_stream, method),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def _budget(self, context: grpc.aio.ServicerContext[Any, Any]) -> float:
        left = context.time_remaining()
        budget = self._default_deadline_s if left is None else max(float(left), 0.0)
        return budget if self._max_deadline_s is None else min(budget, self._max_deadline_s)

    def _admit(
        self, method: str, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """What every call goes through before its handler, unary or streamed: its trace
        id, the request parsed whole, the guard, and, where this server takes them, the
        caller's principal and read-after position. Raises (or aborts) to refuse it."""
        _set_trace_id(context)
        _check_parsed(request)
        if self._guard is not None:
            self._guard(method, request, context)
        if self._accept_principal:
            metadata = context.invocation_metadata()
            current_principal.set(parse_principal(metadata))
            read_after.set(lsn_from_metadata(metadata))

    def _wrap_unary(self, behavior: Behavior, method: str) -> Behavior:
        async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            code = grpc.StatusCode.OK
            budget = self._budget(context)
            token = enter_remote_context(context.invocation_metadata()) if self._carry else None
            try:
                self._admit(method, request, context)
                with deadline_scope(budget):
                    async with asyncio.timeout(budget):
                        return await behavior(request, context)
            except BaseException as exc:
                code = _classify(exc, context)
                await _abort_for(exc, context, method)
                raise
            finally:
                self._record(method, code, started)
                if token is not None:
                    leave_remote_context(token)

        return unary

    def _wrap_stream(self, behavior: Behavior, method: str) -> Behavior:
        async def stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            started = time.perf_counter()
            code = grpc.StatusCode.OK
            budget = self._budget(context)
            token = enter_remote_context(context.invocation_metadata()) if self._carry else None
            partial: list[Partial] = []
            reporting = _PARTIAL.set(partial)
            try:
                self._admit(method, request, context)
                with deadline_scope(budget):
                    async with asyncio.timeout(budget):
                        result = behavior(request, context)
                        if hasattr(result, "__aiter__"):
                            async for item in result:
                                yield item
                        else:
                            await result
            except BaseException as exc:
                code = _classify(exc, context)
                await _abort_for(exc, context, method, partial)
                raise
            finally:
                self._record(method, code, started)
                _PARTIAL.reset(reporting)
                if token is not None:
                    leave_remote_context(token)

        return stream


def _classify(exc: BaseException, context: grpc.aio.ServicerContext[Any, Any]) -> grpc.StatusCode:
    """The status code a failed call ends with, for the access log."""
    if isinstance(exc, grpc.aio.AbortError):
        code = context.code()
        return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN
    if isinstance(exc, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED
    if isinstance(exc, TimeoutError):
        return grpc.StatusCode.DEADLINE_EXCEEDED
    if isinstance(exc, TandemError):
        return exc.code
    return grpc.StatusCode.INTERNAL


async def _abort_for(
    exc: BaseException,
    context: grpc.aio.ServicerContext[Any, Any],
    method: str,
    partial: Sequence[Partial] = (),
) -> None:
    """Abort with the mapped rich status; returns only for what grpc itself must see."""
    if isinstance(exc, grpc.aio.AbortError | asyncio.CancelledError) or not isinstance(
        exc, Exception
    ):
        return
    if isinstance(exc, TimeoutError):
        if partial:
            await abort_with(
                context, DeadlineExceeded("deadline exceeded", reason="DEADLINE_EXCEEDED"), partial
            )
        await context.abort(
            grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded", _trace_id_metadata()
        )
    span = trace.get_current_span()
    if isinstance(exc, TandemError):
        if exc.code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE):
            span.record_exception(exc)
        await abort_with(context, exc, partial)
    span.record_exception(exc)
    span.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))
    _log.error(
        "unhandled error in handler",
        exc_info=exc,
        extra={"fields": {"rpc.method": method, "error.type": type(exc).__name__}},
    )
    await abort_with(context, exc, partial)


_PROBES = ("/grpc.health.", "/grpc.reflection.")
TRACE_ID_HEADER = "x-trace-id"


def _trace_id_metadata() -> tuple[tuple[str, str], ...]:
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return ()
    return ((TRACE_ID_HEADER, format(span_context.trace_id, "032x")),)


def _set_trace_id(context: grpc.aio.ServicerContext[Any, Any]) -> None:
    """Return the trace id in trailing metadata so a caller can find its trace.

    Trailers, not headers: a call that has sent headers is committed and gRPC would no
    longer retry it on UNAVAILABLE.
    """
    metadata = _trace_id_metadata()
    if metadata:
        context.set_trailing_metadata(metadata)


def _access_log(method: str, code: grpc.StatusCode, elapsed_ms: float) -> None:
    if method.startswith(_PROBES):
        return
    _log.info(
        "rpc",
        extra={
            "fields": {
                "rpc.method": method,
                "rpc.code": code.name,
                "duration_ms": round(elapsed_ms, 2),
            }
        },
    )
