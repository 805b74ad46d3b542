"""A channel whose calls carry a rewrite of their details, without grpc.aio's interceptors.

When no span is exported, an internal channel's whole client chain is rewrites: the trace
context, the tenant token, the principal and read position, the deadline (each a header
or the timeout, see ``services.common._channels``). grpc.aio runs even one interceptor as
a second task per call with its own coroutine, call details and intercepted-call object
wrapped around the real one; for the gateway's call onward that machinery cost more of
its CPU per request than the rewrite itself. Here the rewrite is applied where the call
is made and the real call is returned: the same headers and timeout reach the wire, one
task fewer per call.

Cancellation needs nothing extra: the caller awaits the real call, so cancelling the
awaiting task (or the call object) cancels the RPC on the wire, which is what the
deadline interceptor's settle step ensures for a chain of interceptors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

Rewrite = Callable[[grpc.aio.ClientCallDetails], grpc.aio.ClientCallDetails]


class _Rewriting:
    """One method's multi-callable: each call's details rewritten, then the real call."""

    __slots__ = ("_inner", "_method", "_rewrite")

    def __init__(self, inner: Any, method: str | bytes, rewrite: Rewrite) -> None:
        self._inner = inner
        # as grpc.aio hands interceptors the method: bytes
        self._method = method.encode() if isinstance(method, str) else method
        self._rewrite = rewrite

    def __call__(
        self,
        *request: Any,
        timeout: float | None = None,
        metadata: Any = None,
        credentials: grpc.CallCredentials | None = None,
        wait_for_ready: bool | None = None,
        compression: grpc.Compression | None = None,
        **named: Any,
    ) -> Any:
        # ``request`` / ``request_iterator`` pass through as given (positional or named)
        details = self._rewrite(
            grpc.aio.ClientCallDetails(
                method=self._method,  # type: ignore[arg-type]  # bytes, as grpc.aio gives
                timeout=timeout,
                metadata=metadata,
                credentials=credentials,
                wait_for_ready=wait_for_ready,
            )
        )
        return self._inner(
            *request,
            timeout=details.timeout,
            metadata=details.metadata,
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
            compression=compression,
            **named,
        )


class RewritingChannel(grpc.aio.Channel):
    """``channel`` (made without interceptors) with ``rewrite`` applied to every call."""

    def __init__(self, channel: grpc.aio.Channel, rewrite: Rewrite) -> None:
        self._channel = channel
        self._rewrite = rewrite

    async def __aenter__(self) -> RewritingChannel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._channel.close(None)

    async def close(self, grace: float | None = None) -> None:
        await self._channel.close(grace)

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._channel.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._channel.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._channel.channel_ready()

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Rewriting(self._channel.unary_unary(method, *args, **kwargs), method, self._rewrite)

    def unary_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Rewriting(
            self._channel.unary_stream(method, *args, **kwargs), method, self._rewrite
        )

    def stream_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Rewriting(
            self._channel.stream_unary(method, *args, **kwargs), method, self._rewrite
        )

    def stream_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Rewriting(
            self._channel.stream_stream(method, *args, **kwargs), method, self._rewrite
        )
