"""The MCP server and its two transports: stdio for desktop clients (one user: the key
and principal from the environment) and streamable HTTP for remote ones (every request
brings its own ``Authorization: Bearer <key>`` and principal headers, passed to the
gateway as sent). Tools are listed per caller: ``teach_sql`` only for keys holding the
``teach`` scope. A gateway error is a tool error naming its status and reason; nothing a
tool does ends the server.

Logs carry the tool name and the outcome's status only: never arguments (questions,
SQL), answers, or keys."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import grpc
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from services.common import configure_logging
from services.mcp._gateway import PRINCIPAL_HEADERS, Credentials, GatewayClient, GatewayError
from services.mcp._settings import McpSettings
from services.mcp._tools import TEACH_TOOL, TOOLS, ToolInputError, Tools, ToolSpec

_log = logging.getLogger("services.mcp")
SERVER_NAME = "tandem"
INSTRUCTIONS = (
    "Tandem answers questions over a company's documents and SQL databases. Use `ask` for "
    "questions (it picks documents, SQL or both and cites its sources), `search` to find "
    "passages, `ask_sql` for figures from a database, `list_databases` and "
    "`describe_schema` to see what can be queried."
)

CredentialsOf = Callable[[ServerRequestContext[Any]], Credentials]


def stdio_credentials(settings: McpSettings) -> CredentialsOf:
    """One user per process: the key and principal from the environment."""
    creds = Credentials.from_key(settings.api_key, settings.principal_headers)
    return lambda ctx: creds


def header_credentials(ctx: ServerRequestContext[Any]) -> Credentials:
    """The HTTP request's own ``Authorization`` and principal headers, as sent (the
    gateway judges their form; a missing key is its UNAUTHENTICATED, not ours)."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return Credentials()
    names = ("authorization", *PRINCIPAL_HEADERS)
    return Credentials(tuple((n, v) for n in names for v in headers.getlist(n)))


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
    )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def build_server(
    gateway: GatewayClient, settings: McpSettings, credentials_of: CredentialsOf
) -> Server[Any]:
    """The MCP server over ``gateway``; ``credentials_of`` says who each request is."""
    tools = Tools(gateway, settings.max_rows, settings.databases)
    by_name = {spec.name: spec for spec in TOOLS}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        teach = await gateway.may_teach(credentials_of(ctx))
        listed = [_tool(s) for s in TOOLS if teach or s.name != TEACH_TOOL]
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = by_name.get(params.name)
        if spec is None:
            return _error(f"INVALID_ARGUMENT: no tool named {params.name!r}")
        try:
            result = await spec.run(tools, params.arguments or {}, credentials_of(ctx))
        except GatewayError as exc:
            _log.info("tool failed", extra={"fields": {"tool": spec.name, "status": exc.code}})
            return _error(exc.describe())
        except ToolInputError as exc:
            return _error(str(exc))
        except Exception as exc:
            _log.exception(
                "tool crashed", extra={"fields": {"tool": spec.name, "error": type(exc).__name__}}
            )
            return _error(f"INTERNAL: the MCP server failed ({type(exc).__name__})")
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)], structured_content=result.structured
        )

    return Server(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# The SDK's and the web server's loggers: at DEBUG they would print whole messages
# (arguments, answers); they stay at WARNING whatever LOG_LEVEL says.
_QUIET_LOGGERS = ("mcp", "mcp_types", "uvicorn", "uvicorn.error", "httpx2", "sse_starlette")


def configure_mcp_logging(level: str) -> None:
    """JSON lines on stderr (stdout is stdio's protocol channel), as every process logs."""
    configure_logging("mcp", level, sys.stderr)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))


def _gateway(settings: McpSettings) -> tuple[grpc.aio.Channel, GatewayClient]:
    channel = grpc.aio.insecure_channel(settings.gateway)
    return channel, GatewayClient(channel, settings.gateway, settings.timeout_s)


async def serve_stdio(settings: McpSettings) -> None:
    """Serve one desktop client on stdin/stdout until it closes them."""
    channel, gateway = _gateway(settings)
    server = build_server(gateway, settings, stdio_credentials(settings))
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await channel.close()


async def serve_http(settings: McpSettings, host: str, port: int) -> None:
    """Serve remote clients over streamable HTTP at ``http://HOST:PORT/mcp``.

    Stateless: every request carries its own credentials, so no session outlives a key
    and nothing is kept between requests."""
    import uvicorn  # noqa: PLC0415 — only the HTTP transport needs it

    channel, gateway = _gateway(settings)
    server = build_server(gateway, settings, header_credentials)
    app = server.streamable_http_app(host=host, stateless_http=True, json_response=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    try:
        await uvicorn.Server(config).serve()
    finally:
        await channel.close()
