"""Target databases: each named in configuration, with its own read-only pool and catalog.

Adding a database is configuration (``SQL_DATABASES=name=url;...``), not code. Each
target's user must not be able to write; the service checks that when it first reaches
the database and refuses to serve one whose user can, unless the operator allowed it
(``SQL_ALLOW_WRITABLE``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg_pool

from services.common import InvalidArgument, PermissionDenied, Unavailable
from services.sql._catalog import Catalog, CatalogCache, introspect
from services.sql._values import register_loaders

_log = logging.getLogger("tandem.sql.targets")

# Session settings of every execution connection: values come back in the forms the
# encoder expects, unqualified functions resolve in pg_catalog only, and read-only is
# the default even before the explicit READ ONLY transaction.
_SESSION_OPTIONS = (
    "-c TimeZone=UTC -c IntervalStyle=iso_8601 -c DateStyle=ISO -c standard_conforming_strings=on "
    "-c search_path=pg_catalog -c default_transaction_read_only=on "
    "-c idle_in_transaction_session_timeout=60000"
)


@dataclass(frozen=True)
class TargetConfig:
    """One configured database: its name, a read-only user's URL, who may query it."""

    name: str
    url: str
    allow_writable: bool = False
    tenants: frozenset[str] | None = None

    def allows(self, tenant_id: str) -> bool:
        return self.tenants is None or tenant_id in self.tenants


_WRITE_CHECK = """
SELECT
  r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls,
  EXISTS (
    SELECT 1 FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
      AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
      AND CASE WHEN c.relkind IN ('r', 'p', 'v', 'm', 'f')
          THEN has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') ELSE false END),
  EXISTS (
    SELECT 1 FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'S' AND n.nspname NOT LIKE 'pg\\_%'
      -- CASE: the planner may call the function before filtering on relkind
      AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(c.oid, 'USAGE, UPDATE')
          ELSE false END),
  EXISTS (
    SELECT 1 FROM pg_catalog.pg_namespace n
    WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
      AND has_schema_privilege(n.oid, 'CREATE')),
  has_database_privilege(current_database(), 'CREATE'),
  has_database_privilege(current_database(), 'TEMPORARY'),
  EXISTS (
    SELECT 1 FROM pg_catalog.pg_auth_members m
    JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
    WHERE m.member = r.oid AND (g.rolsuper OR g.rolcreaterole OR g.rolcreatedb))
FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
"""
_WRITE_REASONS = (
    "is a superuser",
    "may create roles",
    "may create databases",
    "bypasses row-level security",
    "may write to a table",
    "may advance a sequence",
    "may create objects in a schema",
    "may create schemas",
    "may create temporary tables",
    "is a member of a privileged role",
)


async def write_capabilities(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    """Every way the connection's user could write (empty for a proper read-only user)."""
    cur = await conn.execute(_WRITE_CHECK)
    row = await cur.fetchone()
    if row is None:
        return ["is not a known role"]
    return [reason for reason, held in zip(_WRITE_REASONS, row, strict=True) if held]


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    register_loaders(conn)


class Target:
    """One database: a pool of read-only connections and its cached catalog."""

    def __init__(
        self,
        config: TargetConfig,
        *,
        pool_max_size: int = 4,
        catalog_ttl_s: float = 300.0,
        statement_timeout_cap_s: float = 30.0,
        connect_timeout_s: float = 5.0,
    ) -> None:
        self.config = config
        options = f"{_SESSION_OPTIONS} -c statement_timeout={int(statement_timeout_cap_s * 1000)}"
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "options": options,
            "application_name": "tandem-sql",
            "connect_timeout": max(1, int(connect_timeout_s)),
        }
        self.pool: psycopg_pool.AsyncConnectionPool[Any] = psycopg_pool.AsyncConnectionPool(
            config.url,
            min_size=1,
            max_size=pool_max_size,
            open=False,
            timeout=connect_timeout_s,
            configure=_configure,
            kwargs=self._connect_kwargs,
            reconnect_timeout=0,
        )
        self.catalog = CatalogCache(self._load_catalog, ttl_s=catalog_ttl_s)
        self._write_checked = False
        self._refusal: list[str] = []

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def refused(self) -> bool:
        return bool(self._refusal)

    async def open(self) -> bool:
        """Open the pool and load the catalog; False (logged) when unreachable for now."""
        await self.pool.open(wait=False)
        try:
            await self.catalog.get()
        except Unavailable as exc:
            _log.warning(
                "target database unreachable at start; will retry on use",
                extra={"fields": {"database": self.name, "error.type": type(exc).__name__}},
            )
            return False
        return True

    async def close(self) -> None:
        await self.pool.close()

    async def ping(self) -> bool:
        """True when a pooled connection answers ``SELECT 1`` within a second (health)."""
        try:
            async with self.pool.connection(timeout=1.0) as conn:
                await conn.execute("SELECT 1")
        except (psycopg.Error, psycopg_pool.PoolTimeout):
            return False
        return True

    async def get_catalog(self) -> Catalog:
        """The catalog, refusing a database whose user turned out to be able to write."""
        catalog = await self.catalog.get()
        self._check_refusal()
        return catalog

    def _check_refusal(self) -> None:
        if self._refusal:
            raise PermissionDenied(
                "this database's user can write; the SQL service refuses to query it",
                reason="DATABASE_NOT_ALLOWED",
                metadata={"database": self.name},
            )

    async def _load_catalog(self) -> Catalog:
        # A connection of its own, not the pool's: an unreachable database fails here at
        # once instead of after the pool's wait, and catalog loads are rare.
        async with await psycopg.AsyncConnection.connect(
            self.config.url, **self._connect_kwargs
        ) as conn:
            if not self._write_checked:
                reasons = await write_capabilities(conn)
                self._write_checked = True
                if reasons:
                    level = logging.WARNING if self.config.allow_writable else logging.ERROR
                    _log.log(
                        level,
                        "target database user can write",
                        extra={"fields": {"database": self.name, "reasons": reasons}},
                    )
                    if not self.config.allow_writable:
                        self._refusal = reasons
            return await introspect(conn, self.name)


class WritableTargetError(RuntimeError):
    """A configured database's user can write and the operator did not allow it."""


class TargetRegistry:
    """The configured databases by name, and which one a request means."""

    def __init__(self, targets: Iterable[Target], default: str) -> None:
        self._targets: Mapping[str, Target] = {t.name: t for t in targets}
        if default not in self._targets:
            raise ValueError(f"default database {default!r} is not configured")
        self.default = default

    @property
    def names(self) -> list[str]:
        return list(self._targets)

    def get(self, name: str) -> Target:
        target = self._targets.get(name or self.default)
        if target is None:
            raise InvalidArgument.field(
                "database",
                "not a configured database",
                reason="UNKNOWN_DATABASE",
                metadata={"database": name},
            )
        return target

    def resolve(self, name: str, tenant_id: str) -> Target:
        """The target a request names (empty: the default), checked for the tenant."""
        target = self.get(name)
        if not target.config.allows(tenant_id):
            raise PermissionDenied(
                "the tenant may not query this database",
                reason="DATABASE_NOT_ALLOWED",
                metadata={"database": target.name},
            )
        return target

    async def open(self) -> None:
        """Open every target; fail start-up when a reachable one has a writable user."""
        for target in self._targets.values():
            await target.open()
            if target.refused:
                raise WritableTargetError(
                    f"database {target.name!r}: its user can write; give it a read-only "
                    f"user or list it in SQL_ALLOW_WRITABLE"
                )

    async def close(self) -> None:
        for target in self._targets.values():
            await target.close()
