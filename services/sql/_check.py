"""``tandem sql-check``: what the SQL service will do with each configured database, and
why, found the way the service finds it but without starting it or creating anything."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from services.common import SettingsError, embedded_server_url
from services.sql._settings import DEFAULT_TARGET, SqlSettings
from services.sql.catalog import Catalog, describe, describe_families, load_catalog
from services.sql.demo import reader_url
from services.sql.targets import (
    ANY_TENANT,
    READ_ONLY_RECIPE,
    Capability,
    EngineTarget,
    Severity,
    TargetConfig,
    connect_args,
    connect_kwargs,
    engine_of,
    file_engine,
    file_problem,
    mysql_unreachable,
    refusal,
    refusal_message,
    role_capabilities,
)


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
    if file_engine(config.url) is not None:
        return await _check_file(config, tenants)
    if engine_of(config.url) is not None:
        return await _check_mysql(config, tenants)
    try:
        async with await psycopg.AsyncConnection.connect(
            config.url, **connect_kwargs(connect_timeout_s=5.0)
        ) as conn:
            capabilities = await role_capabilities(conn)
            served = refusal(config, capabilities) is None
            schema = await _schema(conn, config) if served else []
            hidden = await _unreadable(conn) if served else []
    except psycopg.Error as exc:
        if demo:
            return DatabaseCheck(
                config.name, "set-up", tenants, ("the demo warehouse is created at start",)
            )
        return DatabaseCheck(config.name, "unreachable", tenants, (why_unreachable(exc),))
    refused = refusal(config, capabilities)
    if refused is not None:
        return DatabaseCheck(
            config.name, "refuse", tenants, (refusal_message(config.name, refused),)
        )
    reasons = [_explain(c) for c in capabilities]
    if hidden:
        shown = ", ".join(hidden[:_HIDDEN_SHOWN]) + (
            f" and {len(hidden) - _HIDDEN_SHOWN} more" if len(hidden) > _HIDDEN_SHOWN else ""
        )
        reasons.append(
            f"warning: its role cannot read {len(hidden)} table(s): {shown}; questions about "
            "them get no answer. Grant SELECT on them, and for tables created later run "
            "ALTER DEFAULT PRIVILEGES FOR ROLE <owner> IN SCHEMA <schema> GRANT SELECT ON "
            "TABLES TO <role>"
        )
    return DatabaseCheck(config.name, "serve", tenants, tuple(reasons), tuple(schema))


# How many unreadable tables a check names before counting the rest.
_HIDDEN_SHOWN = 8
# Why a connection failed, by what Postgres or the network said: the cause in one line,
# with the fix (a wrong password once printed only "unreachable … OperationalError").
_CONNECT_CAUSES: tuple[tuple[str, str], ...] = (
    (
        "password authentication failed",
        "authentication failed: check the role's password in the URL",
    ),
    ("no password supplied", "the server wants a password: add it to the URL"),
    ("does not exist", "{message}: check the name in the URL"),
    ("connection refused", "connection refused: is Postgres running at that host and port?"),
    ("could not translate host name", "unknown host: check the host in the URL"),
    ("no such file or directory", "no Postgres socket there: check the host in the URL"),
    ("timeout expired", "no answer within 5 s: a firewall, or the wrong host or port"),
    ("pg_hba.conf", "the server refuses this client (pg_hba.conf): allow it there"),
)


def why_unreachable(exc: BaseException) -> str:
    """One line: why a database could not be reached, and what to change."""
    message = (getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)).strip()
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), type(exc).__name__)
    # libpq prefixes the server's words with where it tried ("connection to server on
    # socket … failed: FATAL:  …"): the server's words are the cause.
    said = first.rpartition("FATAL:")[2].strip() or first
    lowered = message.lower()
    for needle, cause in _CONNECT_CAUSES:
        if needle in lowered:
            return cause.format(message=said)
    return said


async def _unreadable(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    """Tables and views outside the system schemas that the role cannot SELECT from (or
    whose schema it may not use): invisible to the catalog, so questions about them
    silently find nothing."""
    cur = await conn.execute(
        """
        SELECT n.nspname || '.' || c.relname
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
          AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND n.nspname NOT LIKE 'pg_toast%%' AND n.nspname NOT LIKE 'pg_temp%%'
          AND NOT (has_schema_privilege(n.oid, 'USAGE')
                   AND has_table_privilege(c.oid, 'SELECT'))
        ORDER BY 1
        """
    )
    return [row[0] for row in await cur.fetchall()]


async def _schema(conn: psycopg.AsyncConnection[Any], config: TargetConfig) -> list[str]:
    """The tables left out, the look-alike families and the keys and joins the service
    would use, found as it finds them at catalog load; the glossary's joins it could not
    resolve, named."""
    catalog, problems = await load_catalog(
        conn, config.name, exclude=config.exclude, joins=config.joins
    )
    return _catalog_lines(config, catalog, problems)


def _catalog_lines(config: TargetConfig, catalog: Catalog, problems: Sequence[str]) -> list[str]:
    """What the check says of a loaded catalog, whichever engine serves it: the tables
    left out, the look-alike families, the keys and joins the service would use, and the
    glossary's joins it could not resolve."""
    lines = (
        [f"excluded: {', '.join(config.exclude)} (SQL_EXCLUDE_TABLES)"] if config.exclude else []
    )
    lines += describe_families(catalog) + describe(catalog)
    return lines + [f"glossary join ignored: {problem}" for problem in problems]


def _explain(capability: Capability) -> str:
    if capability.severity is Severity.WARN:
        return f"warning: its role holds {capability.privilege}; run: {capability.fix}"
    return f"UNSAFE: its role holds {capability.privilege} (allowed by configuration)"


async def _check_file(config: TargetConfig, tenants: str) -> DatabaseCheck:
    """A SQLite or DuckDB target: the file is there, readable and of the engine named,
    and its catalog loads as the service loads it (read-only: the service never writes
    the file, whatever the file's permissions)."""
    problem = await asyncio.to_thread(file_problem, config.url)
    if problem is not None:
        return DatabaseCheck(config.name, "unreachable", tenants, (problem,))
    target = EngineTarget(config, pool_max_size=1)
    try:
        if not await target.open():
            return DatabaseCheck(
                config.name, "unreachable", tenants, ("the file could not be opened read-only",)
            )
        catalog, problems = await target.warehouse.load_catalog(config.exclude, config.joins)
    except psycopg.Error as exc:
        return DatabaseCheck(config.name, "unreachable", tenants, (str(exc),))
    finally:
        await target.close()
    lines = _catalog_lines(config, catalog, problems)
    engine = file_engine(config.url)
    assert engine is not None
    reasons = [f"{engine[0].value} file opened read-only at the connection"]
    if await asyncio.to_thread(os.access, engine[1], os.W_OK):
        reasons.append(
            "warning: the service's user may write this file; it is only ever opened "
            f"read-only, but a read-only file is safer: chmod a-w {engine[1]}"
        )
    return DatabaseCheck(config.name, "serve", tenants, tuple(reasons), tuple(lines))


async def _check_mysql(config: TargetConfig, tenants: str) -> DatabaseCheck:
    """A MySQL or MariaDB target: reachable with its user (or why not: authentication,
    a missing database, an unreachable host), a SELECT-only user (or refused, with the
    recipe for one), and its catalog as the service loads it."""
    problem = await asyncio.to_thread(mysql_unreachable, config.url)
    if problem is not None:
        return DatabaseCheck(config.name, "unreachable", tenants, (problem,))
    target = EngineTarget(config, pool_max_size=1)
    try:
        if not await target.open():
            return DatabaseCheck(
                config.name, "unreachable", tenants, ("the server stopped answering",)
            )
        refused = target.refusal
        if refused is not None:
            database = str(connect_args(config.url)["database"] or "")
            return DatabaseCheck(
                config.name,
                "refuse",
                tenants,
                (
                    refusal_message(config.name, refused),
                    "a read-only user: " + READ_ONLY_RECIPE.format(database=database),
                ),
            )
        catalog, problems = await target.warehouse.load_catalog(config.exclude, config.joins)
    except psycopg.Error as exc:
        return DatabaseCheck(config.name, "unreachable", tenants, (str(exc),))
    finally:
        await target.close()
    lines = _catalog_lines(config, catalog, problems)
    reasons = [_explain(c) for c in target.capabilities]
    reasons.append("statements run in a READ ONLY transaction with the statement timeout")
    return DatabaseCheck(config.name, "serve", tenants, tuple(reasons), tuple(lines))
