"""The MCP server's settings, read once from the environment at start (fail fast, naming
the variable). The gateway address and key are the CLI's own variables, so an agent's
configuration reads like a shell that runs ``tandem ask``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common import Env, SettingsError, TelemetrySettings

DEFAULT_GATEWAY = "127.0.0.1:50051"
# Rows handed to an agent per result: enough to read an answer, small enough for a
# context window; the full count is reported alongside.
DEFAULT_MAX_ROWS = 50
MAX_ROWS = 1000


@dataclass(frozen=True)
class McpSettings:
    """Where the gateway is, how long a tool call may take, and how much of a result an
    agent receives.

    ``api_key`` and ``principal_headers`` are stdio's credentials (one user per process);
    over HTTP every request brings its own and these are ignored.
    """

    gateway: str = DEFAULT_GATEWAY
    timeout_s: float = 60.0
    max_rows: int = DEFAULT_MAX_ROWS
    api_key: str = ""
    principal_headers: tuple[tuple[str, str], ...] = ()
    # Databases list_databases also asks about, beyond the default (the gateway has no
    # RPC that lists them; each named one is described and kept when the key may read it).
    databases: tuple[str, ...] = ()
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> McpSettings:
        """Reads ``TANDEM_GATEWAY``, ``TANDEM_API_KEY``, ``TANDEM_PRINCIPAL*``,
        ``TANDEM_MCP_*`` and ``LOG_LEVEL``."""
        env = Env(environ)
        principal = (
            ("x-tandem-principal", env.get_optional("TANDEM_PRINCIPAL")),
            ("x-tandem-principal-groups", env.get_optional("TANDEM_PRINCIPAL_GROUPS")),
            ("x-tandem-principal-attributes", env.get_optional("TANDEM_PRINCIPAL_ATTRIBUTES")),
        )
        headers = tuple((name, value) for name, value in principal if value is not None)
        if headers and headers[0][0] != "x-tandem-principal":
            raise SettingsError("TANDEM_PRINCIPAL_GROUPS/_ATTRIBUTES need TANDEM_PRINCIPAL")
        databases = tuple(
            name.strip()
            for name in env.get_str("TANDEM_MCP_DATABASES", "").split(",")
            if name.strip()
        )
        return cls(
            gateway=env.get_str("TANDEM_GATEWAY", DEFAULT_GATEWAY),
            timeout_s=env.get_float("TANDEM_MCP_TIMEOUT_S", 60.0, minimum=1.0),
            max_rows=env.get_int(
                "TANDEM_MCP_MAX_ROWS", DEFAULT_MAX_ROWS, minimum=1, maximum=MAX_ROWS
            ),
            api_key=env.get_str("TANDEM_API_KEY", ""),
            principal_headers=headers,
            databases=databases,
            log_level=TelemetrySettings.from_env("mcp", environ).log_level,
        )
