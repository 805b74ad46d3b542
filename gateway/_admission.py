"""Quota refusals at the edge: the gateway's first server interceptor.

A tenant flooding past its quota must cost the other tenants next to nothing. Refused
deep in the chain (tracing, the runtime interceptor, request parsing, the servicer, an
exception, its rich status, an access-log line), a call cost the single event loop about
0.6 ms of CPU; refused here, before any of that, it costs little more than gRPC's own
per-call work.

A call is refused here only when its key verified recently (checked against the key's
HMAC in memory, so a forged secret still goes the slow way and is UNAUTHENTICATED) and
its tenant's bucket is empty; every other call continues down the chain unchanged, where
the key is looked up and the token spent. The refusal is the one the servicer would
send (RESOURCE_EXHAUSTED, RetryInfo, ErrorInfo ``QUOTA_EXCEEDED``), built once per
retry delay in whole milliseconds. It has no span, no x-trace-id and no access-log line
(nothing ran to trace): refusals are counted (``tandem.gateway.quota.refused``) and
summed up in one log line at most every ``log_every_s``.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeAlias

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from grpc_status import rpc_status
from opentelemetry import metrics

from gateway._quota import TokenBuckets, quota_exceeded
from gateway._upload import drain
from services.common import Unauthenticated, status_for

_log = logging.getLogger("tandem.gateway")
_MAX_CACHED = 4096

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Continuation: TypeAlias = "Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]]"


class RecentKeys(Protocol):
    """What the gate needs of the key store (``ApiKeys``)."""

    def recent_tenant(self, presented: str | None) -> str | None: ...


# The one form a key is accepted in: the scheme ``Bearer`` as written, one space, the key
# (the characters of ``tdm_<key id>_<secret>``). Every other spelling is refused rather
# than normalised: one credential has one spelling, so the edge's per-key limit
# (infra/edge/tandem-edge.conf.template, which checks the same pattern) cannot be walked
# around by rotating spellings of one key, each of which it would count apart.
CANONICAL_AUTHORIZATION = re.compile(r"Bearer ([A-Za-z0-9_-]{1,256})")
EXPECTED_FORM = "authorization: Bearer <key>"
AUTHORIZATION_MALFORMED = "AUTHORIZATION_MALFORMED"


def malformed_authorization(what: str) -> Unauthenticated:
    """The refusal of an authorization header in any other form; the edge sends the same
    one (``gateway.edge.refusal_variables``)."""
    return Unauthenticated(
        f"{what}: send exactly one `{EXPECTED_FORM}` header (the scheme `Bearer`, one "
        "space, the key)",
        reason=AUTHORIZATION_MALFORMED,
    )


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The API key from the one ``authorization: Bearer <key>`` header; None when no
    header (or an empty one) came. Another spelling (``bearer``, extra spaces, a bare key,
    another scheme) or a second header is UNAUTHENTICATED naming the expected form."""
    found: str | bytes | None = None
    for key, value in metadata or ():
        if key == "authorization":
            if found is not None:
                raise malformed_authorization("more than one authorization header")
            found = value
    if not found:
        return None
    header = found if isinstance(found, str) else found.decode("utf-8", "replace")
    match = CANONICAL_AUTHORIZATION.fullmatch(header)
    if match is None:
        raise malformed_authorization("malformed authorization header")
    return match.group(1)


def recent_key(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """``bearer_token`` for the quota gate: a malformed header is None here (the call goes
    on to the servicer, which refuses it)."""
    try:
        return bearer_token(metadata)
    except Unauthenticated:
        return None


# A client-streaming call is refused once the client has stopped writing (at most this
# many messages read, unparsed; see ``gateway._upload.drain``).
_DRAIN_MESSAGES = 64


def _refusing(
    code: grpc.StatusCode, details: str, trailers: Any, *, client_streaming: bool = False
) -> Callable[..., Any]:
    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        if client_streaming:
            await drain(request, _DRAIN_MESSAGES)
        await context.abort(code, details, trailers)

    return refuse


def _handler(streaming: tuple[bool, bool], refuse: Callable[..., Any]) -> Handler:
    # No deserializer: a refused request's bytes are never parsed.
    client_streaming, server_streaming = streaming
    if client_streaming and server_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if client_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    if server_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)


class QuotaGate(grpc.aio.ServerInterceptor):
    """Refuses a recently verified key whose tenant is over quota, before anything else
    runs; inert until ``attach`` hands it the key store and the buckets."""

    def __init__(
        self,
        service: ServiceDescriptor,
        meter: metrics.Meter | None = None,
        *,
        log_every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        prefix = f"/{service.full_name}/"
        self._streaming = {
            prefix + m.name: (m.client_streaming, m.server_streaming) for m in service.methods
        }
        self._keys: RecentKeys | None = None
        self._quota: TokenBuckets | None = None
        self._handlers: dict[tuple[tuple[bool, bool], int], Handler] = {}
        self._clock = clock
        self._log_every_s = log_every_s
        self._logged_at = clock()
        self._unlogged = 0
        self.refused = 0
        (meter or metrics.NoOpMeter("tandem.gateway")).create_observable_counter(
            "tandem.gateway.quota.refused",
            callbacks=[lambda _options: [metrics.Observation(self.refused)]],
            description="calls refused over quota by the gateway's first interceptor",
        )

    def attach(self, keys: RecentKeys, quota: TokenBuckets) -> None:
        self._keys, self._quota = keys, quota

    def wait_s(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> float:
        """How long the caller of this metadata must wait; 0.0 when the call goes on."""
        if self._keys is None or self._quota is None:
            return 0.0
        tenant = self._keys.recent_tenant(recent_key(metadata))
        return 0.0 if tenant is None else self._quota.wait_s(tenant)

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        streaming = self._streaming.get(handler_call_details.method)
        if streaming is not None:
            wait = self.wait_s(handler_call_details.invocation_metadata)
            if wait > 0.0:
                return self._refusal(streaming, wait)
        return await continuation(handler_call_details)

    def _refusal(self, streaming: tuple[bool, bool], wait_s: float) -> Handler:
        self.refused += 1
        self._unlogged += 1
        now = self._clock()
        if now - self._logged_at >= self._log_every_s:
            _log.info(
                "quota refusals",
                extra={
                    "fields": {
                        "refused": self._unlogged,
                        "window_s": round(now - self._logged_at, 1),
                    }
                },
            )
            self._logged_at, self._unlogged = now, 0
        # Rounded up (past float noise): RetryInfo never sends a caller back too early.
        wait_ms = max(1, math.ceil(wait_s * 1000 - 1e-6))
        handler = self._handlers.get((streaming, wait_ms))
        if handler is None:
            if len(self._handlers) >= _MAX_CACHED:
                self._handlers.clear()
            status = rpc_status.to_status(status_for(quota_exceeded(wait_ms / 1000)))
            refuse = _refusing(
                status.code,
                status.details,
                status.trailing_metadata,
                client_streaming=streaming[0],
            )
            handler = self._handlers[(streaming, wait_ms)] = _handler(streaming, refuse)
        return handler
