"""A probe server process for the drain test: one slow RPC, `serve()` handling SIGTERM.

Prints its port, then ``serving`` as each call starts; a call then waits until the server
starts draining and works for the seconds it asked for, so it is in flight during the drain
whenever the test's signal arrives."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import grpc

from services.common import GrpcServer, Telemetry, TelemetrySettings, serve
from tests.conftest import server_settings

SERVICE = "tandem.test.DrainService"


class _Probe(GrpcServer):
    """Notes when ``serve()`` begins to stop it (before the drain refuses new calls)."""

    draining = asyncio.Event()

    async def stop(self, grace_s: float | None = None) -> None:
        self.draining.set()
        await super().stop(grace_s)


async def _slow(request: bytes, context: Any) -> bytes:
    print("serving", flush=True)
    await _Probe.draining.wait()
    await asyncio.sleep(float(request.decode()))
    return b"done"


async def main() -> None:
    server = _Probe(
        server_settings("drain", grace_period_s=5.0), Telemetry(TelemetrySettings("drain"))
    )
    generic = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Slow": grpc.unary_unary_rpc_method_handler(
                _slow, request_deserializer=bytes, response_serializer=bytes
            )
        },
    )
    server.add_service(SERVICE, lambda _s, srv: srv.add_generic_rpc_handlers((generic,)), None)

    async def announce() -> None:
        print(server.port, flush=True)

    await serve(server, on_start=announce)
    print("exited", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
