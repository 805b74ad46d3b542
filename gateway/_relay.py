"""Between the public and the internal contracts: message re-parsing and error relay.

Gateway messages mirror the internal ones field for field (field 1, the tenant, is
reserved on the public side), so a request crosses as bytes: parsed into the internal
type, the tenant set from the verified key. Responses cross back the same way with
unknown fields dropped, so nothing internal-only reaches a client.

Errors from an internal service keep their status and rich details (our services only
send client-safe messages). Errors the gRPC library made up itself (a dependency that
is down, a deadline) carry transport text with internal addresses; they are replaced
by a fixed message naming the service.
"""

from __future__ import annotations

from typing import TypeVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2

from services.common import DeadlineExceeded, ResourceExhausted, TandemError, Unavailable

M = TypeVar("M", bound=Message)
_STATUS_DETAILS_KEY = "grpc-status-details-bin"


def reparse(message: Message, target: type[M]) -> M:
    """``message``'s bytes as a ``target``, fields unknown to ``target`` dropped."""
    out = target.FromString(message.SerializeToString())
    out.DiscardUnknownFields()
    return out


def to_internal(request: Message, target: type[M], tenant_id: str) -> M:
    """The internal request for a public one, scoped to the verified tenant."""
    # Fields the public contract does not define (a smuggled tenant field 1 among them)
    # are dropped before the bytes cross.
    request.DiscardUnknownFields()
    out = reparse(request, target)
    out.tenant_id = tenant_id  # type: ignore[attr-defined]
    return out


class RelayedError(TandemError):
    """An internal service's error, passed to the caller with its code and details."""

    def __init__(
        self, code: grpc.StatusCode, message: str, details: list[any_pb2.Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self._details = list(details or [])

    def details(self) -> list[any_pb2.Any]:
        return list(self._details) if self._details else super().details()


def _rich_status(error: grpc.aio.AioRpcError) -> status_pb2.Status | None:
    for key, value in error.trailing_metadata() or ():
        if key == _STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            if status.code == error.code().value[0]:
                return status
    return None


def unreachable(error: grpc.aio.AioRpcError) -> bool:
    """True when the service could not be reached at all (not an error it returned)."""
    return error.code() == grpc.StatusCode.UNAVAILABLE and _rich_status(error) is None


def relay(error: grpc.aio.AioRpcError, service: str) -> TandemError:
    """The error the gateway's caller sees for an internal call that failed."""
    code = error.code()
    status = _rich_status(error)
    if status is not None:
        if code == grpc.StatusCode.UNKNOWN:
            code = grpc.StatusCode.INTERNAL
        return RelayedError(code, status.message, list(status.details))
    made: TandemError
    if code == grpc.StatusCode.UNAVAILABLE:
        made = Unavailable(
            f"the {service} service is unavailable; retry later",
            reason="DEPENDENCY_UNAVAILABLE",
        )
        made.metadata = {"service": service}
    elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
        made = DeadlineExceeded("deadline exceeded", reason="DEADLINE_EXCEEDED")
    elif code == grpc.StatusCode.CANCELLED:
        made = RelayedError(code, "the call was cancelled")
    elif code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        made = ResourceExhausted(
            f"the {service} service refused the request size or load; split the request "
            "or retry later",
            reason="RESOURCE_EXHAUSTED",
        )
    elif code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.OK):
        made = TandemError(f"the {service} service failed", reason="DEPENDENCY_ERROR")
    else:
        made = RelayedError(code, f"the {service} service failed ({code.name})")
    return made
