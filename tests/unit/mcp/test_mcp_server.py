"""The MCP server's own logic over a plain fake of the gateway client, through the SDK's
in-process client: results are bounded and match their output schemas, bad arguments and
gateway errors are tool errors naming the field or the status and reason, a bug in a tool
is a tool error rather than a dead server, and teach_sql is listed only when the key may
teach. Settings name the variable they reject."""

from __future__ import annotations

import ast
import json
import socket
from pathlib import Path
from typing import Any

import grpc
import pytest
from mcp import Client

from services.cli._main import main
from services.common import SettingsError
from services.mcp import Credentials, GatewayClient, GatewayError, McpSettings, build_server
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import sql_service_pb2 as spb

SPEC = {"mark": "bar", "data": {"values": [{"k": "a", "v": 1}]}}


def _sql_reply(rows: int) -> gpb.GatewayServiceAskSqlResponse:
    result = spb.SqlResult(
        sql="SELECT k, v FROM t",
        database="warehouse",
        columns=[spb.SqlColumn(name="k"), spb.SqlColumn(name="v")],
        rows=[
            spb.SqlRow(values=[cpb.SqlValue(string_value=f"k{i}"), cpb.SqlValue(int_value=i)])
            for i in range(rows)
        ],
        row_count=rows,
        chart=spb.Chart(kind=spb.CHART_KIND_BAR, vega_lite=json.dumps(SPEC)),
    )
    return gpb.GatewayServiceAskSqlResponse(outcome=spb.SQL_ASK_OUTCOME_ANSWERED, result=result)


class FakeGateway:
    """Answers as the gateway would; records the credentials each call carried."""

    def __init__(self, *, teach: bool = True, error: GatewayError | None = None) -> None:
        self.teach = teach
        self.error = error
        self.seen: list[Credentials] = []

    async def may_teach(self, creds: Credentials) -> bool:
        return self.teach

    async def ask_sql(self, request: Any, creds: Credentials) -> Any:
        self.seen.append(creds)
        if self.error is not None:
            raise self.error
        return _sql_reply(5)

    async def search(self, request: Any, creds: Credentials) -> Any:
        raise RuntimeError("a bug")


def _client(gateway: FakeGateway, **settings: Any) -> Client:
    creds = Credentials.from_key("tdm_secret")
    server = build_server(gateway, McpSettings(**settings), lambda ctx: creds)  # type: ignore[arg-type]
    return Client(server)


async def test_rows_are_bounded_and_the_chart_is_a_spec() -> None:
    gateway = FakeGateway()
    async with _client(gateway, max_rows=2) as client:
        reply = await client.call_tool("ask_sql", {"question": "how many?"})
    assert not reply.is_error, reply.content
    result = reply.structured_content["result"]
    assert result["columns"] == ["k", "v"]
    assert result["rows"] == [["k0", 0], ["k1", 1]]
    assert result["row_count"] == 5 and result["truncated"] is True
    assert result["chart"] == SPEC
    assert gateway.seen[0].metadata() == (("authorization", "Bearer tdm_secret"),)


async def test_teach_sql_is_listed_only_for_keys_that_may_teach() -> None:
    async with _client(FakeGateway(teach=False)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert "teach_sql" not in names and {"ask", "search", "ask_sql"} <= names
    async with _client(FakeGateway(teach=True)) as client:
        assert "teach_sql" in {t.name for t in (await client.list_tools()).tools}


async def test_a_gateway_error_is_a_tool_error_naming_status_and_reason() -> None:
    error = GatewayError("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "rate limit spent", 1.5)
    async with _client(FakeGateway(error=error)) as client:
        reply = await client.call_tool("ask_sql", {"question": "how many?"})
    assert reply.is_error
    text = reply.content[0].text  # type: ignore[union-attr]
    assert text == "RESOURCE_EXHAUSTED QUOTA_EXCEEDED: rate limit spent (retry after 1.5s)"


async def test_bad_arguments_name_the_field_and_a_bug_does_not_end_the_server() -> None:
    async with _client(FakeGateway()) as client:
        empty = await client.call_tool("ask_sql", {"question": "  "})
        assert empty.is_error
        assert empty.content[0].text == "INVALID_ARGUMENT: field question: is required"  # type: ignore[union-attr]
        crashed = await client.call_tool("search", {"query": "x"})
        assert crashed.is_error
        assert crashed.content[0].text.startswith("INTERNAL")  # type: ignore[union-attr]
        still = await client.call_tool("ask_sql", {"question": "how many?"})
        assert not still.is_error


def test_credentials_never_print_the_key() -> None:
    assert "tdm_secret" not in repr(Credentials.from_key("tdm_secret"))


def test_settings_read_the_clis_variables() -> None:
    settings = McpSettings.from_env(
        {
            "TANDEM_GATEWAY": "gw:1",
            "TANDEM_API_KEY": "k",
            "TANDEM_PRINCIPAL": "alice",
            "TANDEM_PRINCIPAL_GROUPS": "sales",
            "TANDEM_MCP_DATABASES": "sales, ops",
        }
    )
    assert settings.gateway == "gw:1" and settings.api_key == "k"
    assert settings.principal_headers == (
        ("x-tandem-principal", "alice"),
        ("x-tandem-principal-groups", "sales"),
    )
    assert settings.databases == ("sales", "ops")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"TANDEM_PRINCIPAL_GROUPS": "sales"}, "TANDEM_PRINCIPAL"),
        ({"TANDEM_MCP_MAX_ROWS": "0"}, "TANDEM_MCP_MAX_ROWS"),
        ({"TANDEM_MCP_TIMEOUT_S": "soon"}, "TANDEM_MCP_TIMEOUT_S"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        McpSettings.from_env(env)


def test_the_cli_refuses_stdio_without_a_key_and_a_malformed_address(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TANDEM_API_KEY", raising=False)
    assert main(["mcp"]) == 1
    assert "TANDEM_API_KEY" in capsys.readouterr().err
    assert main(["mcp", "--http", "nowhere"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err


def test_the_mcp_server_can_reach_nothing_but_the_gateway() -> None:
    """0 calls that bypass the gateway: no internal service's stub, no database driver,
    no other service's package is imported by services/mcp."""
    allowed_tandem = {"tandem.v1.gateway_service_pb2_grpc"}
    package = Path(__file__).resolve().parents[3] / "services" / "mcp"
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith(("psycopg", "gateway")), (source.name, name)
                if name.endswith("_grpc"):
                    assert name in allowed_tandem, (source.name, name)
                if name.startswith("services.") and not name.startswith("services.mcp"):
                    assert name.startswith("services.common."), (source.name, name)


async def test_a_gateway_that_is_not_there_is_named_and_offers_no_teach() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    channel = grpc.aio.insecure_channel(address)
    try:
        client = GatewayClient(channel, address, timeout_s=5.0)
        creds = Credentials.from_key("tdm_x")
        assert await client.may_teach(creds) is False
        with pytest.raises(GatewayError) as caught:
            await client.search(gpb.GatewayServiceSearchRequest(query="q"), creds)
    finally:
        await channel.close()
    assert caught.value.describe() == f"UNAVAILABLE: cannot reach the gateway at {address}"
