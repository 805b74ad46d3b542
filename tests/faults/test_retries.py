"""Retries of the real internal channel (``create_channel``) against scripted grpc.aio
servers, alone and behind the real gateway: UNAVAILABLE is retried, nothing else is, and
a stream that has sent a message is never replayed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from services.common import create_channel
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import router_service_pb2_grpc as qpb_grpc
from tests.conftest import TelemetrySink
from tests.integration.gateway.stack import bearer, start_gateway
from tests.integration.retrieval.stack import new_tenant

SERVICE = "tandem.test.Scripted"
Script = Callable[[int, grpc.aio.ServicerContext[Any, Any]], Any]


@dataclass
class Scripted:
    """A server whose unary and streaming handlers follow a script per attempt."""

    unary: Script | None = None
    stream: Callable[[int, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[bytes]] | None = None
    attempts: list[str] = field(default_factory=list)

    def handlers(self) -> grpc.GenericRpcHandler:
        async def unary(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            self.attempts.append("unary")
            assert self.unary is not None
            result: bytes = await self.unary(len(self.attempts), context)
            return result

        async def stream(
            request: bytes, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[bytes]:
            self.attempts.append("stream")
            assert self.stream is not None
            async for item in self.stream(len(self.attempts), context):
                yield item

        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Unary": grpc.unary_unary_rpc_method_handler(unary),
                "Stream": grpc.unary_stream_rpc_method_handler(stream),
            },
        )


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[Scripted, grpc.aio.Channel]]:
    script = Scripted()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((script.handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = create_channel(f"127.0.0.1:{port}")
    yield script, channel
    await channel.close()
    await server.stop(0)


def _unary(channel: grpc.aio.Channel) -> Any:
    return channel.unary_unary(f"/{SERVICE}/Unary")


def _stream(channel: grpc.aio.Channel) -> Any:
    return channel.unary_stream(f"/{SERVICE}/Stream")


async def test_unavailable_twice_then_success_is_one_success_in_three_attempts(scripted):
    script, channel = scripted

    async def flaky(attempt: int, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        if attempt <= 2:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        return b"ok"

    script.unary = flaky
    reply = await _unary(channel)(b"q", timeout=5)
    assert reply == b"ok"
    assert script.attempts == ["unary"] * 3


async def test_unavailable_three_times_gives_up_after_three_attempts(scripted):
    script, channel = scripted

    async def down(attempt: int, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        await context.abort(grpc.StatusCode.UNAVAILABLE, "down")
        return b""

    script.unary = down
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _unary(channel)(b"q", timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert len(script.attempts) == 3


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    ],
    ids=lambda code: code.name,
)
async def test_other_errors_get_exactly_one_attempt(scripted, code):
    script, channel = scripted

    async def refuse(attempt: int, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        await context.abort(code, "no")
        return b""

    script.unary = refuse
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _unary(channel)(b"q", timeout=5)
    assert err.value.code() == code
    assert script.attempts == ["unary"]


async def test_a_stream_that_sent_its_first_message_is_never_replayed(scripted):
    script, channel = scripted

    async def answer(
        attempt: int, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        yield b"The answer is "
        yield b"forty-two"
        await context.abort(grpc.StatusCode.UNAVAILABLE, "router went away")

    script.stream = answer
    received: list[bytes] = []
    call = _stream(channel)(b"q", timeout=5)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for item in call:
            received.append(item)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert b"".join(received) == b"The answer is forty-two"
    assert script.attempts == ["stream"]


async def test_a_stream_that_failed_before_its_first_message_is_retried(scripted):
    script, channel = scripted

    async def late(
        attempt: int, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        if attempt == 1:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "not yet")
        yield b"once"

    script.stream = late
    received = [item async for item in _stream(channel)(b"q", timeout=5)]
    assert received == [b"once"]
    assert script.attempts == ["stream", "stream"]


async def test_retries_stay_within_the_callers_deadline(scripted):
    script, channel = scripted

    async def slow_down(attempt: int, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        await asyncio.sleep(0.2)
        await context.abort(grpc.StatusCode.UNAVAILABLE, "down")
        return b""

    script.unary = slow_down
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _unary(channel)(b"q", timeout=0.3)
    elapsed = loop.time() - started
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert elapsed < 0.3 + 0.1
    assert len(script.attempts) <= 2


# -- the same through the real gateway, in front of a scripted router -----------------


class ScriptedRouter(qpb_grpc.RouterServiceServicer):
    """A router whose Ask and StreamAsk follow a script per attempt."""

    def __init__(self) -> None:
        self.ask_codes: list[grpc.StatusCode | None] = []
        self.asks = 0
        self.streams = 0

    async def Ask(self, request: qpb.AskRequest, context: Any) -> qpb.AskResponse:
        self.asks += 1
        code = self.ask_codes[self.asks - 1] if self.asks <= len(self.ask_codes) else None
        if code is not None:
            await context.abort(code, "scripted")
        return qpb.AskResponse(answer=qpb.Answer(text="The answer is forty-two."))

    async def StreamAsk(
        self, request: qpb.StreamAskRequest, context: Any
    ) -> AsyncIterator[qpb.StreamAskResponse]:
        self.streams += 1
        yield qpb.StreamAskResponse(accepted=qpb.AskAccepted(request_id="r1"))
        for piece in ("The answer ", "is forty-two."):
            yield qpb.StreamAskResponse(answer_delta=qpb.AnswerDelta(text=piece))
        await context.abort(grpc.StatusCode.UNAVAILABLE, "router went away mid-answer")


@pytest.fixture
async def scripted_gateway(pg_url: str) -> AsyncIterator[tuple[ScriptedRouter, Any, str]]:
    router = ScriptedRouter()
    server = grpc.aio.server()
    qpb_grpc.add_RouterServiceServicer_to_server(router, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    sink = TelemetrySink("gateway")
    gateway = await start_gateway(
        pg_url,
        sink.telemetry,
        router_addr=f"127.0.0.1:{port}",
        retrieval_addr="127.0.0.1:9",
        sql_addr="127.0.0.1:9",
    )
    key = await gateway.key(new_tenant(pg_url, "retry"))
    yield router, gateway.stub, key
    await gateway.close()
    await server.stop(0)
    sink.telemetry.shutdown()


@pytest.mark.integration
async def test_the_gateway_gets_one_answer_from_three_router_attempts(scripted_gateway):
    router, stub, key = scripted_gateway
    router.ask_codes = [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE]
    reply = await stub.Ask(
        gpb.GatewayServiceAskRequest(question="q"), metadata=bearer(key), timeout=10
    )
    assert reply.answer.text == "The answer is forty-two."
    assert not reply.answer.degraded
    assert router.asks == 3


@pytest.mark.integration
async def test_the_gateway_never_retries_an_invalid_argument(scripted_gateway):
    router, stub, key = scripted_gateway
    router.ask_codes = [grpc.StatusCode.INVALID_ARGUMENT]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Ask(gpb.GatewayServiceAskRequest(question="q"), metadata=bearer(key), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert router.asks == 1


@pytest.mark.integration
async def test_a_streamed_answer_is_never_replayed_through_the_gateway(scripted_gateway):
    router, stub, key = scripted_gateway
    deltas: list[str] = []
    call = stub.StreamAsk(
        gpb.GatewayServiceStreamAskRequest(question="q"), metadata=bearer(key), timeout=10
    )
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for event in call:
            if event.HasField("answer_delta"):
                deltas.append(event.answer_delta.text)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "".join(deltas) == "The answer is forty-two."
    assert router.streams == 1
