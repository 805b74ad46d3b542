"""The MCP server's only way out: the gateway's public gRPC API, called with the caller's
own key (and principal headers), so the gateway's scopes, quotas, deadlines, validation
and audit trail apply to an agent exactly as to any other client. Nothing here reaches an
internal service or a database."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc

PRINCIPAL_HEADERS = (
    "x-tandem-principal",
    "x-tandem-principal-groups",
    "x-tandem-principal-attributes",
)
# How long a key's answer to "may it teach?" is trusted: a narrowed key loses the tool
# within this time (the gateway refuses the call itself at once either way).
TEACH_PROBE_TTL_S = 60.0
_TEACH_CACHE_MAX = 1024

_Reply = TypeVar("_Reply")


@dataclass(frozen=True)
class Credentials:
    """Who calls: the headers the gateway authenticates and authorizes by, as sent —
    ``authorization`` (``Bearer <key>``) and any ``x-tandem-principal*``. Passed on
    verbatim, every value of each, so the gateway judges their form (a second
    authorization header is its AUTHORIZATION_MALFORMED, not silently the first)."""

    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_key(cls, key: str, principal: tuple[tuple[str, str], ...] = ()) -> Credentials:
        return cls(((("authorization", f"Bearer {key}"),) if key else ()) + principal)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return self.headers

    def fingerprint(self) -> str:
        """A digest naming these credentials in a cache, so no key is kept in clear."""
        return hashlib.sha256(repr(self.headers).encode()).hexdigest()

    def __repr__(self) -> str:  # never print a key
        return f"Credentials({len(self.headers)} headers)"


class GatewayError(Exception):
    """A call the gateway refused or could not serve: the gRPC status, the ErrorInfo
    reason when it sent one, and its message (which never holds the question)."""

    def __init__(self, code: str, reason: str, message: str, retry_after_s: float | None) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s
        super().__init__(self.describe())

    def describe(self) -> str:
        head = f"{self.code} {self.reason}" if self.reason else self.code
        text = f"{head}: {self.message}" if self.message else head
        if self.retry_after_s is not None:
            text += f" (retry after {self.retry_after_s:.1f}s)"
        return text


def gateway_error(exc: grpc.aio.AioRpcError, address: str) -> GatewayError:
    """The error an agent sees, from a failed call: status, reason, message, retry."""
    code = exc.code().name
    reason, retry = "", None
    status = rpc_status.from_call(exc)
    for detail in status.details if status else []:
        info, delay = error_details_pb2.ErrorInfo(), error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            reason = info.reason
        elif detail.Unpack(delay):
            retry = delay.retry_delay.ToTimedelta().total_seconds()
    message = exc.details() or ""
    if code == "UNAVAILABLE" and status is None:
        # No rich status: the gateway itself is not there (not a dependency behind it).
        message = f"cannot reach the gateway at {address}"
    return GatewayError(code, reason, message, retry)


class GatewayClient:
    """The gateway's RPCs the tools need, each with the caller's credentials and a
    deadline; every failure becomes a :class:`GatewayError`."""

    def __init__(self, channel: grpc.aio.Channel, address: str, timeout_s: float) -> None:
        self._stub = gpb_grpc.GatewayServiceStub(channel)
        self._address = address
        self._timeout_s = timeout_s
        self._teach: dict[str, tuple[bool, float]] = {}

    async def _call(
        self, rpc: Callable[..., Awaitable[_Reply]], request: Any, creds: Credentials
    ) -> _Reply:
        try:
            return await rpc(request, metadata=creds.metadata(), timeout=self._timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise gateway_error(exc, self._address) from None

    async def ask(
        self, request: gpb.GatewayServiceAskRequest, creds: Credentials
    ) -> gpb.GatewayServiceAskResponse:
        return await self._call(self._stub.Ask, request, creds)

    async def search(
        self, request: gpb.GatewayServiceSearchRequest, creds: Credentials
    ) -> gpb.GatewayServiceSearchResponse:
        return await self._call(self._stub.Search, request, creds)

    async def ask_sql(
        self, request: gpb.GatewayServiceAskSqlRequest, creds: Credentials
    ) -> gpb.GatewayServiceAskSqlResponse:
        return await self._call(self._stub.AskSql, request, creds)

    async def describe_schema(
        self, request: gpb.GatewayServiceDescribeSchemaRequest, creds: Credentials
    ) -> gpb.GatewayServiceDescribeSchemaResponse:
        return await self._call(self._stub.DescribeSchema, request, creds)

    async def teach_sql(
        self, request: gpb.GatewayServiceTeachSqlRequest, creds: Credentials
    ) -> gpb.GatewayServiceTeachSqlResponse:
        return await self._call(self._stub.TeachSql, request, creds)

    async def get_caller(self, creds: Credentials) -> gpb.GatewayServiceGetCallerResponse:
        return await self._call(self._stub.GetCaller, gpb.GatewayServiceGetCallerRequest(), creds)

    async def may_teach(self, creds: Credentials) -> bool:
        """Whether the key holds the ``teach`` scope, as the gateway's GetCaller says.
        Cached per credentials for TEACH_PROBE_TTL_S (an agent lists tools often); an
        answer the gateway could not give (quota, gateway down) is not cached."""
        key, now = creds.fingerprint(), time.monotonic()
        cached = self._teach.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            allowed = "teach" in (await self.get_caller(creds)).scopes
        except GatewayError as exc:
            if exc.code not in ("PERMISSION_DENIED", "UNAUTHENTICATED"):
                return False  # unknown for now: ask again next time
            allowed = False
        if len(self._teach) >= _TEACH_CACHE_MAX:
            self._teach.clear()
        self._teach[key] = (allowed, now + TEACH_PROBE_TTL_S)
        return allowed
