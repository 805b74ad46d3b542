"""``tandem mcp``: serve Tandem's tools to agents over MCP (stdio by default; ``--http
HOST:PORT`` for streamable HTTP). It reaches only the gateway, with the caller's key."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.cli._main import Commands


def register(commands: Commands) -> None:
    mcp = commands.top.add_parser(
        "mcp",
        help="serve the tools to agents over MCP (stdio; --http for remote clients)",
        description="An MCP server for agents and IDEs: ask, search, ask_sql, list_databases, "
        "describe_schema, and teach_sql for keys with the teach scope. Talks only to the "
        "gateway. stdio: the key from $TANDEM_API_KEY; HTTP: each request's "
        "Authorization: Bearer <key>.",
    )
    mcp.add_argument(
        "--http",
        default=None,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    mcp.add_argument(
        "--gateway",
        default=None,
        help="gateway address (default: $TANDEM_GATEWAY or 127.0.0.1:50051)",
    )
    mcp.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    from services.mcp import (  # noqa: PLC0415
        McpSettings,
        configure_mcp_logging,
        serve_http,
        serve_stdio,
    )

    settings = McpSettings.from_env(os.environ)
    if args.gateway:
        settings = replace(settings, gateway=args.gateway)
    if args.http is None:
        if not settings.api_key:
            print("error: no API key: set TANDEM_API_KEY", file=sys.stderr)
            return 1
        configure_mcp_logging(settings.log_level)
        asyncio.run(serve_stdio(settings))
        return 0
    host, _, port = args.http.rpartition(":")
    if not host or not port.isdigit():
        print(f"error: --http takes HOST:PORT, got {args.http!r}", file=sys.stderr)
        return 2
    configure_mcp_logging(settings.log_level)
    print(f"MCP server at http://{host}:{port}/mcp (gateway {settings.gateway})", file=sys.stderr)
    asyncio.run(serve_http(settings, host.strip("[]"), int(port)))
    return 0
