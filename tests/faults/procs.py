"""One service as its own OS process for tests that signal it (drain, crash, RSS): start
``python -m <module>`` on a free loopback port, wait for health SERVING, stop at the end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common import Credentials

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _channel(address: str, tls: Credentials | None, peer: str) -> grpc.aio.Channel:
    if tls is None:
        return grpc.aio.insecure_channel(address)
    credentials = grpc.ssl_channel_credentials(tls.ca, tls.key, tls.cert)
    return grpc.aio.secure_channel(
        address, credentials, options=[("grpc.ssl_target_name_override", peer)]
    )


async def health(
    address: str,
    timeout_s: float = 1.0,
    service: str = "",
    *,
    tls: Credentials | None = None,
    peer: str = "localhost",
) -> str:
    """The server's health status name for ``service`` (``""``: the process as a whole),
    or the gRPC code name if the check failed; over mutual TLS as ``tls`` to ``peer``."""
    async with _channel(address, tls, peer) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s
            )
        except grpc.aio.AioRpcError as exc:
            return exc.code().name
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


async def wait_serving(address: str, timeout_s: float, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{address}: process exited with {process.returncode}")
        if await health(address, timeout_s=1.0) == "SERVING":
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{address} not SERVING within {timeout_s} s")


@dataclass
class ServiceProcess:
    """A running ``python -m module`` and where it listens."""

    module: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.process.pid, sig)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_exit(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.module} still running after {timeout_s} s")
            await asyncio.sleep(0.02)
        return self.process.returncode

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
        self.process.wait(timeout=10)


def _spawn(module: str, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def start_service(
    module: str,
    port_variable: str,
    log_dir: Path,
    env: Mapping[str, str],
    *,
    ready_timeout_s: float = 120.0,
) -> ServiceProcess:
    """Start ``python -m module`` with ``env`` on a free port; returns once SERVING."""
    port = free_port()
    # One process on its own, for lifecycle tests (drain, crash, memory): plaintext by the
    # development switch (the mutual-TLS path is the process stack's and its tests').
    full_env = {
        **os.environ,
        "TANDEM_INSECURE_INTERNAL": "true",
        **env,
        port_variable: str(port),
        "PYTHONUNBUFFERED": "1",
    }
    log_path = log_dir / f"{module.rsplit('.', 1)[-1]}-{port}.log"
    process = await asyncio.to_thread(_spawn, module, full_env, log_path)
    service = ServiceProcess(module, port, process, log_path, dict(env))
    try:
        await wait_serving(service.address, ready_timeout_s, process)
    except BaseException:
        service.stop()
        raise
    return service
