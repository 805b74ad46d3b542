"""The container health probe script against a real gRPC health service."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.common import ensure_directory, load_credentials
from tests.unit.infra.conftest import INFRA

PROBE = INFRA / "docker" / "grpc_health_probe.py"


async def _probe(address: str, *extra: str) -> int:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(PROBE), "--addr", address, "--timeout", "2", *extra,
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


async def test_over_mutual_tls_the_probe_presents_the_services_own_certificate(
    tmp_path: Path,
) -> None:
    ensure_directory(tmp_path)
    own = load_credentials(tmp_path, "sql")
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    credentials = grpc.ssl_server_credentials(
        [(own.key, own.cert)], root_certificates=own.ca, require_client_auth=True
    )
    port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    try:
        address = f"127.0.0.1:{port}"
        await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        assert await _probe(address, "--tls-dir", str(tmp_path), "--identity", "sql") == 0
        # Without a certificate the handshake is refused: no answer at all.
        assert await _probe(address) == 2
    finally:
        await server.stop(grace=None)
