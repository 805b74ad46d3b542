"""Long calls against a server's maximum connection age, on real gRPC servers (issue 46
item 7: one IngestDocuments call ended after 37 s with UNAVAILABLE on a connection that
reached its 300 s age with 30 s of grace, far less than ingest's 300 s deadline).

The ages and deadlines are scaled down from minutes to seconds; the relation under test
is the production one: the grace a connection gives its calls past its maximum age covers
the longest deadline a call can carry, and the public door cuts a caller's deadline to it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import pytest

from services.common import GrpcServer, Telemetry, TelemetrySettings, remaining
from tests.conftest import server_settings

SERVICE = "tandem.test.LongService"
TICK = f"/{SERVICE}/Tick"


async def _tick(request: bytes, context: Any) -> AsyncIterator[bytes]:
    """One event a tenth of a second for the seconds asked, then the deadline it saw."""
    ends = time.monotonic() + float(request.decode())
    while time.monotonic() < ends:
        await asyncio.sleep(0.1)
        yield b"tick"
    yield f"left {remaining():.3f}".encode()


@asynccontextmanager
async def _serving(**settings: Any) -> AsyncIterator[grpc.aio.Channel]:
    server = GrpcServer(server_settings("long", **settings), Telemetry(TelemetrySettings("long")))
    generic = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Tick": grpc.unary_stream_rpc_method_handler(
                _tick, request_deserializer=bytes, response_serializer=bytes
            )
        },
    )
    server.add_service(SERVICE, lambda _s, srv: srv.add_generic_rpc_handlers((generic,)), None)
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel
    finally:
        await server.stop(0)


async def _run(channel: grpc.aio.Channel, seconds: float, deadline_s: float) -> list[bytes]:
    call = channel.unary_stream(TICK, request_serializer=bytes, response_deserializer=bytes)
    return [event async for event in call(str(seconds).encode(), timeout=deadline_s)]


async def test_a_long_call_runs_on_past_its_connections_maximum_age() -> None:
    """Age 0.5 s, longest deadline 3 s: a 2.5 s stream started on a connection about to
    reach its age finishes whole, and the next call goes out on a fresh connection."""
    async with _serving(max_connection_age_s=0.5, longest_deadline_s=3.0) as channel:
        await _run(channel, 0.0, 5.0)  # the connection is open (and ageing)
        await asyncio.sleep(0.3)
        events = await _run(channel, 2.5, 3.0)
        assert len(events) >= 20 and events[-1].startswith(b"left")
        assert await _run(channel, 0.0, 5.0)


async def test_a_call_longer_than_the_grace_is_cut_midway_as_the_issue_saw() -> None:
    """What cut the 37 s ingest: a call that asks for longer than the server's longest
    deadline (here directly on an internal server, which honours what it is asked) is
    cut when its connection's grace runs out, with UNAVAILABLE."""
    async with _serving(max_connection_age_s=0.5, longest_deadline_s=1.0) as channel:
        await _run(channel, 0.0, 5.0)
        started = time.monotonic()
        with pytest.raises(grpc.aio.AioRpcError) as cut:
            await _run(channel, 8.0, 10.0)
        assert cut.value.code() == grpc.StatusCode.UNAVAILABLE, cut.value
        assert "max connection age" in (cut.value.details() or "")
        assert time.monotonic() - started < 6.0


async def test_the_public_door_cuts_a_callers_deadline_to_the_longest() -> None:
    """The gateway's cap (``max_deadline_s``): asking for 60 s gets the longest deadline,
    so the call and every internal call it makes end before any connection's grace."""
    async with _serving(max_deadline_s=1.0, longest_deadline_s=1.0) as channel:
        events = await _run(channel, 0.0, 60.0)
        assert float(events[-1].split()[1]) <= 1.0
        started = time.monotonic()
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await _run(channel, 5.0, 60.0)
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 3.0
