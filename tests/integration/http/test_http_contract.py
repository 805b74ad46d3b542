"""Every gateway RPC over HTTP/JSON, from the same descriptor walk as the gRPC contract
tests: for each route (read from the google.api.http options), the gRPC contract's valid
request succeeds over HTTP, its invalid request is refused over HTTP with the same code
and the same field, and a key without a key, or without the RPC's scope, gets the same
status and reason over HTTP as over gRPC — the HTTP status being gRPC transcoding's.

The requests are the gRPC contract tests' own tables (tests/contract), turned into HTTP
calls by the route: path variables from the message, the rest as the JSON body or as
query parameters, uploads as multipart."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import grpc
import httpx
import pytest
from google.protobuf import json_format, message
from grpc_status import rpc_status

from services.rest import HttpRoute, gateway_routes, http_status
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tests.contract import test_gateway_service as gateway_contract
from tests.contract import test_gateway_sql_memory as memory_contract
from tests.faults.contract import decode
from tests.processes import ProcessStack

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(300)]

ROUTES = {route.name: route for route in gateway_routes()}
VALID: dict[str, Any] = {
    name.split("/")[1]: request
    for name, (_, request) in {**gateway_contract.VALID, **memory_contract.VALID}.items()
}
INVALID: dict[str, tuple[Any, str]] = {
    name.split("/")[1]: case
    for name, case in {**gateway_contract.INVALID, **memory_contract.INVALID}.items()
}
# UploadDocument's invalid case is a stream without its header first, which the HTTP face
# cannot send (the metadata part is always the header); its own refusals are tested below.
INVALID.pop("UploadDocument")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    stack = ProcessStack(
        tmp_path_factory.mktemp("http-contract"),
        env={"GATEWAY_RATE_PER_S": "1000", "GATEWAY_BURST": "1000"},
    )
    with stack:
        yield stack


@pytest.fixture
async def client(stack: ProcessStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"http://{stack.edge_address}", timeout=120) as http:
        yield http


@pytest.fixture
async def stub(stack: ProcessStack) -> AsyncIterator[gpb_grpc.GatewayServiceStub]:
    async with grpc.aio.insecure_channel(stack.edge_address) as channel:
        yield gpb_grpc.GatewayServiceStub(channel)


async def _key(stack: ProcessStack, scopes: tuple[str, ...] = ("all",)) -> str:
    return await asyncio.to_thread(stack.create_key, f"hc-{uuid.uuid4().hex[:8]}", "t", scopes)


def _flat(data: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """A JSON object as query parameters: dotted names, repeated values, true/false."""
    out: list[tuple[str, str]] = []
    for name, value in data.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, dict):
                out += _flat(item, f"{prefix}{name}.")
            else:
                text = json.dumps(item) if isinstance(item, bool) else str(item)
                out.append((f"{prefix}{name}", text))
    return out


def http_call(route: HttpRoute, request: Any) -> tuple[str, str, dict[str, Any]]:
    """The HTTP form of a gRPC request, as the route binds it."""
    if route.client_streaming:
        header = next(m.header for m in request if m.HasField("header"))
        content = b"".join(m.chunk for m in request if m.WhichOneof("part") == "chunk")
        files = {
            "metadata": (None, json_format.MessageToJson(header), "application/json"),
            "file": (header.document.file_name or "file", content, "application/octet-stream"),
        }
        return route.verb, route.template, {"files": files}
    assert isinstance(request, message.Message)
    data = json_format.MessageToDict(request)
    path = route.template
    for name in route.path_fields:
        path = path.replace("{" + name + "}", quote(getattr(request, name), safe="") or "-")
        data.pop(request.DESCRIPTOR.fields_by_name[name].json_name, None)
    if route.body == "*":
        return route.verb, path, {"json": data}
    return route.verb, path, {"params": _flat(data)}


async def _grpc(stub: Any, route: HttpRoute, request: Any, key: str) -> tuple[str, str, list[str]]:
    """(code, reason, fields) of the gRPC call; ("OK", "", []) when it succeeds."""
    rpc = getattr(stub, route.name)
    metadata = (("authorization", f"Bearer {key}"),) if key else ()
    try:
        if route.client_streaming:
            async for _ in rpc(iter(request), metadata=metadata, timeout=60):
                pass
        elif route.server_streaming:
            async for _ in rpc(request, metadata=metadata, timeout=60):
                pass
        else:
            await rpc(request, metadata=metadata, timeout=60)
    except grpc.aio.AioRpcError as exc:
        seen = decode(exc)
        status = rpc_status.from_call(exc)
        assert status is not None
        return exc.code().name, seen.reason, _fields(json.loads(json_format.MessageToJson(status)))
    return "OK", "", []


def _fields(body: dict[str, Any]) -> list[str]:
    return [
        v["field"]
        for d in body.get("details", [])
        if d["@type"].endswith("BadRequest")
        for v in d["fieldViolations"]
    ]


def _reason(body: dict[str, Any]) -> str:
    return next((d["reason"] for d in body.get("details", []) if "reason" in d), "")


async def _http(
    client: httpx.AsyncClient, route: HttpRoute, request: Any, key: str
) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
    verb, path, kwargs = http_call(route, request)
    headers = {"authorization": f"Bearer {key}"} if key else {}
    reply = await client.request(verb, path, headers=headers, **kwargs)
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        events = [
            json.loads(block.split("data: ", 1)[1])
            for block in reply.text.split("\n\n")
            if block.startswith("event: message")
        ]
        return reply.status_code, events
    return reply.status_code, reply.json()


def test_the_tables_cover_every_route() -> None:
    """The descriptor walk: an RPC added to the gateway needs a valid request here (the
    gRPC contract tests' own table), or this fails naming it."""
    assert set(VALID) >= set(ROUTES)
    assert set(INVALID) | {"UploadDocument", "GetCaller"} >= set(ROUTES)


@pytest.mark.parametrize("name", sorted(ROUTES))
async def test_each_rpc_succeeds_over_http(
    name: str, stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    route, key = ROUTES[name], await _key(stack)
    request = VALID[name]
    if name == "SubmitSqlFeedback":
        # A real answer of this tenant's to rate.
        status, asked = await _http(client, ROUTES["AskSql"], VALID["AskSql"], key)
        assert status == 200, asked
        assert isinstance(asked, dict) and asked["answerId"]
        request = gpb.GatewayServiceSubmitSqlFeedbackRequest(
            answer_id=asked["answerId"], rating=request.rating
        )
    status, body = await _http(client, route, request, key)
    assert status == 200, body
    if route.server_streaming and not route.client_streaming:
        assert isinstance(body, list) and body, "no events"
    else:
        assert isinstance(body, dict)
        reply = json_format.ParseDict(body, route.response())  # the reply parses as its type
        assert reply is not None


@pytest.mark.parametrize("name", sorted(INVALID))
async def test_each_invalid_request_is_refused_over_http_as_over_grpc(
    name: str, stack: ProcessStack, client: httpx.AsyncClient, stub: Any
) -> None:
    route, key = ROUTES[name], await _key(stack)
    request, field = INVALID[name]
    code, reason, fields = await _grpc(stub, route, request, key)
    assert (code, fields[:1]) == ("INVALID_ARGUMENT", [field])
    if field in route.path_fields and not getattr(request, field):
        # An empty path variable cannot be sent: the path binds no RPC at all.
        empty = route.template.replace("{" + field + "}", "")
        reply = await client.request(route.verb, empty, headers={"authorization": f"Bearer {key}"})
        assert (reply.status_code, _reason(reply.json())) == (404, "ROUTE_NOT_FOUND")
        return
    status, body = await _http(client, route, request, key)
    assert isinstance(body, dict)
    assert status == 400, body
    assert (_reason(body), _fields(body)) == (reason, fields)


@pytest.mark.parametrize("name", sorted(ROUTES))
async def test_shared_errors_are_the_same_over_http_and_grpc(
    name: str, stack: ProcessStack, client: httpx.AsyncClient, stub: Any
) -> None:
    """No key, and a key holding only `ask`: the same code and reason, under transcoding's
    HTTP status."""
    route, narrow = ROUTES[name], await _key(stack, ("ask",))
    request = VALID[name]
    for key in ("", narrow):
        code, reason, _ = await _grpc(stub, route, request, key)
        status, body = await _http(client, route, request, key)
        if code == "OK":
            assert status == 200, body
            continue
        assert isinstance(body, dict), body
        assert status == http_status(grpc.StatusCode[code].value[0]), body
        assert _reason(body) == reason, body


async def test_the_faces_own_upload_refusals(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    key = {"authorization": f"Bearer {await _key(stack)}"}
    no_file = await client.post(
        "/v1/documents:upload", headers=key, files={"metadata": (None, "{}", "application/json")}
    )
    assert (no_file.status_code, _fields(no_file.json())) == (400, ["file"])
    bad_meta = await client.post(
        "/v1/documents:upload",
        headers=key,
        files={"metadata": (None, '{"document": {"nope": 1}}'), "file": ("a.txt", b"x")},
    )
    assert (bad_meta.status_code, _fields(bad_meta.json())) == (400, ["metadata.document.nope"])
    empty = await client.post(
        "/v1/documents:upload",
        headers=key,
        files={"metadata": (None, '{"document": {"documentId": "e"}}'), "file": ("e.txt", b"")},
    )
    assert empty.status_code == 400 and _fields(empty.json()) == ["chunk"], empty.text


def _with(name: str, **fields: Any) -> Any:
    """The gRPC contract's valid request for ``name`` with ``fields`` changed."""
    request = type(VALID[name])()
    request.CopyFrom(VALID[name])
    for field, value in fields.items():
        setattr(request, field, value)
    return request


# Each RPC's own documented refusals beyond validation and the shared ones (what it
# refuses about the tenant's data): missing ids, an answer that is not the caller's, a
# statement the gate refuses. (code, reason) expected over gRPC; HTTP must say the same.
_MISSING = {"allow_missing": False}
OWN_ERRORS: dict[str, tuple[str, Any, str, str]] = {
    "delete-missing-document": (
        "DeleteDocument",
        _with("DeleteDocument", document_id="no-such-document", **_MISSING),
        "NOT_FOUND",
        "DOCUMENT_NOT_FOUND",
    ),
    "acl-of-a-missing-document": (
        "UpdateDocumentAcl",
        _with("UpdateDocumentAcl", document_id="no-such-document", **_MISSING),
        "NOT_FOUND",
        "DOCUMENT_NOT_FOUND",
    ),
    "feedback-on-someone-elses-answer": (
        "SubmitSqlFeedback",
        _with("SubmitSqlFeedback", answer_id=str(uuid.uuid4())),
        "NOT_FOUND",
        "ANSWER_NOT_FOUND",
    ),
    "teach-a-write": (
        "TeachSql",
        _with("TeachSql", sql="DELETE FROM companies"),
        "INVALID_ARGUMENT",
        "SQL_REJECTED",
    ),
    "delete-missing-pair": (
        "DeleteConfirmedPair",
        _with("DeleteConfirmedPair", pair_id=str(uuid.uuid4()), **_MISSING),
        "NOT_FOUND",
        "CONFIRMED_PAIR_NOT_FOUND",
    ),
    "delete-missing-conversation": (
        "DeleteConversation",
        _with("DeleteConversation", conversation_id=str(uuid.uuid4()), **_MISSING),
        "NOT_FOUND",
        "CONVERSATION_NOT_FOUND",
    ),
}


@pytest.mark.parametrize("case", sorted(OWN_ERRORS))
async def test_each_rpcs_own_errors_are_the_same_over_http_and_grpc(
    case: str, stack: ProcessStack, client: httpx.AsyncClient, stub: Any
) -> None:
    name, request, code, reason = OWN_ERRORS[case]
    route, key = ROUTES[name], await _key(stack)
    assert (await _grpc(stub, route, request, key))[:2] == (code, reason)
    status, body = await _http(client, route, request, key)
    assert isinstance(body, dict), body
    # gRPC transcoding's table, written out (not the face's own function)
    assert (status, _reason(body)) == ({"NOT_FOUND": 404, "INVALID_ARGUMENT": 400}[code], reason)
