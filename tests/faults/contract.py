"""The gateway's error contract, as one assertion every error a test provokes must pass:
exactly one ErrorInfo (reason + domain "tandem"), BadRequest on INVALID_ARGUMENT,
RetryInfo where a retry helps, and nothing internal (stack traces, exception types,
addresses, host names) in the message or the details."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

DOMAIN = "tandem"
RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED}
_REASON = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LEAKS = [
    re.compile(r"Traceback|File \"|line \d+, in "),
    re.compile(r"<class |\b[A-Z][A-Za-z]+(Error|Exception)\b"),
    re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b|\blocalhost\b|ipv[46]:|\[::"),
    re.compile(r"\.py\b|/home/|/tmp/|/work/|site-packages"),
    re.compile(r"postgres(?:ql)?://|psycopg", re.IGNORECASE),
]


@dataclass
class ErrorSeen:
    """One failed call, decoded."""

    code: grpc.StatusCode
    message: str
    status: status_pb2.Status | None
    infos: list[error_details_pb2.ErrorInfo] = field(default_factory=list)
    bad_requests: list[error_details_pb2.BadRequest] = field(default_factory=list)
    retries: list[error_details_pb2.RetryInfo] = field(default_factory=list)
    others: list[any_pb2.Any] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return self.infos[0].reason if self.infos else ""

    @property
    def fields(self) -> list[str]:
        return [v.field for b in self.bad_requests for v in b.field_violations]


def decode(error: Any) -> ErrorSeen:
    """Decode a failed call (``grpc.aio.AioRpcError`` or a sync ``grpc.RpcError``)."""
    status: status_pb2.Status | None = None
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
    seen = ErrorSeen(error.code(), error.details() or "", status)
    for detail in status.details if status else []:
        info = error_details_pb2.ErrorInfo()
        bad = error_details_pb2.BadRequest()
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            seen.infos.append(info)
        elif detail.Unpack(bad):
            seen.bad_requests.append(bad)
        elif detail.Unpack(retry):
            seen.retries.append(retry)
        else:
            seen.others.append(detail)
    return seen


def leaks(text: str, extra: tuple[str, ...] = ()) -> list[str]:
    """What in ``text`` looks internal (empty when nothing does)."""
    found = [m.group(0) for pattern in _LEAKS for m in [pattern.search(text)] if m]
    hostname = socket.gethostname()
    for needle in (hostname, *extra):
        if needle and needle in text:
            found.append(needle)
    return found


def assert_contract(seen: ErrorSeen, *, internal: tuple[str, ...] = ()) -> None:
    """``seen`` keeps the error contract; ``internal`` lists strings that must not leak."""
    where = f"{seen.code.name} {seen.message!r}"
    assert seen.code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), where
    assert seen.status is not None, f"{where}: no rich status"
    assert seen.status.code == seen.code.value[0], where
    assert len(seen.infos) == 1, f"{where}: {len(seen.infos)} ErrorInfo"
    info = seen.infos[0]
    assert info.domain == DOMAIN, where
    assert _REASON.match(info.reason), f"{where}: reason {info.reason!r}"
    if seen.code == grpc.StatusCode.INVALID_ARGUMENT:
        assert len(seen.bad_requests) == 1, f"{where}: BadRequest missing"
        assert seen.fields and all(seen.fields), where
    if seen.code in RETRYABLE:
        assert len(seen.retries) == 1, f"{where}: RetryInfo missing"
        assert seen.retries[0].retry_delay.ToTimedelta().total_seconds() > 0, where
    assert not seen.others, f"{where}: unexpected details {seen.others}"
    texts = [seen.message, seen.status.message, str(dict(info.metadata))]
    texts += [f"{v.field} {v.description}" for b in seen.bad_requests for v in b.field_violations]
    for text in texts:
        assert not leaks(text, internal), f"{where}: leaks {leaks(text, internal)} in {text!r}"


async def outcome(call: Any) -> ErrorSeen | None:
    """Await a unary call or drain a streaming one; the decoded error, or None on success."""
    try:
        if hasattr(call, "__aiter__"):
            async for _ in call:
                pass
        else:
            await call
    except grpc.aio.AioRpcError as exc:
        return decode(exc)
    return None
