"""A probe server process for the drain test: one slow RPC, `serve()` handling SIGTERM."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import grpc

from services.common import GrpcServer, Telemetry, TelemetrySettings, serve
from tests.conftest import server_settings

SERVICE = "tandem.test.DrainService"


async def _slow(request: bytes, context: Any) -> bytes:
    await asyncio.sleep(float(request.decode()))
    return b"done"


async def main() -> None:
    server = GrpcServer(
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
