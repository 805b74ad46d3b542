"""A channel whose client chain is rewrites alone (no span exported) applies them where each
call is made: a real loopback server receives the same headers and deadline as through
grpc.aio's interceptors, and a unary call runs as one task instead of two."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from services.common import (
    GrpcServer,
    Principal,
    Telemetry,
    TelemetrySettings,
    create_channel,
    current_principal,
    deadline_scope,
    read_after,
)
from services.common._channels import deadline_interceptors, fused, principal_interceptors
from services.common._propagation import enter_remote_context, leave_remote_context
from tests.conftest import server_settings

SERVICE = "tandem.test.EchoService"
_CALLER = (("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),)
METHOD = f"/{SERVICE}/Echo"


def _identity(data: bytes) -> bytes:
    return data


class Echo:
    """Answers with what the call arrived with: its headers and deadline."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], float | None]] = []

    def register(self, _servicer: object, server: grpc.aio.Server) -> None:
        async def echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            headers = {k: v for k, v in context.invocation_metadata() or () if k.startswith("x-")}
            headers.update(
                (k, v) for k, v in context.invocation_metadata() or () if k == "traceparent"
            )
            self.seen.append((headers, context.time_remaining()))
            return request

        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICE,
                    {
                        "Echo": grpc.unary_unary_rpc_method_handler(
                            echo, request_deserializer=_identity, response_serializer=_identity
                        )
                    },
                ),
            )
        )


@pytest.fixture
async def echo(grpc_servers) -> AsyncIterator[tuple[Echo, int]]:
    handler = Echo()
    server = GrpcServer(server_settings("echo"), _not_exporting())
    server.add_service(SERVICE, handler.register, None)
    grpc_servers.append(server)
    port = await server.start()
    await server.set_serving(True)
    yield handler, port


def _not_exporting() -> Telemetry:
    return Telemetry(TelemetrySettings(service_name="client"))


# The deadline each call is made under, and how far above it the server may read it.
_SENT_S = 7.0
_ROUNDING_S = 0.25


async def _call(channel: grpc.aio.Channel, request: bytes) -> bytes:
    method = channel.unary_unary(
        METHOD, request_serializer=_identity, response_deserializer=_identity
    )
    principal = current_principal.set(Principal.of("u-1", ["g"], {"region": "EMEA"}))
    position = read_after.set(42)
    hop = enter_remote_context(_CALLER)  # the trace the request being served belongs to
    try:
        with deadline_scope(_SENT_S):
            reply: bytes = await method(request, metadata=(("x-own", "kept"),))
            return reply
    finally:
        leave_remote_context(hop)
        current_principal.reset(principal)
        read_after.reset(position)


async def test_the_same_headers_and_deadline_reach_the_server_as_through_interceptors(echo):
    handler, port = echo
    target = f"127.0.0.1:{port}"
    chain = [*_not_exporting().client_interceptors(), *principal_interceptors()]
    chain += deadline_interceptors()
    async with grpc.aio.insecure_channel(target, interceptors=fused(chain)) as intercepted:
        assert await _call(intercepted, b"a") == b"a"
    async with create_channel(target, interceptors=_not_exporting().client_interceptors()) as ch:
        assert await _call(ch, b"b") == b"b"
    (through_interceptors, left_before), (direct, left_now) = handler.seen
    assert direct.keys() == through_interceptors.keys()
    assert {"x-own", "x-tandem-lsn", "traceparent"} <= direct.keys()
    assert any(k.startswith("x-tandem-principal") for k in direct)
    for key, value in direct.items():
        if key == "traceparent":  # the caller's trace, a span id of this hop's own
            assert value.split("-")[1] == through_interceptors[key].split("-")[1]
        else:
            assert through_interceptors[key] == value
    assert left_before is not None and left_now is not None
    # the server reads the 7 s deadline off the grpc-timeout header, which gRPC core
    # encodes rounding up, against its own cached clock: a few milliseconds over 7 s is
    # the same deadline (CI saw 7.0087); a default or lost deadline would be far off
    assert 5.0 < left_now <= _SENT_S + _ROUNDING_S and 5.0 < left_before <= _SENT_S + _ROUNDING_S
    assert abs(left_now - left_before) < 1.0


@pytest.fixture
async def counted_tasks() -> AsyncIterator[list[object]]:
    """Every task the running loop creates while the test runs (both ends share it)."""
    loop = asyncio.get_running_loop()
    made: list[object] = []
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)
    yield made
    loop.set_task_factory(previous)


async def _tasks_per_call(channel: grpc.aio.Channel, made: list[object]) -> int:
    await _call(channel, b"warm")
    made.clear()
    assert await _call(channel, b"x") == b"x"
    return len(made)


async def test_a_unary_call_without_exported_spans_is_one_task_fewer(echo, counted_tasks):
    """grpc.aio runs a call with interceptors as a task for the chain besides the call's
    own: with rewrites alone the channel makes only the call's (the server's tasks, on the
    same loop, are the same either way)."""
    _, port = echo
    target = f"127.0.0.1:{port}"
    chain = [*_not_exporting().client_interceptors(), *principal_interceptors()]
    chain += deadline_interceptors()
    async with grpc.aio.insecure_channel(target, interceptors=fused(chain)) as intercepted:
        through_interceptors = await _tasks_per_call(intercepted, counted_tasks)
    async with create_channel(target, interceptors=_not_exporting().client_interceptors()) as ch:
        direct = await _tasks_per_call(ch, counted_tasks)
    assert direct == through_interceptors - 1
