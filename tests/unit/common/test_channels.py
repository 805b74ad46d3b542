"""Cancellation through ``create_channel`` on real loopback servers, with the client
interceptors production installs (OpenTelemetry's, then the deadline one; or, with no span
exported, the rewrites alone, which the channel applies without grpc.aio's interceptors):
cancelling the task that awaits a call, or the call itself, cancels the handler on the
server.

OpenTelemetry's interceptor awaits a unary response's status inside the interceptor chain,
so without the channel's innermost cancellation interceptor the unary and client-stream
cases leave the handler running (the server-stream ones are regression guards)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from services.common import GrpcServer, Telemetry, TelemetrySettings, create_channel
from tests.conftest import server_settings

SERVICE = "tandem.test.BlockingService"


def _identity(data: bytes) -> bytes:
    return data


@dataclass
class Blocking:
    """Handlers that block until cancelled, noting when they started and how they ended."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    outcome: str = "running"

    async def block(self) -> None:
        self.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.outcome = "cancelled"
            raise
        finally:
            self.ended.set()
        self.outcome = "finished"

    def register(self, _servicer: object, server: grpc.aio.Server) -> None:
        async def unary(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            await self.block()
            return request

        async def stream(
            request: bytes, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[bytes]:
            if request == b"first":
                yield b"first"
            await self.block()
            yield request

        async def collect(
            requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
        ) -> bytes:
            received = [r async for r in requests]
            await self.block()
            return b"".join(received)

        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICE,
                    {
                        "Unary": grpc.unary_unary_rpc_method_handler(
                            unary, request_deserializer=_identity, response_serializer=_identity
                        ),
                        "Stream": grpc.unary_stream_rpc_method_handler(
                            stream, request_deserializer=_identity, response_serializer=_identity
                        ),
                        "Collect": grpc.stream_unary_rpc_method_handler(
                            collect, request_deserializer=_identity, response_serializer=_identity
                        ),
                    },
                ),
            )
        )


@dataclass
class Loopback:
    server: Blocking
    channel: grpc.aio.Channel

    def unary(self, request: bytes = b"x") -> Any:
        method = self.channel.unary_unary(
            f"/{SERVICE}/Unary", request_serializer=_identity, response_deserializer=_identity
        )
        return method(request, timeout=20)

    def stream(self, request: bytes = b"x") -> Any:
        method = self.channel.unary_stream(
            f"/{SERVICE}/Stream", request_serializer=_identity, response_deserializer=_identity
        )
        return method(request, timeout=20)

    def collect(self, *requests: bytes) -> Any:
        method = self.channel.stream_unary(
            f"/{SERVICE}/Collect", request_serializer=_identity, response_deserializer=_identity
        )
        return method(iter(requests), timeout=20)


@pytest.fixture(params=["exported", "not-exported"])
async def loopback(request, telemetry_sink, grpc_servers) -> AsyncIterator[Loopback]:
    blocking = Blocking()
    server = GrpcServer(server_settings("blocking"), telemetry_sink("server").telemetry)
    server.add_service(SERVICE, blocking.register, None)
    grpc_servers.append(server)
    port = await server.start()
    await server.set_serving(True)
    # As every service builds its channels: the telemetry interceptors, then ours. With
    # no span exported they are rewrites only, applied without grpc.aio's interceptors.
    client = (
        telemetry_sink("client").telemetry
        if request.param == "exported"
        else Telemetry(TelemetrySettings(service_name="client"))
    )
    channel = create_channel(f"127.0.0.1:{port}", interceptors=client.client_interceptors())
    async with channel:
        yield Loopback(blocking, channel)


async def _cancelled_downstream(loopback: Loopback, cancel: Callable[[], object]) -> bool:
    """Cancel once the handler has started (the client is then awaiting inside its
    interceptors: one event loop runs both ends); True when the handler, which would
    otherwise block for 30 s, was cancelled."""
    await asyncio.wait_for(loopback.server.started.wait(), timeout=5)
    cancel()
    await asyncio.wait_for(loopback.server.ended.wait(), timeout=5)
    return loopback.server.outcome == "cancelled"


async def test_cancelling_the_awaiting_task_cancels_a_unary_call(loopback: Loopback):
    async def ask() -> bytes:
        reply: bytes = await loopback.unary()
        return reply

    task = asyncio.create_task(ask())
    assert await _cancelled_downstream(loopback, task.cancel)
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_the_call_object_cancels_a_unary_call(loopback: Loopback):
    call = loopback.unary()
    waiter = asyncio.create_task(_await(call))
    assert await _cancelled_downstream(loopback, call.cancel)
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert call.cancelled()


async def test_cancelling_the_awaiting_task_cancels_a_client_stream(loopback: Loopback):
    async def send() -> bytes:
        reply: bytes = await loopback.collect(b"a", b"b")
        return reply

    task = asyncio.create_task(send())
    assert await _cancelled_downstream(loopback, task.cancel)
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("request_bytes", [b"x", b"first"], ids=["before-first", "mid-stream"])
async def test_cancelling_the_reading_task_cancels_a_stream(
    loopback: Loopback, request_bytes: bytes
):
    received: list[bytes] = []
    got_first = asyncio.Event()

    async def read_all() -> None:
        async for message in loopback.stream(request_bytes):
            received.append(message)
            got_first.set()

    task = asyncio.create_task(read_all())
    if request_bytes == b"first":  # the client holds the first message before it gives up
        await asyncio.wait_for(got_first.wait(), timeout=5)
    assert await _cancelled_downstream(loopback, task.cancel)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert received == ([b"first"] if request_bytes == b"first" else [])


async def test_a_call_that_is_not_cancelled_still_completes(
    loopback: Loopback, monkeypatch: pytest.MonkeyPatch
):
    async def instant() -> None:
        loopback.server.outcome = "finished"

    monkeypatch.setattr(loopback.server, "block", instant)
    assert await loopback.unary(b"ok") == b"ok"
    assert [m async for m in loopback.stream(b"first")] == [b"first", b"first"]
    assert await loopback.collect(b"a", b"b") == b"ab"
    assert loopback.server.outcome == "finished"


async def _await(call: Any) -> Any:
    return await call
