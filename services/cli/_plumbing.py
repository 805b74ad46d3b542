"""The CLI's plumbing, shared by every gateway command (``ask``, ``sql``, ``chat``, the
answer-memory commands): common flags, the gateway address and key, the stub, one-line
errors instead of tracebacks, and small renderers. Below the command modules, which
import it and never each other for it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc

DEFAULT_GATEWAY = "127.0.0.1:50051"


class CliError(Exception):
    """A failure to report in one line (exit code 1), not a traceback."""


def common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the response as JSON")
    parser.add_argument("--api-key", default=None, help="API key (default: $TANDEM_API_KEY)")
    parser.add_argument(
        "--gateway",
        default=None,
        help=f"gateway address (default: $TANDEM_GATEWAY or {DEFAULT_GATEWAY})",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="deadline in seconds")


def handled(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def handle(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except grpc.RpcError as exc:
            print(describe_rpc_error(exc, _address(args)), file=sys.stderr)
            return 1
        except CliError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("cancelled", file=sys.stderr)
            return 130

    return handle


def _address(args: argparse.Namespace) -> str:
    return str(
        getattr(args, "gateway", None) or os.environ.get("TANDEM_GATEWAY") or DEFAULT_GATEWAY
    )


def call_metadata(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    key = args.api_key or os.environ.get("TANDEM_API_KEY", "")
    if not key:
        raise CliError(
            "no API key: pass --api-key or set TANDEM_API_KEY "
            "(create one with `tandem keys create --tenant NAME`)"
        )
    return (("authorization", f"Bearer {key}"),)


def gateway_stub(args: argparse.Namespace) -> tuple[grpc.Channel, gpb_grpc.GatewayServiceStub]:
    channel = grpc.insecure_channel(_address(args))
    return channel, gpb_grpc.GatewayServiceStub(channel)


def describe_rpc_error(exc: Any, address: str) -> str:
    """One or a few lines: the status, each offending field, and when to retry.

    ``exc`` is a failed call (a ``grpc.RpcError`` that is also a ``grpc.Call``)."""
    code: grpc.StatusCode = exc.code()
    message: str = exc.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE and not _has_rich_status(exc):
        return f"error: UNAVAILABLE: cannot reach the gateway at {address} (is `make run` up?)"
    lines = [f"error: {code.name}: {message}"]
    status = rpc_status.from_call(exc)
    for detail in status.details if status else []:
        bad, retry, info = (
            error_details_pb2.BadRequest(),
            error_details_pb2.RetryInfo(),
            error_details_pb2.ErrorInfo(),
        )
        if detail.Unpack(bad):
            lines += [f"  field {v.field}: {v.description}" for v in bad.field_violations]
        elif detail.Unpack(retry):
            seconds = retry.retry_delay.ToTimedelta().total_seconds()
            lines.append(f"  retry after {seconds:.1f}s")
        elif detail.Unpack(info) and info.reason:
            lines.append(f"  reason {info.reason}")
    return "\n".join(lines)


def _has_rich_status(exc: Any) -> bool:
    trailers = exc.trailing_metadata() or ()
    return any(item[0] == "grpc-status-details-bin" for item in trailers)


def print_json(message: Message, out: TextIO) -> None:
    out.write(json_format.MessageToJson(message, indent=2) + "\n")


def as_ms(duration: Any) -> str:
    return f"{duration.ToTimedelta().total_seconds() * 1000:.0f} ms"


def timings_text(timings: Sequence[cpb.Timing]) -> str:
    return "Timings: " + " · ".join(f"{t.stage} {as_ms(t.duration)}" for t in timings)


def enum_name(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix)
