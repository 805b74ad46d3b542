"""Domain exceptions that carry their gRPC status, and their rich-status encoding.

Logic code raises these; one server interceptor turns them into `google.rpc.Status`
with details (AIP-193), so no handler ever builds a status by hand and nothing
reaches a client as UNKNOWN.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

ERROR_DOMAIN = "tandem"


@dataclass(frozen=True)
class FieldViolation:
    """One invalid request field: its path (e.g. ``texts[3]``) and the rule it broke."""

    field: str
    description: str


class TandemError(Exception):
    """Base class: an error with a gRPC code, a short client-safe message and details."""

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL
    reason: str = "INTERNAL"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason
        self.metadata = dict(metadata or {})

    def details(self) -> list[any_pb2.Any]:
        """Rich details for the status; subclasses add their own before ErrorInfo."""
        info = error_details_pb2.ErrorInfo(
            reason=self.reason, domain=ERROR_DOMAIN, metadata=self.metadata
        )
        packed = any_pb2.Any()
        packed.Pack(info)
        return [packed]


class InvalidArgument(TandemError):
    """Bad input; carries a BadRequest naming every offending field."""

    code = grpc.StatusCode.INVALID_ARGUMENT
    reason = "INVALID_ARGUMENT"

    def __init__(
        self,
        violations: Iterable[FieldViolation],
        message: str | None = None,
        *,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.violations = list(violations)
        if not self.violations:
            raise ValueError("InvalidArgument needs at least one field violation")
        first = self.violations[0]
        super().__init__(
            message or f"{first.field}: {first.description}", reason=reason, metadata=metadata
        )

    @classmethod
    def field(
        cls,
        field: str,
        description: str,
        *,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> InvalidArgument:
        """Shorthand for a single-field violation."""
        return cls([FieldViolation(field, description)], reason=reason, metadata=metadata)

    def details(self) -> list[any_pb2.Any]:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=v.field, description=v.description
                )
                for v in self.violations
            ]
        )
        packed = any_pb2.Any()
        packed.Pack(bad)
        return [packed, *super().details()]


class NotFound(TandemError):
    """The named resource does not exist (for this tenant)."""

    code = grpc.StatusCode.NOT_FOUND
    reason = "NOT_FOUND"


class FailedPrecondition(TandemError):
    """The system is not in a state to serve this request (e.g. model mismatch)."""

    code = grpc.StatusCode.FAILED_PRECONDITION
    reason = "FAILED_PRECONDITION"


class PermissionDenied(TandemError):
    """The caller is known but may not do this."""

    code = grpc.StatusCode.PERMISSION_DENIED
    reason = "PERMISSION_DENIED"


class Unauthenticated(TandemError):
    """Missing or invalid credentials."""

    code = grpc.StatusCode.UNAUTHENTICATED
    reason = "UNAUTHENTICATED"


class _Retryable(TandemError):
    """An error that tells the caller when to try again (RetryInfo)."""

    def __init__(
        self,
        message: str,
        *,
        retry_after_s: float = 1.0,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ):
        super().__init__(message, reason=reason, metadata=metadata)
        self.retry_after_s = retry_after_s

    def details(self) -> list[any_pb2.Any]:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(int(self.retry_after_s * 1e9))
        packed = any_pb2.Any()
        packed.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
        return [packed, *super().details()]


class Unavailable(_Retryable):
    """A dependency is down; safe to retry after the delay."""

    code = grpc.StatusCode.UNAVAILABLE
    reason = "UNAVAILABLE"


class ResourceExhausted(_Retryable):
    """A quota or limit was hit; retry after the delay."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    reason = "RESOURCE_EXHAUSTED"


class LimitExceeded(TandemError):
    """A hard limit of the request's own work (a statement's memory or temp files) was
    hit: the same request would hit it again, so, unlike a quota, no RetryInfo."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    reason = "RESOURCE_EXHAUSTED"


class DeadlineExceeded(TandemError):
    """The request's deadline passed before the work finished."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED
    reason = "DEADLINE_EXCEEDED"


INTERNAL_MESSAGE = "internal error; the server logged the cause"


def to_status_proto(
    code: grpc.StatusCode, message: str, details: list[any_pb2.Any]
) -> status_pb2.Status:
    """Build the `google.rpc.Status` that `grpc_status.rpc_status.to_status` sends."""
    numeric: int = code.value[0]
    return status_pb2.Status(code=numeric, message=message, details=details)


def status_for(exc: BaseException) -> status_pb2.Status:
    """Map any exception to a client-safe rich status; unknown errors become INTERNAL."""
    if isinstance(exc, TandemError):
        return to_status_proto(exc.code, exc.message, exc.details())
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason="INTERNAL", domain=ERROR_DOMAIN))
    return to_status_proto(grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE, [info])
