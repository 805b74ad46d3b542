"""A new internal channel (``create_channel``) to an address where a server now listens
reaches it at once, even while another channel of the process is still open to the
server that listened there before and is backing off from its failed reconnects.

gRPC shares connections between channels to the same address and arguments by default;
a fresh channel then inherits the other's backoff, and its first calls fail UNAVAILABLE
within a fraction of a second, its retries included. That is how a retrieval service's
first ingest saw its document FAILED (embedding service unavailable) after 0.17 s when a
new embedding server took the port of one an older, still-open channel had called
(``tests/integration/retrieval/test_read_replicas.py``, once in CI)."""

from __future__ import annotations

import asyncio
import time

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.common import create_channel


async def _serve(port: int) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, bound


async def _check(channel: grpc.aio.Channel) -> grpc.StatusCode:
    try:
        await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


class _Refuser:
    """A TCP listener that closes every connection at once: a reconnect attempt fails,
    and the test sees when it was made."""

    def __init__(self) -> None:
        self.attempt = asyncio.Event()

    async def _refuse(self, _reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()
        self.attempt.set()

    async def listen(self, port: int) -> asyncio.Server:
        return await asyncio.start_server(self._refuse, "127.0.0.1", port, reuse_address=True)


async def test_a_new_channel_does_not_inherit_another_channels_backoff() -> None:
    first, port = await _serve(0)
    address = f"127.0.0.1:{port}"
    old = create_channel(address)
    assert await _check(old) == grpc.StatusCode.OK
    await first.stop(0)
    refuser = _Refuser()
    listener = await refuser.listen(port)
    # The old channel stays open and keeps failing: its reconnect backoff grows.
    until = time.monotonic() + 2.0
    while time.monotonic() < until:
        assert await _check(old) == grpc.StatusCode.UNAVAILABLE
        await asyncio.sleep(0.01)
    # The new server starts just as the old channel's last reconnect failed: its next
    # is a backoff (most of a second by now) away.
    refuser.attempt.clear()
    await asyncio.wait_for(refuser.attempt.wait(), timeout=5)
    listener.close()
    await listener.wait_closed()
    second, _ = await _serve(port)
    new = create_channel(address)
    try:
        assert await _check(new) == grpc.StatusCode.OK
    finally:
        await new.close()
        await old.close()
        await second.stop(0)
