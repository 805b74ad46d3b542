"""Client channels: retries per AIP-194, keepalive, size limits and deadline propagation."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from services.common._deadline import effective_timeout
from services.common._lsn import LSN_HEADER, read_after
from services.common._mtls import Trust
from services.common._principal import current_principal
from services.common._rewritten_channel import Rewrite, RewritingChannel
from services.common._tenant_token import (
    TENANT_TOKEN_HEADER,
    TenantSigner,
    current_tenant,
    current_token,
)

# The internal RPCs a second try would change the outcome of: feedback is a new row each
# time. A call of these whose replica dies mid-way fails with UNAVAILABLE for its caller to
# decide. Every other RPC reads, or writes what a repeat leaves the same (ingest by
# fingerprint, deletes, a pair taught twice), and is retried; so is the router's Ask: a
# repeat runs its plan again (model calls, the SQL memory's answer records) but changes
# nothing a user sees, and the gateway records the conversation's turn only once answered.
NOT_RETRIED: frozenset[tuple[str, str]] = frozenset({("tandem.v1.SqlService", "SubmitFeedback")})

# Retry UNAVAILABLE only (AIP-194): the request never reached a handler, the server said it
# did no work, or its replica died before answering (then only what a repeat leaves the
# same, see NOT_RETRIED). gRPC's C core does not implement hedging, so none is configured.
RETRY_SERVICE_CONFIG: dict[str, Any] = {
    "methodConfig": [
        {
            "name": [{}],
            "retryPolicy": {
                "maxAttempts": 3,
                "initialBackoff": "0.05s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        },
        # A more specific name wins over the default entry: these get no retry policy.
        {"name": [{"service": s, "method": m} for s, m in sorted(NOT_RETRIED)]},
    ],
    "retryThrottling": {"maxTokens": 100, "tokenRatio": 0.1},
    # With a target of several replicas (a dns:/// name resolving to the pods of a headless
    # Service, or an ipv4:a:p1,b:p2 list), spread calls over all of them; pick_first
    # would pin each caller to one replica.
    "loadBalancingConfig": [{"round_robin": {}}],
}

# Client-side health checking (gRFC A17), for a target that names several replicas: each
# replica's process-wide ("") health is watched, and one that is starting or draining
# (NOT_SERVING until ready, and again from SIGTERM) gets no new calls while the others
# take them. Not the service's own name: that one follows its database, and with the
# database gone the service still answers (degraded, or UNAVAILABLE with its reason)
# better than a channel saying only "no healthy backend". A plain host:port is one
# replica: there is nowhere else to send a call, so the channel does not wait on its health.
BALANCED_SERVICE_CONFIG: dict[str, Any] = {
    **RETRY_SERVICE_CONFIG,
    "healthCheckConfig": {"serviceName": ""},
}


def names_replicas(target: str) -> bool:
    """Whether ``target`` may reach several replicas: a ``dns:`` name (a headless Service
    resolves to every pod) or an ``ipv4:``/``ipv6:`` list of addresses."""
    if target.startswith("dns:"):
        return True
    return target.startswith(("ipv4:", "ipv6:")) and "," in target


def channel_options(
    max_message_bytes: int = 16 * 1024 * 1024, *, replicas: bool = False
) -> list[tuple[str, Any]]:
    """Options shared by every internal channel (``replicas``: health-checked balancing)."""
    config = BALANCED_SERVICE_CONFIG if replicas else RETRY_SERVICE_CONFIG
    return [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(config)),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        # Reconnect quickly after a dependency restarts instead of backing off for minutes.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 2_000),
        # Each channel its own connections: gRPC otherwise shares them process-wide by
        # address, so a new channel to a dependency now listening where another one was
        # (a restarted pod's address, a reused port) inherits the reconnect backoff of a
        # channel still open to the one that went away, and its first calls fail
        # UNAVAILABLE in a fraction of a second, retries and all.
        ("grpc.use_local_subchannel_pool", 1),
    ]


def _with_timeout(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
    return grpc.aio.ClientCallDetails(
        method=details.method,
        timeout=effective_timeout(details.timeout),
        metadata=details.metadata,
        credentials=details.credentials,
        wait_for_ready=details.wait_for_ready,
    )


def _cancel_if_abandoned(call: Any) -> Any:
    """Cancel ``call`` on the wire if the interceptor chain above it ends without a result.

    Cancelling a task that awaits an intercepted call cancels the chain's own task, not the
    real call; an outer interceptor that awaits the status (OpenTelemetry's does, for unary
    responses) is interrupted and the RPC runs on with no one left to read it. Whenever
    that task ends cancelled or failed, nobody holds the call any more, so it is cancelled.
    """
    chain = asyncio.current_task()
    if chain is not None:

        def on_done(task: asyncio.Task[Any]) -> None:
            if task.cancelled() or task.exception() is not None:
                call.cancel()

        chain.add_done_callback(on_done)
    return call


# grpc.aio files an interceptor under one call kind only, hence one class per kind; each
# rewrites the call's details before it starts and may settle the call it got back.


def _as_is(call: Any) -> Any:
    return call


class _Kind:
    def __init__(self, rewrite: Rewrite, settle: Callable[[Any], Any]) -> None:
        self._rewrite = rewrite
        self._settle = settle

    def then(self, inner: _Kind) -> _Kind:
        """This interceptor with ``inner`` (the next one toward the real call) folded in:
        its rewrite after this one's, its settle before this one's, as the two would
        run one inside the other."""
        outer_rewrite, inner_rewrite = self._rewrite, inner._rewrite
        outer_settle, inner_settle = self._settle, inner._settle

        def rewrite(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
            return inner_rewrite(outer_rewrite(details))

        def settle(call: Any) -> Any:
            return outer_settle(inner_settle(call))

        return type(self)(rewrite, settle)

    async def _call(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return self._settle(await continuation(self._rewrite(details), request))


class _UnaryUnary(_Kind, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        return await self._call(continuation, client_call_details, request)


class _UnaryStream(_Kind, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        return await self._call(continuation, client_call_details, request)


class _StreamUnary(_Kind, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request_iterator: Any
    ) -> Any:
        return await self._call(continuation, client_call_details, request_iterator)


class _StreamStream(_Kind, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(
        self, continuation: Callable[..., Any], client_call_details: Any, request_iterator: Any
    ) -> Any:
        return await self._call(continuation, client_call_details, request_iterator)


def rewriting_interceptors(
    rewrite: Rewrite, settle: Callable[[Any], Any] = _as_is
) -> list[grpc.aio.ClientInterceptor]:
    """One interceptor per call kind, each passing ``rewrite(details)`` to the call and
    returning ``settle(call)``."""
    return [
        cls(rewrite, settle) for cls in (_UnaryUnary, _UnaryStream, _StreamUnary, _StreamStream)
    ]


_CALL_KINDS: tuple[type, ...] = (
    grpc.aio.UnaryUnaryClientInterceptor,
    grpc.aio.UnaryStreamClientInterceptor,
    grpc.aio.StreamUnaryClientInterceptor,
    grpc.aio.StreamStreamClientInterceptor,
)


def fused(chain: Sequence[grpc.aio.ClientInterceptor]) -> list[grpc.aio.ClientInterceptor]:
    """``chain`` with each run of rewriting interceptors of one call kind folded into one
    (in order: the same rewrites and settles, the same place in the chain).

    grpc.aio runs a call's interceptors one inside the other, each a coroutine level with
    its own call details and metadata rebuilt; an internal call of the gateway crossed
    four (trace context, tenant token, principal, deadline) for what one rewrite does.
    An interceptor of another kind (the tracing instrumentation's) stays where it is and
    ends a run."""
    out: list[grpc.aio.ClientInterceptor] = []
    last: dict[type, int] = {}  # call kind -> where its latest interceptor is in ``out``
    for interceptor in chain:
        kinds = [kind for kind in _CALL_KINDS if isinstance(interceptor, kind)]
        if isinstance(interceptor, _Kind) and len(kinds) == 1:
            at = last.get(kinds[0])
            previous = out[at] if at is not None else None
            if isinstance(previous, _Kind) and type(previous) is type(interceptor):
                out[at] = previous.then(interceptor)
                continue
        for kind in kinds:
            last[kind] = len(out)
        out.append(interceptor)
    return out


def deadline_interceptors() -> list[grpc.aio.ClientInterceptor]:
    """Innermost, next to the real call: every outgoing call gets the smaller of its own
    timeout and the request's remainder, and a cancelled caller (the awaiting task, or
    the call object) cancels the RPC on the wire, whatever the interceptors above do."""
    return rewriting_interceptors(_with_timeout, _cancel_if_abandoned)


def _token_for(signer: TenantSigner | None) -> Rewrite:
    """The rewrite adding the current request's tenant token: minted for the RPC being
    called where this process signs (the gateway), else the one the request arrived with
    (forwarded: the router's calls onward)."""

    def rewrite(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        tenant = current_tenant.get() if signer is not None else None
        if signer is not None and tenant is not None:
            principal = current_principal.get()
            signed = "" if principal is None else principal.canonical()
            return _with_metadata(
                details, [(TENANT_TOKEN_HEADER, signer.token(tenant, details.method, signed))]
            )
        token = current_token.get()
        return details if token is None else _with_metadata(details, [(TENANT_TOKEN_HEADER, token)])

    return rewrite


def _principal_headers(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
    """The current request's principal travels with every internal call it makes, in
    canonical headers (the ones its token was signed with, where there is a token), and
    so does the WAL position its reads must see (``x-tandem-lsn``, when there is one):
    one rewrite for both, no interceptor of its own on every call."""
    principal = current_principal.get()
    lsn = read_after.get()
    if principal is None and not lsn:
        return details
    extra = [] if principal is None else list(principal.headers())
    if lsn:
        extra.append((LSN_HEADER, str(lsn)))
    return _with_metadata(details, extra)


def principal_interceptors() -> list[grpc.aio.ClientInterceptor]:
    """Every call carries the current request's principal, when it has one (plaintext
    channels too: there the headers alone say whom the call is for), and its read
    position."""
    return rewriting_interceptors(_principal_headers)


def _with_metadata(
    details: grpc.aio.ClientCallDetails, extra: Sequence[tuple[str, str]]
) -> grpc.aio.ClientCallDetails:
    metadata = grpc.aio.Metadata(*(details.metadata or ()), *extra)
    return grpc.aio.ClientCallDetails(
        method=details.method,
        timeout=details.timeout,
        metadata=metadata,
        credentials=details.credentials,
        wait_for_ready=details.wait_for_ready,
    )


def tenant_token_interceptors(
    signer: TenantSigner | None = None,
) -> list[grpc.aio.ClientInterceptor]:
    """Every call carries the current request's tenant token when there is one: signed
    by ``signer`` for the RPC called (the gateway), or forwarded (the router)."""
    return rewriting_interceptors(_token_for(signer))


def create_channel(
    target: str,
    *,
    interceptors: Sequence[grpc.aio.ClientInterceptor] = (),
    max_message_bytes: int = 16 * 1024 * 1024,
    trust: Trust | None = None,
    peer: str | None = None,
) -> grpc.aio.Channel:
    """An internal channel: mutual TLS to the identity ``peer`` with ``trust`` secure,
    plaintext otherwise (development, in-process harnesses).

    The server must present ``peer``'s certificate whatever name ``target`` resolves
    by (a Kubernetes service name, an IP): what is checked is who answers, not where.
    ``interceptors`` usually comes from ``Telemetry.client_interceptors()``; the deadline
    interceptors follow them, so tracing sees the final timeout, and sit next to the real
    call, so cancelling the task that awaits a call (or the call object) cancels the RPC.
    When the chain is rewrites alone (no span exported), the channel applies them where
    each call is made instead (``RewritingChannel``): the same headers and timeout, without
    grpc.aio's interceptor task per call.
    """
    options = channel_options(max_message_bytes, replicas=names_replicas(target))
    chain = [*interceptors, *principal_interceptors(), *deadline_interceptors()]
    credentials = trust.channel_credentials() if trust is not None else None
    signer = trust.signer if trust is not None else None
    if credentials is not None:
        if not peer:
            raise ValueError("a mutual-TLS channel needs the identity of the peer it calls")
        chain = [*tenant_token_interceptors(signer), *chain]
        options = [*options, ("grpc.ssl_target_name_override", peer)]
    rewrite = rewrites_only(chain)
    made = (
        grpc.aio.insecure_channel
        if credentials is None
        else functools.partial(grpc.aio.secure_channel, credentials=credentials)
    )
    if rewrite is not None:
        return RewritingChannel(made(target, options=options), rewrite)
    return made(target, options=options, interceptors=fused(chain))


# Settle steps a call made without grpc.aio's interceptors does not need: nothing, and the
# cancellation that the awaiting task's own cancellation already gives a direct call.
_DIRECT_SETTLES: tuple[Callable[[Any], Any], ...] = (_as_is, _cancel_if_abandoned)


def rewrites_only(chain: Sequence[grpc.aio.ClientInterceptor]) -> Rewrite | None:
    """The one rewrite that ``chain`` applies to every call, in order, when the chain is
    nothing else (no span exported: the trace context, token, principal and deadline
    rewrites, one per call kind each); None when it holds another interceptor (the tracing
    instrumentation's) or a settle step of its own, so grpc.aio must run it."""
    rewrites: list[Rewrite] = []
    for interceptor in chain:
        if not isinstance(interceptor, _Kind) or interceptor._settle not in _DIRECT_SETTLES:
            return None
        if isinstance(interceptor, _UnaryUnary):
            rewrites.append(interceptor._rewrite)
    if len(rewrites) == 1:
        return rewrites[0]

    def rewrite(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        for step in rewrites:
            details = step(details)
        return details

    return rewrite
