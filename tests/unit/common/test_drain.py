"""SIGTERM drains: in-flight calls finish, new calls are refused, the process exits."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[3]


def _method(channel: grpc.aio.Channel) -> grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]:
    return channel.unary_unary(
        "/tandem.test.DrainService/Slow", request_serializer=bytes, response_deserializer=bytes
    )


async def test_sigterm_lets_in_flight_calls_finish_and_refuses_new_ones():
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.unit.common.drain_server",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        port = int((await asyncio.wait_for(proc.stdout.readline(), 30)).decode())
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service=""), timeout=20
            )
            assert (await health.read()).status == health_pb2.HealthCheckResponse.SERVING
            in_flight = [
                asyncio.ensure_future(_method(channel)(b"0.2", timeout=10)) for _ in range(20)
            ]
            for _ in range(20):  # every call has started being served
                assert await asyncio.wait_for(proc.stdout.readline(), 10) == b"serving\n"
            proc.send_signal(signal.SIGTERM)
            # NOT_SERVING is written after the server has begun to stop.
            assert (await health.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
            health.cancel()
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await _method(channel)(b"0", timeout=2)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            # The calls in flight went on into the drain and finished.
            assert await asyncio.gather(*in_flight) == [b"done"] * 20
        assert await asyncio.wait_for(proc.wait(), 10) == 0
        assert (await proc.stdout.read()).decode().strip() == "exited"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
