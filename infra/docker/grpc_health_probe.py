"""A grpc_health_probe equivalent in Python for container health checks.

Calls ``grpc.health.v1.Health/Check`` and exits 0 when the answer is SERVING, 1 when the
server answers anything else (NOT_SERVING while loading or draining), and 2 when there is
no answer at all (refused, timed out). Installed in every image as
``/usr/local/bin/grpc-health-probe``; Kubernetes uses its native gRPC probe instead.
"""

from __future__ import annotations

import argparse
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVING = 0
NOT_SERVING = 1
UNREACHABLE = 2


def probe(address: str, service: str = "", timeout_s: float = 3.0) -> int:
    """The exit code for one health check of ``service`` ("" is the whole server)."""
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s
            )
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            print(f"health check of {address} failed: {code}", file=sys.stderr)
            return UNREACHABLE
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        name = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        print(f"{address} is {name}", file=sys.stderr)
        return NOT_SERVING
    return SERVING


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grpc-health-probe", description=__doc__)
    parser.add_argument("--addr", required=True, help="host:port of the gRPC server")
    parser.add_argument("--service", default="", help="service name; empty: the server")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait")
    args = parser.parse_args(argv)
    return probe(args.addr, args.service, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
