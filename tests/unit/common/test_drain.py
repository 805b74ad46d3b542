"""SIGTERM drains: in-flight calls finish, new calls are refused, the process exits."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

import grpc
import pytest

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
            in_flight = [
                asyncio.ensure_future(_method(channel)(b"1.0", timeout=10)) for _ in range(20)
            ]
            await asyncio.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.2)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await _method(channel)(b"0", timeout=2)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert await asyncio.gather(*in_flight) == [b"done"] * 20
        started = time.monotonic()
        assert await asyncio.wait_for(proc.wait(), 10) == 0
        assert time.monotonic() - started < 6
        assert (await proc.stdout.read()).decode().strip() == "exited"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
