"""``tandem mcp`` end to end: the SDK's own client (stdio and streamable HTTP) against
the MCP server as a process, in front of the real gateway, router, retrieval, SQL and
embedding services on the embedded Postgres. Every tool, teach_sql offered only to keys
holding ``teach``, and every failure a tool error naming the gateway's status and reason
(a key without the scope, a bad key, a dead SQL service) while the server keeps serving.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from gateway import Scope
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tests.integration.gateway.stack import (
    Gateway,
    Sql,
    bearer,
    start_gateway,
    start_router,
    start_sql,
)
from tests.integration.retrieval.stack import new_tenant, start_embedding, start_retrieval
from tests.privacy import assert_no_canary, new_canary

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
ENTRY = "import sys; from services.cli import main; sys.exit(main(sys.argv[1:]))"
DOC = rpb.DocumentInput(
    document_id="travel-policy",
    title="Travel policy",
    text="# Hotels\n\nEmployees may book hotels up to 180 euros per night in Berlin.\n",
    content_type=rpb.CONTENT_TYPE_MARKDOWN,
)
QUESTION = "How much may employees spend on hotels per night in Berlin?"
COUNTABLE = "How many companies are there?"
PER_COUNTRY = "How many companies are there per country?"
TEACH_SQL = "SELECT count(*) AS companies FROM companies"
ALL_TOOLS = {"ask", "search", "ask_sql", "list_databases", "describe_schema", "teach_sql"}


@dataclass
class Stack:
    gateway: Gateway
    sql: Sql
    teach_key: str  # every scope
    ask_key: str  # ask only


@pytest.fixture
async def stack(pg_url, real_embedder, telemetry_sink) -> AsyncIterator[Stack]:
    async with AsyncExitStack() as stack:
        embedding = await start_embedding(real_embedder, telemetry_sink("embedding").telemetry)
        stack.push_async_callback(embedding.close)
        address = embedding.server.address
        retrieval = await start_retrieval(pg_url, address, telemetry_sink("retrieval").telemetry)
        stack.push_async_callback(retrieval.close)
        sql = await start_sql(pg_url, telemetry_sink("sql").telemetry, embedding_addr=address)
        stack.push_async_callback(sql.close)
        router = await start_router(
            retrieval.server.address, sql.address, telemetry_sink("router").telemetry
        )
        stack.push_async_callback(router.close)
        gateway = await start_gateway(
            pg_url,
            telemetry_sink("gateway").telemetry,
            router_addr=router.address,
            retrieval_addr=retrieval.server.address,
            sql_addr=sql.address,
        )
        stack.push_async_callback(gateway.close)
        tenant = new_tenant(pg_url, "mcp")
        teach_key = await gateway.key(tenant)
        ask_key = await gateway.key(tenant, scopes=(Scope.ASK,))
        ingest = gpb.GatewayServiceIngestDocumentsRequest(documents=[DOC])
        events = [e async for e in gateway.stub.IngestDocuments(ingest, metadata=bearer(teach_key))]
        assert events[-1].summary.documents_included == 1
        yield Stack(gateway, sql, teach_key, ask_key)


def _env(gateway: str, key: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TANDEM_")}
    env["TANDEM_GATEWAY"] = gateway
    env["TANDEM_MCP_TIMEOUT_S"] = "30"
    if key:
        env["TANDEM_API_KEY"] = key
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(gateway: str, log: Path) -> Iterator[str]:
    """``tandem mcp --http`` as a process logging at DEBUG into ``log``; yields its URL."""
    port = _free_port()
    env = _env(gateway)
    env["LOG_LEVEL"] = "DEBUG"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", ENTRY, "mcp", "--http", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the MCP server did not listen"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
        assert proc.poll() is None, "the MCP server died"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def http_client(
    url: str, key: str | None, *extra: tuple[str, str], **headers: str
) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending ``key`` as a bearer token (and any
    ``extra`` headers, repeats included)."""
    sent = [*headers.items(), *extra]
    if key is not None:
        sent.append(("Authorization", f"Bearer {key}"))
    async with (
        httpx2.AsyncClient(headers=sent) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    return str(result.content[0].text)


async def _every_tool(client: Client, *, teach: bool) -> None:
    """Each tool once, asserting the structured result an agent reads."""
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == (ALL_TOOLS if teach else ALL_TOOLS - {"teach_sql"})

    asked = await client.call_tool("ask", {"question": QUESTION, "mode": "retrieve"})
    assert not asked.is_error, asked.content
    answer = asked.structured_content
    assert "180" in answer["answer"]
    cited = answer["citations"][0]
    assert cited["document_id"] == "travel-policy"
    assert cited["locator"] and cited["quote"]
    assert answer["conversation_id"]

    found = await client.call_tool("search", {"query": "hotel budget Berlin", "top_k": 3})
    assert not found.is_error, found.content
    assert found.structured_content["hits"][0]["document_id"] == "travel-policy"

    counted = await client.call_tool("ask_sql", {"question": PER_COUNTRY})
    assert not counted.is_error, counted.content
    result = counted.structured_content["result"]
    assert "companies" in result["sql"].lower()
    assert len(result["columns"]) == 2 and isinstance(result["rows"][0][1], int)
    assert result["chart"]["data"]["values"]  # the Vega-Lite spec, data inlined

    listed = await client.call_tool("list_databases", {})
    assert not listed.is_error, listed.content
    (database,) = listed.structured_content["databases"]
    assert database["name"] == "warehouse" and database["default"]
    assert any(t.endswith("companies") for t in database["tables"])

    schema = await client.call_tool("describe_schema", {"database": "warehouse"})
    assert not schema.is_error, schema.content
    tables = {t["name"]: t for t in schema.structured_content["tables"]}
    assert "name" in {c["name"] for c in tables["companies"]["columns"]}

    taught = await client.call_tool("teach_sql", {"question": COUNTABLE, "sql": TEACH_SQL})
    if teach:
        assert not taught.is_error, taught.content
        assert taught.structured_content["pair_id"]
    else:
        assert "PERMISSION_DENIED API_KEY_SCOPE_MISSING" in _error_text(taught)


async def test_stdio_serves_every_tool_to_a_desktop_client(stack: Stack) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", ENTRY, "mcp"],
        env=_env(stack.gateway.address, stack.teach_key),
        cwd=REPO,
    )
    async with Client(params) as client:
        await _every_tool(client, teach=True)


async def test_http_takes_each_requests_key_and_names_every_refusal(
    stack: Stack, tmp_path: Path
) -> None:
    canary = new_canary()
    log = tmp_path / "mcp.log"
    with http_server(stack.gateway.address, log) as url:
        async with http_client(url, stack.ask_key) as client:
            await _every_tool(client, teach=False)
            asked = await client.call_tool("ask", {"question": f"Is {canary} allowed in hotels?"})
            assert not asked.is_error, asked.content
        async with http_client(url, "tdm_not-a-key") as client:
            refused = await client.call_tool("search", {"query": "hotels"})
            assert _error_text(refused).startswith("UNAUTHENTICATED API_KEY_INVALID")
        async with http_client(url, None) as client:
            refused = await client.call_tool("search", {"query": "hotels"})
            assert _error_text(refused).startswith("UNAUTHENTICATED API_KEY_MISSING")
        # Two Authorization headers reach the gateway as two, and are refused there.
        twice = ("Authorization", f"Bearer {stack.teach_key}")
        async with http_client(url, stack.ask_key, twice) as client:
            refused = await client.call_tool("search", {"query": "hotels"})
            assert _error_text(refused).startswith("UNAUTHENTICATED AUTHORIZATION_MALFORMED")
        # Principal headers reach the gateway as sent: from a service key they are refused
        # (ACT_AS_NOT_GRANTED), never silently dropped.
        async with http_client(url, stack.ask_key, **{"x-tandem-principal": "alice"}) as client:
            refused = await client.call_tool("search", {"query": "hotels"})
            assert _error_text(refused).startswith("PERMISSION_DENIED ACT_AS_NOT_GRANTED")
        async with http_client(url, stack.teach_key) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "teach_sql" in names
            # A dead SQL service: a tool error naming UNAVAILABLE, and the server goes on.
            await stack.sql.close()
            dead = await client.call_tool("ask_sql", {"question": COUNTABLE})
            assert _error_text(dead).startswith("UNAVAILABLE DEPENDENCY_UNAVAILABLE")
            alive = await client.call_tool("search", {"query": "hotel budget Berlin"})
            assert not alive.is_error, alive.content
    # Privacy: the server's own log (at DEBUG) holds neither a question nor a key.
    lines = log.read_text().splitlines()
    assert any('"tool failed"' in line for line in lines)  # the refusals were logged
    assert_no_canary(canary, logs=lines)
    for key in (stack.ask_key, stack.teach_key):
        assert_no_canary(key, logs=lines)
