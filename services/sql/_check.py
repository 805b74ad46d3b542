"""``tandem sql-check``: what the SQL service will do with each configured database, and
why, found the way the service finds it but without starting it or creating anything."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import psycopg

from services.common import SettingsError, embedded_server_url
from services.sql._catalog import introspect
from services.sql._joins import describe, infer_joins, resolve_joins
from services.sql._settings import DEFAULT_TARGET, SqlSettings
from services.sql._targets import (
    ANY_TENANT,
    Capability,
    Severity,
    TargetConfig,
    connect_kwargs,
    refusal,
    refusal_message,
    role_capabilities,
)
from services.sql._warehouse import reader_url


@dataclass(frozen=True)
class DatabaseCheck:
    """One database's fate: ``action`` is serve, refuse, unreachable or set-up."""

    name: str
    action: str
    tenants: str
    reasons: tuple[str, ...]
    # a served database's keys and joins, declared and inferred with their evidence
    schema: tuple[str, ...] = ()

    @property
    def blocks_start(self) -> bool:
        return self.action == "refuse"


async def check_databases(settings: SqlSettings) -> list[DatabaseCheck]:
    """Every database the service would serve with these settings, checked as it would."""
    from services.sql._server import serves_demo_warehouse, target_configs  # noqa: PLC0415

    demo = serves_demo_warehouse(settings)
    warehouse: str | None = settings.warehouse_url
    if demo:
        admin = settings.admin_url
        if admin is None:
            admin = await asyncio.to_thread(embedded_server_url, settings.data_dir, "postgres")
        warehouse = reader_url(admin, settings.warehouse_database, settings.reader_role)
    configs = target_configs(settings, warehouse, demo=demo)
    if settings.default_database not in {c.name for c in configs}:
        raise SettingsError(
            f"SQL_DEFAULT_DATABASE names {settings.default_database!r}, which is not configured"
        )
    return [await _check(config, demo=demo and config.name == DEFAULT_TARGET) for config in configs]


async def _check(config: TargetConfig, *, demo: bool) -> DatabaseCheck:
    tenants = (
        "every tenant (*)"
        if ANY_TENANT in config.tenants
        else ", ".join(sorted(config.tenants)) or "none (list it in SQL_DATABASE_TENANTS)"
    )
    try:
        async with await psycopg.AsyncConnection.connect(
            config.url, **connect_kwargs(connect_timeout_s=5.0)
        ) as conn:
            capabilities = await role_capabilities(conn)
            schema = await _schema(conn, config) if refusal(config, capabilities) is None else []
    except psycopg.Error as exc:
        if demo:
            return DatabaseCheck(
                config.name, "set-up", tenants, ("the demo warehouse is created at start",)
            )
        reason = (getattr(exc.diag, "message_primary", None) or type(exc).__name__).strip()
        return DatabaseCheck(config.name, "unreachable", tenants, (reason.splitlines()[0],))
    refused = refusal(config, capabilities)
    if refused is not None:
        return DatabaseCheck(
            config.name, "refuse", tenants, (refusal_message(config.name, refused),)
        )
    return DatabaseCheck(
        config.name, "serve", tenants, tuple(_explain(c) for c in capabilities), tuple(schema)
    )


async def _schema(conn: psycopg.AsyncConnection[Any], config: TargetConfig) -> list[str]:
    """The keys and joins the service would use, found as it finds them at catalog load;
    the glossary's joins it could not resolve, named."""
    catalog = await introspect(conn, config.name)
    declared, problems = resolve_joins(catalog, config.joins)
    lines = describe(await infer_joins(conn, catalog, declared))
    return lines + [f"glossary join ignored: {problem}" for problem in problems]


def _explain(capability: Capability) -> str:
    if capability.severity is Severity.WARN:
        return f"warning: its role holds {capability.privilege}; run: {capability.fix}"
    return f"UNSAFE: its role holds {capability.privilege} (allowed by configuration)"
