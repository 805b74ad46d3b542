"""The HTTP/JSON face end to end: a plain HTTP client (httpx) through the edge (nginx)
to ``services.rest``, which calls the real gateway over gRPC in front of the real router,
retrieval, SQL and embedding services on Postgres — every service a process, as
``tandem run`` starts them. Success for Search / Ask / StreamAsk (SSE) / AskSql /
GetCaller / multipart upload, and each refusal with the gateway's reason and the HTTP
status gRPC transcoding assigns (401, 403, 429, 400, 404, 503, 504); the OpenAPI document
checked against the running face.

One private stack for the module (a dead SQL service is one of the cases); each test
uses keys of its own tenant."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from services.rest import gateway_routes
from tests.privacy import new_canary
from tests.processes import ProcessStack

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(300)]

DOC_TEXT = (
    "# Hotels\n\nEmployees may book hotels up to 180 euros per night in Berlin. "
    "Receipts are filed within thirty days.\n"
)
QUESTION = "How much may employees spend on hotels per night in Berlin?"
COUNTABLE = "How many companies are there?"
# Needs the SQL and the semantic engine (the router streams a step for each).
BOTH_ENGINES = (
    "How many open Security Suite opportunities are there, and what do call notes say "
    "about security reviews?"
)
TIMEOUT = httpx.Timeout(120.0)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    # The shared stack's quota (5/s, burst 20): small enough to spend in a test.
    stack = ProcessStack(
        tmp_path_factory.mktemp("http-stack"),
        env={"GATEWAY_RATE_PER_S": "5", "GATEWAY_BURST": "20"},
        # The face at its most verbose: the privacy test reads its log.
        service_env={"rest": {"LOG_LEVEL": "DEBUG"}},
    )
    with stack:
        yield stack


@pytest.fixture(scope="module")
def base_url(stack: ProcessStack) -> str:
    return f"http://{stack.edge_address}"


async def _key(stack: ProcessStack, scopes: tuple[str, ...] = ("all",)) -> str:
    tenant = f"http-{uuid.uuid4().hex[:8]}"
    return await asyncio.to_thread(stack.create_key, tenant, "test", scopes)


def _auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT) as http:
        yield http


def _reason(body: dict[str, Any]) -> str:
    for detail in body.get("details", []):
        if detail["@type"].endswith("google.rpc.ErrorInfo"):
            return str(detail["reason"])
    return ""


def _violations(body: dict[str, Any]) -> list[str]:
    return [
        v["field"]
        for d in body.get("details", [])
        if d["@type"].endswith("google.rpc.BadRequest")
        for v in d["fieldViolations"]
    ]


async def _upload(client: httpx.AsyncClient, key: str, document_id: str) -> dict[str, Any]:
    metadata = {"document": {"documentId": document_id, "title": "Travel policy"}}
    reply = await client.post(
        "/v1/documents:upload",
        headers=_auth(key),
        files={
            "metadata": (None, json.dumps(metadata), "application/json"),
            "file": ("travel.md", DOC_TEXT.encode(), "text/markdown"),
        },
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def _sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


# -- success -----------------------------------------------------------------------------


async def test_upload_then_search_ask_stream_and_caller_over_http(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    key = await _key(stack)
    summary = await _upload(client, key, "travel-policy")
    assert summary["summary"]["documentsIncluded"] == 1, summary

    search = await client.post(
        "/v1:search", headers=_auth(key), json={"query": "hotel per night Berlin", "topK": 3}
    )
    assert search.status_code == 200, search.text
    hits = search.json()["hits"]
    assert hits and hits[0]["documentId"] == "travel-policy"

    ask = await client.post("/v1:ask", headers=_auth(key), json={"question": QUESTION})
    assert ask.status_code == 200, ask.text
    answer = ask.json()["answer"]
    assert "180" in answer["text"]
    assert any(c.get("documentId") == "travel-policy" for c in answer["citations"]), answer

    streamed = await client.post("/v1:streamAsk", headers=_auth(key), json={"question": QUESTION})
    assert streamed.status_code == 200, streamed.text
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = _sse(streamed.text)
    assert all(name == "message" for name, _ in events)
    assert "accepted" in events[0][1]
    assert "finalAnswer" in events[-1][1]
    assert sum("finalAnswer" in data for _, data in events) == 1
    deltas = "".join(d["answerDelta"]["text"] for _, d in events if "answerDelta" in d)
    assert deltas == events[-1][1]["finalAnswer"]["text"]

    trace_id = uuid.uuid4().hex
    caller = await client.get(
        "/v1/caller", headers={**_auth(key), "traceparent": f"00-{trace_id}-{'1' * 16}-01"}
    )
    assert caller.status_code == 200, caller.text
    # The call joined the caller's trace, and says so as a gRPC call does (x-trace-id).
    assert caller.headers.get("x-trace-id") == trace_id, caller.headers
    assert {"ask", "ingest", "teach"} <= set(caller.json()["scopes"])
    assert caller.json()["keyId"] and key not in caller.text


async def test_ask_sql_over_http(stack: ProcessStack, client: httpx.AsyncClient) -> None:
    key = await _key(stack)
    reply = await client.post("/v1:askSql", headers=_auth(key), json={"question": COUNTABLE})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["outcome"] == "SQL_ASK_OUTCOME_ANSWERED", body
    assert body["result"]["rows"]


# -- refusals ----------------------------------------------------------------------------


async def test_keys_are_checked_by_the_gateway_and_the_edge(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    missing = await client.get("/v1/caller")
    assert (missing.status_code, _reason(missing.json())) == (401, "API_KEY_MISSING")
    bad = await client.get("/v1/caller", headers=_auth("tdm_nope_" + "x" * 40))
    assert (bad.status_code, _reason(bad.json())) == (401, "API_KEY_INVALID")
    # Another spelling is refused by the edge itself, as JSON, before the face sees it.
    spelled = await client.get("/v1/caller", headers={"authorization": "bearer abc"})
    assert (spelled.status_code, _reason(spelled.json())) == (401, "AUTHORIZATION_MALFORMED")
    assert spelled.json()["code"] == 16
    # A second Authorization header: nginx's own 400, as JSON for an HTTP client.
    twice = await client.get(
        "/v1/caller", headers=[("authorization", "Bearer a"), ("authorization", "Bearer b")]
    )
    assert (twice.status_code, _reason(twice.json())) == (400, "REQUEST_MALFORMED")


async def test_a_key_without_the_scope_is_403_naming_it(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    key = await _key(stack, ("ask",))
    reply = await client.post(
        "/v1/documents:ingest",
        headers=_auth(key),
        json={"documents": [{"documentId": "d", "text": "hello"}]},
    )
    assert reply.status_code == 403, reply.text
    assert _reason(reply.json()) == "API_KEY_SCOPE_MISSING"
    (info,) = [d for d in reply.json()["details"] if "reason" in d]
    assert info["metadata"] == {"scope": "ingest"}


async def test_a_spent_quota_is_429_with_retry_after(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    key = await _key(stack)
    replies = await asyncio.gather(
        *(client.get("/v1/caller", headers=_auth(key)) for _ in range(60))
    )
    refused = [r for r in replies if r.status_code == 429]
    assert refused, [r.status_code for r in replies]
    assert {_reason(r.json()) for r in refused} == {"QUOTA_EXCEEDED"}
    assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
    assert {r.status_code for r in replies} <= {200, 429}


async def test_bad_fields_are_400_naming_the_field(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    key = await _key(stack)
    wrong_type = await client.post("/v1:search", headers=_auth(key), json={"topK": "many"})
    assert wrong_type.status_code == 400
    assert _violations(wrong_type.json()) == ["topK"]
    unknown = await client.post("/v1:search", headers=_auth(key), json={"query": "x", "k": 1})
    assert (unknown.status_code, _violations(unknown.json())) == (400, ["k"])
    # The gateway's own validation, its field name.
    empty = await client.post("/v1:search", headers=_auth(key), json={"query": ""})
    assert empty.status_code == 400
    assert _violations(empty.json()) == ["query"]
    query = await client.get("/v1/conversations?pageSize=-1", headers=_auth(key))
    assert query.status_code == 400
    assert _violations(query.json()) == ["page_size"]


async def test_not_found_and_deadline(stack: ProcessStack, client: httpx.AsyncClient) -> None:
    key = await _key(stack)
    gone = await client.delete("/v1/documents/no-such-document", headers=_auth(key))
    assert (gone.status_code, _reason(gone.json())) == (404, "DOCUMENT_NOT_FOUND")
    allowed = await client.delete(
        "/v1/documents/no-such-document?allowMissing=true", headers=_auth(key)
    )
    assert allowed.status_code == 200 and allowed.json()["deleted"] is False
    late = await client.post(
        "/v1:ask",
        headers={**_auth(key), "x-tandem-timeout": "0.001"},
        json={"question": QUESTION},
    )
    assert late.status_code == 504, late.text
    assert late.json()["code"] == 4


# -- the OpenAPI document against the running face ------------------------------------


def _validate(document: dict[str, Any], schema: dict[str, Any], instance: Any) -> None:
    jsonschema.validate(
        instance,
        {**schema, "components": document["components"]},
        cls=jsonschema.Draft202012Validator,
    )


async def _within_quota(
    client: httpx.AsyncClient, verb: str, url: str, **kwargs: Any
) -> httpx.Response:
    """The request, sent again after the Retry-After a 429 names (this module's stack has
    a quota of 5 a second, burst 20, for the quota test; a walk of every path spends it
    on a fast machine). A client that honours Retry-After is what the 429 asks for."""
    for _ in range(20):
        got = await client.request(verb, url, **kwargs)
        if got.status_code != 429:
            return got
        await asyncio.sleep(float(got.headers.get("retry-after", "1")))
    return got


async def test_every_path_of_the_openapi_document_answers_and_replies_fit_it(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    reply = await client.get("/openapi.json")
    assert reply.status_code == 200
    document = reply.json()
    assert document["openapi"].startswith("3.")
    # Every route the face serves (the descriptor walk) is in the document, and no more.
    listed = {(verb.upper(), path) for path, ops in document["paths"].items() for verb in ops}
    assert listed == {(r.verb, r.template) for r in gateway_routes()}

    key = await _key(stack)
    for path, operations in document["paths"].items():
        for verb, operation in operations.items():
            url = path.replace("{", "").replace("}", "")  # a placeholder id
            kwargs: dict[str, Any] = {"headers": _auth(key)}
            if "application/json" in operation.get("requestBody", {}).get("content", {}):
                kwargs["json"] = {}
            got = await _within_quota(client, verb.upper(), url, **kwargs)
            # Routed: the gateway answered (success or its own refusal), never "no route".
            assert got.status_code != 404 or _reason(got.json()) != "ROUTE_NOT_FOUND", path
            assert got.status_code not in (405, 501), (verb, path, got.text)
            if got.headers.get("content-type", "").startswith("application/json"):
                content = operation["responses"]["200" if got.status_code == 200 else "default"]
                schema = content["content"].get("application/json", {}).get("schema")
                if schema is not None:
                    _validate(document, schema, got.json())

    # Replies with content, checked against their schemas.
    search = document["paths"]["/v1:search"]["post"]["responses"]["200"]["content"]
    await asyncio.sleep(4.0)  # the walk above may have spent the tenant's burst
    await _upload(client, key, "schema-check")
    hits = await _within_quota(
        client, "POST", "/v1:search", headers=_auth(key), json={"query": "hotels"}
    )
    assert hits.json()["hits"]
    _validate(document, search["application/json"]["schema"], hits.json())
    ask = document["paths"]["/v1:ask"]["post"]["responses"]["200"]["content"]
    answer = await _within_quota(
        client, "POST", "/v1:ask", headers=_auth(key), json={"question": QUESTION}
    )
    _validate(document, ask["application/json"]["schema"], answer.json())


async def test_sse_events_reach_the_client_while_the_answer_is_still_being_made(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    """With retrieval paused, the events before the semantic step arrive over HTTP: the
    face and the edge stream them as the gateway sends them, holding none back."""
    key = await _key(stack)
    arrived: list[tuple[str, bool]] = []  # (event kind, whether retrieval was still held)
    finished: list[str] = []  # the semantic steps' statuses
    await asyncio.to_thread(stack.pause, "retrieval")
    held = True
    try:
        async with client.stream(
            "POST", "/v1:streamAsk", headers=_auth(key), json={"question": BOTH_ENGINES}
        ) as reply:
            assert reply.status_code == 200
            async for line in reply.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[len("data: ") :])
                kind = next(k for k in event if k != "elapsed")
                arrived.append((kind, held))
                semantic = kind == "stepStarted" and (
                    event["stepStarted"].get("tool") == "TOOL_SEMANTIC_SEARCH"
                )
                step = event.get("stepFinished", {}).get("step", {})
                if step.get("tool") == "TOOL_SEMANTIC_SEARCH":
                    finished.append(step["status"])
                if held and semantic:
                    await asyncio.to_thread(stack.resume, "retrieval")
                    held = False
    finally:
        await asyncio.to_thread(stack.resume, "retrieval")
    kinds = [kind for kind, _ in arrived]
    assert kinds[0] == "accepted" and kinds[-1] == "finalAnswer", kinds
    assert arrived[0][1] and "stepStarted" in [k for k, h in arrived if h], arrived
    assert not arrived[-1][1], arrived
    # The step ran once retrieval was back: the client saw it start in time (a face or
    # edge holding the events back would have let retrieval's wait run out first).
    assert finished and set(finished) <= {"STEP_STATUS_SUCCEEDED", "STEP_STATUS_EMPTY"}, finished


# -- privacy ------------------------------------------------------------------------------


async def test_the_face_and_the_edge_log_no_question_query_body_or_key(
    stack: ProcessStack, client: httpx.AsyncClient
) -> None:
    key = await _key(stack)
    canary = new_canary()
    auth = _auth(key)
    await client.post("/v1:ask", headers=auth, json={"question": f"What is {canary}?"})
    await client.post("/v1:search", headers=auth, json={"query": canary})
    await client.get("/v1/schema", headers=auth, params={"question": canary})
    await client.post("/v1:search", headers=auth, json={"topK": canary})  # 400 echoes it
    await client.post("/v1:streamAsk", headers=auth, json={"question": canary})
    await asyncio.sleep(3.0)  # nginx flushes its access log every 2 s
    face = stack.log_path("rest").read_text(errors="replace")
    edge = json.dumps(stack.edge_access_log())
    assert "/v1:search" in edge, "the edge's access log was not written"
    for text in (face, edge):
        assert canary not in text
        # The secret is everything after ``tdm_<key id>_``: base64url, so it may hold "_"
        # itself, and its last "_"-separated piece can be a single letter.
        assert key not in text and key.split("_", 2)[2] not in text


# -- a dead dependency (last: it stops a service) -------------------------------------


async def test_a_dead_sql_service_is_503_for_ask_sql(
    stack: ProcessStack, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    key = await _key(stack)
    await asyncio.to_thread(stack.kill, "sql")
    try:
        reply = await client.post("/v1:askSql", headers=_auth(key), json={"question": COUNTABLE})
        assert reply.status_code == 503, reply.text
        assert _reason(reply.json()) == "DEPENDENCY_UNAVAILABLE"
        assert reply.headers.get("retry-after")
        # Search does not need SQL: the face and the gateway keep serving.
        ok = await client.get("/v1/caller", headers=_auth(key))
        assert ok.status_code == 200
    finally:
        await asyncio.to_thread(stack.start_service, "sql")
