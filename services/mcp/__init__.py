"""``tandem mcp``: Tandem's tools for agents over the Model Context Protocol (stdio and
streamable HTTP), speaking only to the gateway's public API with the caller's own key."""

from services.mcp._gateway import Credentials, GatewayClient, GatewayError
from services.mcp._server import (
    build_server,
    configure_mcp_logging,
    header_credentials,
    serve_http,
    serve_stdio,
)
from services.mcp._settings import McpSettings
from services.mcp._tools import TEACH_TOOL, TOOLS

__all__ = [
    "TEACH_TOOL",
    "TOOLS",
    "Credentials",
    "GatewayClient",
    "GatewayError",
    "McpSettings",
    "build_server",
    "configure_mcp_logging",
    "header_credentials",
    "serve_http",
    "serve_stdio",
]
