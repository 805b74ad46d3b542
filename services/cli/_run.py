"""``tandem run``: start each implemented service as its own process and watch them.

Every service is a separate ``python -m`` process with its own port, exactly as it is
deployed; this command only starts them, waits for SERVING on the standard health
service, prints where they listen, and forwards Ctrl-C / SIGTERM for a graceful drain.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


@dataclass(frozen=True)
class ServiceProcess:
    name: str
    module: str
    port_variable: str
    default_port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{os.environ.get(self.port_variable, self.default_port)}"


# In dependency order; services join this list as their issues land.
SERVICES = [
    ServiceProcess("embedding", "services.embedding", "EMBEDDING_PORT", 50054),
    ServiceProcess("retrieval", "services.retrieval", "RETRIEVAL_PORT", 50053),
    ServiceProcess("sql", "services.sql", "SQL_PORT", 50055),
    ServiceProcess("router", "services.router", "ROUTER_PORT", 50052),
    ServiceProcess("gateway", "gateway", "GATEWAY_PORT", 50051),
]


async def _wait_serving(address: str, wait_s: float) -> bool:
    deadline = asyncio.get_running_loop().time() + wait_s
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while asyncio.get_running_loop().time() < deadline:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return True
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.2)
    return False


def run(timeout: float) -> int:
    procs: list[tuple[ServiceProcess, subprocess.Popen[bytes]]] = []
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        for service in SERVICES:
            proc = subprocess.Popen([sys.executable, "-m", service.module])
            procs.append((service, proc))
            if not asyncio.run(_wait_serving(service.address, timeout)):
                print(f"{service.name} did not become SERVING within {timeout}s", file=sys.stderr)
                return 1
            print(f"{service.name:<10} SERVING on {service.address}", flush=True)
        print(
            "\nTandem is running. Try:\n"
            '  grpcurl -plaintext -d \'{"texts":["hello"],"input_type":"INPUT_TYPE_QUERY"}\''
            " 127.0.0.1:50054 tandem.v1.EmbeddingService/Embed\n"
            '  grpcurl -plaintext -d \'{"tenant_id":"demo",'
            '"question":"how many open opportunities are there?"}\''
            " 127.0.0.1:50055 tandem.v1.SqlService/AskQuestion\n"
            "Ctrl-C stops every service gracefully.",
            flush=True,
        )
        while not stopping:
            for service, proc in procs:
                if proc.poll() is not None:
                    print(f"{service.name} exited with {proc.returncode}", file=sys.stderr)
                    return 1
            asyncio.run(asyncio.sleep(0.5))
        return 0
    finally:
        for _, proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _, proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
