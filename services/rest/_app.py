"""The transcoder: an ASGI app that turns each HTTP/JSON request into the gateway RPC
its route names and calls the gateway over gRPC exactly as any external client does —
the caller's ``Authorization`` and ``x-tandem-principal*`` headers passed on verbatim as
metadata, the deadline from ``x-tandem-timeout`` (else the gateway's default) — so
authentication, scopes, quotas, principals, validation and the audit trail are the
gateway's, unchanged. Nothing here reaches an internal service or a database.

JSON is the proto3 mapping (``google.protobuf.json_format``); unknown fields and bad
types are INVALID_ARGUMENT naming the field. Server streams (StreamAsk,
IngestDocuments) are server-sent events; UploadDocument takes multipart/form-data and
streams the file to the gateway in pieces.

Nothing is logged per request: no path, body, query or key ever reaches a log."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import grpc
from google.protobuf import descriptor, json_format, message
from google.rpc import status_pb2
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from services.common import InvalidArgument, TandemError
from services.rest._errors import (
    http_status,
    local_status,
    method_not_allowed,
    no_route,
    retry_after,
    status_json,
    status_of_call,
)
from services.rest._routes import HttpRoute, find
from services.rest._settings import MAX_TIMEOUT_S, RestSettings
from tandem.v1 import gateway_service_pb2 as gpb

# The headers the gateway authenticates and authorizes by; every value of each is passed
# on, so the gateway judges their form (a second Authorization is its refusal, not ours).
FORWARDED_HEADERS = (
    "authorization",
    "x-tandem-principal",
    "x-tandem-principal-groups",
    "x-tandem-principal-attributes",
)
TIMEOUT_HEADER = "x-tandem-timeout"
OPENAPI_PATH = "/openapi.json"
HEALTH_PATH = "/healthz"
# Pieces of an uploaded file sent to the gateway (its limit per piece is 4 MiB).
UPLOAD_CHUNK_BYTES = 1024 * 1024
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"

_NO_FIELD = re.compile(r'has no field named "([^"]+)" at "([^"]+)"')
_AT = re.compile(r" at \"?([A-Za-z0-9_.\[\]]+?)\"?\.?$", re.M)
_FIELD = re.compile(r"^Failed to parse (\S+) field")


def _field_of(error: str) -> str:
    """The field a json_format error is about, as the caller spelled it (``topK``,
    ``options.bar``); ``body`` when it names none."""

    def relative(path: str) -> str:
        return path.partition(".")[2]

    found = _NO_FIELD.search(error)
    if found:
        parent = relative(found.group(2))
        return f"{parent}.{found.group(1)}" if parent else found.group(1)
    first_line = error.splitlines()[0] if error else ""
    at = _AT.search(first_line)
    if at and relative(at.group(1)):
        return relative(at.group(1))
    named = _FIELD.match(first_line)
    if named and not named.group(1).isdigit():
        return named.group(1)
    return "body"


def _bad_json(error: json_format.ParseError | ValueError) -> InvalidArgument:
    text = str(error)
    return InvalidArgument.field(_field_of(text), text.splitlines()[0][:500] if text else "")


def _json(data: bytes, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(data, status_code=status, media_type=JSON_TYPE, headers=headers)


def error_response(status: status_pb2.Status, http: int | None = None) -> Response:
    headers = {}
    after = retry_after(status)
    if after is not None:
        headers["retry-after"] = after
    return _json(status_json(status), http or http_status(status.code), headers)


def message_json(reply: message.Message) -> bytes:
    """A message as proto3 JSON, every field printed (defaults too), as the contract says."""
    body = json_format.MessageToDict(reply, always_print_fields_with_no_presence=True)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def sse(event: str, data: bytes) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"


class _BodyTooLarge(Exception):
    pass


def _limited(receive: Receive, limit: int) -> Receive:
    """``receive`` that stops a body at ``limit`` bytes (Content-Length may be absent)."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        got = await receive()
        if got["type"] == "http.request":
            seen += len(got.get("body", b""))
            if seen > limit:
                raise _BodyTooLarge
        return got

    return wrapped


def _query_dict(query: str, request_type: descriptor.Descriptor) -> dict[str, Any]:
    """Query parameters as the JSON object json_format parses: dotted names nest,
    repeated fields take every value, ``true``/``false`` become booleans."""
    out: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        parts = name.split(".")
        node, desc = out, request_type
        for part in parts[:-1]:
            field = desc.fields_by_name.get(part) or _by_json_name(desc, part)
            if field is None or field.message_type is None:
                raise InvalidArgument.field(name, "no such message field")
            node = node.setdefault(part, {})
            desc = field.message_type
        leaf = parts[-1]
        field = desc.fields_by_name.get(leaf) or _by_json_name(desc, leaf)
        if field is None:
            raise InvalidArgument.field(name, "no such field")
        typed: Any = value
        if field.type == descriptor.FieldDescriptor.TYPE_BOOL:
            if value not in ("true", "false"):
                raise InvalidArgument.field(name, 'expected "true" or "false"')
            typed = value == "true"
        if _repeated(field):
            node.setdefault(leaf, []).append(typed)
        elif leaf in node:
            raise InvalidArgument.field(name, "given more than once")
        else:
            node[leaf] = typed
    return out


def _repeated(field: descriptor.FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def _by_json_name(desc: descriptor.Descriptor, name: str) -> descriptor.FieldDescriptor | None:
    for field in desc.fields:
        if field.json_name == name:
            return field
    return None


@dataclass(frozen=True)
class _Call:
    route: HttpRoute
    invoke: Any  # the grpc.aio multicallable


class Transcoder:
    """The ASGI app. ``channel`` reaches the gateway; ``openapi`` is the document served
    at ``/openapi.json``."""

    def __init__(
        self,
        channel: grpc.aio.Channel,
        routes: Sequence[HttpRoute],
        settings: RestSettings,
        openapi: bytes,
    ) -> None:
        self._routes = tuple(routes)
        self._settings = settings
        self._openapi = openapi
        self._calls: dict[str, _Call] = {}
        for route in self._routes:
            serialize, parse = route.request.SerializeToString, route.response.FromString
            if route.client_streaming:
                invoke: Any = channel.stream_stream(route.method, serialize, parse)
            elif route.server_streaming:
                invoke = channel.unary_stream(route.method, serialize, parse)
            else:
                invoke = channel.unary_unary(route.method, serialize, parse)
            self._calls[route.name] = _Call(route, invoke)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        route_found = find(self._routes, scope["method"], _raw_path(scope))
        upload = not isinstance(route_found, str) and route_found[0].client_streaming
        limit = self._settings.max_upload_bytes if upload else self._settings.max_body_bytes
        request = Request(scope, _limited(receive, limit))
        try:
            response = await self._handle(request, route_found)
        except _BodyTooLarge:
            # 400, not 429: the same request would be refused again (no retry).
            field = "file" if upload else "body"
            response = error_response(
                local_status(
                    InvalidArgument.field(
                        field,
                        f"over {limit} bytes",
                        reason="REQUEST_TOO_LARGE",
                        metadata={"limit": str(limit)},
                    )
                )
            )
        await response(scope, receive, send)

    async def _handle(
        self, request: Request, found: tuple[HttpRoute, dict[str, str]] | str
    ) -> Response:
        path = _raw_path(request.scope)
        if isinstance(found, str):
            if path == OPENAPI_PATH and request.method in ("GET", "HEAD"):
                return _json(self._openapi)
            if path == HEALTH_PATH and request.method in ("GET", "HEAD"):
                return Response(b"SERVING", media_type="text/plain")
            if found == "method_not_allowed":
                return error_response(method_not_allowed(request.method), 405)
            return error_response(no_route(path))
        route, variables = found
        call = self._calls[route.name]
        try:
            metadata = _metadata(request)
            timeout = _timeout(request)
            if route.client_streaming:
                return await self._upload(call, request, metadata, timeout)
            rpc_request = await _decode(route, request, variables)
        except TandemError as exc:
            return error_response(local_status(exc))
        if route.server_streaming:
            return await self._stream(call, rpc_request, metadata, timeout)
        unary = call.invoke(rpc_request, metadata=metadata, timeout=timeout)
        # A client that goes away cancels the call, and the cancellation reaches the
        # gateway's internal calls (as a gRPC client's would).
        watcher = asyncio.ensure_future(_cancel_on_disconnect(request.receive, unary))
        try:
            reply = await unary
        except grpc.aio.AioRpcError as exc:
            return error_response(status_of_call(exc))
        finally:
            watcher.cancel()
        return _json(message_json(reply))

    async def _stream(
        self,
        call: _Call,
        rpc_request: message.Message,
        metadata: tuple[tuple[str, str], ...],
        deadline_s: float | None,
    ) -> Response:
        """Server-sent events; an error before the first message is a plain JSON error
        with its HTTP status (validation, auth), one after it an ``error`` event."""
        stream = call.invoke(rpc_request, metadata=metadata, timeout=deadline_s)
        try:
            first = await stream.read()
        except grpc.aio.AioRpcError as exc:
            return error_response(status_of_call(exc))

        async def events() -> AsyncIterator[bytes]:
            try:
                if first is grpc.aio.EOF:
                    return
                yield sse("message", message_json(first))
                while True:
                    try:
                        event = await stream.read()
                    except grpc.aio.AioRpcError as exc:
                        yield sse("error", status_json(status_of_call(exc)))
                        return
                    if event is grpc.aio.EOF:
                        return
                    yield sse("message", message_json(event))
            finally:
                stream.cancel()  # a no-op once done; a client gone cancels the RPC

        return StreamingResponse(
            events(),
            media_type=SSE_TYPE,
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def _upload(
        self,
        call: _Call,
        request: Request,
        metadata: tuple[tuple[str, str], ...],
        deadline_s: float | None,
    ) -> Response:
        """multipart/form-data: a ``metadata`` part (the upload header's JSON) and a
        ``file`` part, streamed to the gateway in 1 MiB pieces; the reply is the last
        event (the summary), or the error."""
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise InvalidArgument.field("content-type", "expected multipart/form-data")
        async with request.form(max_files=1, max_fields=1) as form:
            meta, upload = form.get("metadata"), form.get("file")
            if upload is None or not isinstance(upload, UploadFile):
                raise InvalidArgument.field("file", "a file part named 'file' is required")
            if isinstance(meta, UploadFile):
                meta = (await meta.read()).decode("utf-8", "replace")
            header = gpb.GatewayServiceUploadHeader()
            try:
                json_format.ParseDict(json.loads(meta or "{}"), header)
            except (json_format.ParseError, ValueError) as exc:
                bad = _bad_json(exc)
                field = bad.violations[0].field
                raise InvalidArgument.field(
                    "metadata" if field == "body" else f"metadata.{field}",
                    bad.violations[0].description,
                ) from None
            if not header.document.file_name and upload.filename:
                header.document.file_name = upload.filename

            async def pieces() -> AsyncIterator[gpb.GatewayServiceUploadDocumentRequest]:
                yield gpb.GatewayServiceUploadDocumentRequest(header=header)
                while chunk := await upload.read(UPLOAD_CHUNK_BYTES):
                    yield gpb.GatewayServiceUploadDocumentRequest(chunk=chunk)

            last = None
            try:
                async for event in call.invoke(pieces(), metadata=metadata, timeout=deadline_s):
                    last = event
            except grpc.aio.AioRpcError as exc:
                return error_response(status_of_call(exc))
        return _json(message_json(last or gpb.GatewayServiceUploadDocumentResponse()))


async def _decode(
    route: HttpRoute, request: Request, variables: Mapping[str, str]
) -> message.Message:
    rpc_request = route.request()
    try:
        if route.body == "*":
            raw = await request.body()
            data = json.loads(raw) if raw.strip() else {}
            if not isinstance(data, dict):
                raise InvalidArgument.field("body", "expected a JSON object")
        else:
            data = _query_dict(
                request.scope.get("query_string", b"").decode("latin-1"), route.rpc.input_type
            )
        json_format.ParseDict(data, rpc_request)
    except (json_format.ParseError, ValueError) as exc:
        raise _bad_json(exc) from None
    for name, value in variables.items():
        setattr(rpc_request, name, value)
    return rpc_request


async def _cancel_on_disconnect(receive: Receive, call: grpc.aio.Call) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    call.cancel()


def _metadata(request: Request) -> tuple[tuple[str, str], ...]:
    headers = request.headers
    return tuple((name, value) for name in FORWARDED_HEADERS for value in headers.getlist(name))


def _timeout(request: Request) -> float | None:
    raw = request.headers.get(TIMEOUT_HEADER)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_TIMEOUT_S:
        raise InvalidArgument.field(
            TIMEOUT_HEADER, f"seconds, a number above 0 and at most {MAX_TIMEOUT_S:g}"
        )
    return value


def _raw_path(scope: Scope) -> str:
    """The path as sent (percent-encoding kept), so ``a%2Fb`` stays one segment."""
    raw = scope.get("raw_path")
    if raw:
        return bytes(raw).decode("latin-1").partition("?")[0]
    return str(scope["path"])


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        event = await receive()
        if event["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif event["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
