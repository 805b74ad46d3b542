"""The container health probe script against a real gRPC health service."""

from __future__ import annotations

import asyncio
import sys

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from tests.unit.infra.conftest import INFRA

PROBE = INFRA / "docker" / "grpc_health_probe.py"


async def _probe(address: str) -> int:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(PROBE), "--addr", address, "--timeout", "2",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    return await process.wait()


async def test_exit_codes_follow_the_serving_status() -> None:
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        address = f"127.0.0.1:{port}"
        await servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        assert await _probe(address) == 1
        await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        assert await _probe(address) == 0
    finally:
        await server.stop(grace=None)
    assert await _probe(f"127.0.0.1:{port}") == 2
