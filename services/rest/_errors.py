"""Errors as gRPC transcoding gives them: the HTTP status its table assigns to the gRPC
code, and the body a ``google.rpc.Status`` in proto3 JSON, with the details the gateway
sent in its ``grpc-status-details-bin`` trailer (ErrorInfo reason / domain / metadata,
RetryInfo, BadRequest, IngestCheckpoint), so an HTTP caller reads the same reasons a gRPC
caller does. Refusals of the face itself (bad JSON, no route) use the gateway's shapes
(INVALID_ARGUMENT with a BadRequest naming the field)."""

from __future__ import annotations

import json
import math

import grpc
from google.protobuf import json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from services.common import NotFound, TandemError, Unavailable, status_for

# google/api/http.proto's and grpc-gateway's table (gRPC code -> HTTP status).
HTTP_STATUS: dict[int, int] = {
    code_pb2.OK: 200,
    code_pb2.CANCELLED: 499,
    code_pb2.UNKNOWN: 500,
    code_pb2.INVALID_ARGUMENT: 400,
    code_pb2.DEADLINE_EXCEEDED: 504,
    code_pb2.NOT_FOUND: 404,
    code_pb2.ALREADY_EXISTS: 409,
    code_pb2.PERMISSION_DENIED: 403,
    code_pb2.UNAUTHENTICATED: 401,
    code_pb2.RESOURCE_EXHAUSTED: 429,
    code_pb2.FAILED_PRECONDITION: 400,
    code_pb2.ABORTED: 409,
    code_pb2.OUT_OF_RANGE: 400,
    code_pb2.UNIMPLEMENTED: 501,
    code_pb2.INTERNAL: 500,
    code_pb2.UNAVAILABLE: 503,
    code_pb2.DATA_LOSS: 500,
}
GATEWAY_UNAVAILABLE = "gateway unavailable"


def http_status(code: int) -> int:
    return HTTP_STATUS.get(code, 500)


def status_of_call(exc: grpc.aio.AioRpcError) -> status_pb2.Status:
    """The call's rich status (the gateway's trailer); a bare one when none came. The
    gateway itself out of reach (UNAVAILABLE without details) is the edge's reply for a
    dead gateway: DEPENDENCY_UNAVAILABLE, retry after a second."""
    try:
        status = rpc_status.from_call(exc)
    except ValueError:  # a details trailer that contradicts the code: keep the code
        status = None
    if status is not None:
        return status
    code = exc.code().value[0]
    if code == code_pb2.UNAVAILABLE:
        return status_for(Unavailable(GATEWAY_UNAVAILABLE, retry_after_s=1.0))
    return status_pb2.Status(code=code, message=exc.details() or "")


def status_json(status: status_pb2.Status) -> bytes:
    """``google.rpc.Status`` as proto3 JSON. A detail of a type this process does not
    know is left out rather than failing the whole reply."""
    details = []
    for detail in status.details:
        try:
            details.append(json_format.MessageToDict(detail))
        except (TypeError, json_format.Error):
            continue
    body = {"code": status.code, "message": status.message, "details": details}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def retry_after(status: status_pb2.Status) -> str | None:
    """A ``Retry-After`` header value (whole seconds, at least 1) from RetryInfo."""
    info = error_details_pb2.RetryInfo()
    for detail in status.details:
        if detail.Is(info.DESCRIPTOR) and detail.Unpack(info):
            seconds = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
            return str(max(1, math.ceil(seconds)))
    return None


def local_status(exc: TandemError) -> status_pb2.Status:
    """A refusal of the face itself, in the gateway's shape."""
    return status_for(exc)


class MethodNotAllowed(TandemError):
    """The path names an RPC, with another HTTP method (HTTP 405)."""

    code = grpc.StatusCode.UNIMPLEMENTED
    reason = "METHOD_NOT_ALLOWED"


def no_route(path: str) -> status_pb2.Status:
    """No RPC is bound to the path (HTTP 404). The path is the caller's own, so it is
    not repeated (it may hold an identifier they would not want logged anywhere)."""
    return status_for(NotFound("no such HTTP route", reason="ROUTE_NOT_FOUND"))


def method_not_allowed(verb: str) -> status_pb2.Status:
    return status_for(MethodNotAllowed(f"the route does not take {verb}"))
