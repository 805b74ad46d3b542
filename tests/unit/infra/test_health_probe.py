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


async def _run(address: str, *extra: str) -> tuple[int, str]:
    """The probe's exit code and what it said on stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(PROBE), "--addr", address, "--timeout", "2", *extra,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await process.communicate()
    return process.returncode or 0, stderr.decode()


async def _probe(address: str, *extra: str) -> int:
    return (await _run(address, *extra))[0]


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
    code, said = await _run(f"127.0.0.1:{port}")
    assert code == 2 and "Connection refused" in said, said


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
        # Without a certificate the handshake is refused: no answer at all, because the
        # server hung up (not a port nobody listens on: that is "Connection refused").
        code, said = await _run(address)
        assert code == 2 and "UNAVAILABLE" in said and "Connection refused" not in said, said
    finally:
        await server.stop(grace=None)
