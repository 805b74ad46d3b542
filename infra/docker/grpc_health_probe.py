"""A grpc_health_probe equivalent in Python for container health checks.

Calls ``grpc.health.v1.Health/Check`` and exits 0 when the answer is SERVING, 1 when the
server answers anything else (NOT_SERVING while loading or draining), and 2 when there is
no answer at all (refused, timed out). Installed in every image as
``/usr/local/bin/grpc-health-probe``. The internal services take mutual-TLS callers only,
so a probe of one presents that service's own certificate (``--tls-dir`` and
``--identity``; Kubernetes' native gRPC probe cannot, hence an exec probe there too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVING = 0
NOT_SERVING = 1
UNREACHABLE = 2


def _channel(address: str, tls_dir: str | None, identity: str | None) -> grpc.Channel:
    if not tls_dir:
        return grpc.insecure_channel(address)
    if not identity:
        raise SystemExit("grpc-health-probe: --tls-dir needs --identity (whose certificate)")
    folder = Path(tls_dir)
    credentials = grpc.ssl_channel_credentials(
        (folder / "ca.pem").read_bytes(),
        (folder / f"{identity}.key").read_bytes(),
        (folder / f"{identity}.pem").read_bytes(),
    )
    # The service probes itself: the server's certificate is the same identity's.
    return grpc.secure_channel(
        address, credentials, options=[("grpc.ssl_target_name_override", identity)]
    )


def probe(
    address: str,
    service: str = "",
    timeout_s: float = 3.0,
    *,
    tls_dir: str | None = None,
    identity: str | None = None,
) -> int:
    """The exit code for one health check of ``service`` ("" is the whole server)."""
    with _channel(address, tls_dir, identity) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s
            )
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            # The details tell a refused handshake ("Socket closed") from a port nobody
            # listens on ("Connection refused").
            details = exc.details() if isinstance(exc, grpc.Call) else None
            print(f"health check of {address} failed: {code}: {details}", file=sys.stderr)
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
    parser.add_argument("--tls-dir", help="mutual TLS: the folder with ca.pem and the identity's")
    parser.add_argument("--identity", help="mutual TLS: whose certificate to present")
    args = parser.parse_args(argv)
    return probe(
        args.addr, args.service, args.timeout, tls_dir=args.tls_dir, identity=args.identity
    )


if __name__ == "__main__":
    sys.exit(main())
