"""Target databases: each named in configuration, with its own read-only pool and catalog.

Adding a database is configuration (``SQL_DATABASES=name=url;...``), not code. Each
target's role must be SELECT-only; the service checks that when it first reaches the
database. A role that can write or owns objects is refused unless the operator lists the
database in ``SQL_UNSAFE_WRITABLE_DATABASES``; a superuser (or a role that administers
roles or databases) unless it is listed in ``SQL_UNSAFE_SUPERUSER_DATABASES``; either is
logged as an error at every start. The TEMPORARY privilege stock Postgres grants to PUBLIC
on every database is only warned about (temporary tables are private to the session and
the statement runs in a READ ONLY transaction), naming the REVOKE that removes it.

Databases are closed by default: a target serves only the tenants its configuration
lists (``*`` for every tenant, said explicitly).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg_pool
from psycopg import sql

from services.common import FailedPrecondition, InvalidArgument, PermissionDenied, SettingsError
from services.sql.access import (
    ROW_SECURITY_KEY,
    SOURCES_KEY,
    AccessPolicy,
    PolicyError,
    bind,
    read_row_security,
    read_view_sources,
)
from services.sql.catalog import Catalog, CatalogCache, fingerprint, load_catalog
from services.sql.definitions import GlossaryEntry, JoinSpec
from services.sql.gate import Limits, memory_options
from services.sql.results import register_loaders

_log = logging.getLogger("tandem.sql.targets")

# Session settings of every execution connection: values come back in the forms the
# encoder expects, unqualified functions resolve in pg_catalog only, and read-only is
# the default even before the explicit READ ONLY transaction.
_SESSION_OPTIONS = (
    "-c TimeZone=UTC -c IntervalStyle=iso_8601 -c DateStyle=ISO -c standard_conforming_strings=on "
    "-c search_path=pg_catalog -c default_transaction_read_only=on "
    "-c idle_in_transaction_session_timeout=60000"
)
ANY_TENANT = "*"
WRITABLE_VARIABLE = "SQL_UNSAFE_WRITABLE_DATABASES"
SUPERUSER_VARIABLE = "SQL_UNSAFE_SUPERUSER_DATABASES"


@dataclass(frozen=True)
class TargetConfig:
    """One configured database: its name, a read-only user's URL, who may query it
    (nobody unless listed; ``*`` is every tenant), the unsafe roles the operator allowed,
    and its business definitions and declared joins (SQL_GLOSSARIES)."""

    name: str
    url: str
    allow_writable: bool = False
    allow_superuser: bool = False
    tenants: frozenset[str] = frozenset()
    glossary: tuple[GlossaryEntry, ...] = ()
    # joins the glossary file declares (for a database that declares no keys)
    joins: tuple[JoinSpec, ...] = ()
    # tables the catalog leaves out (SQL_EXCLUDE_TABLES: ``stg_*``, ``*_backup``,
    # ``archive.*``): never read, never linked, refused by the gate like unknown tables
    exclude: tuple[str, ...] = ()
    # who may read what (SQL_ACCESS_POLICIES; ``services.sql.access``): checked against
    # each catalog load, applied to every statement a principal's request runs
    access: AccessPolicy | None = None

    def allows(self, tenant_id: str) -> bool:
        return ANY_TENANT in self.tenants or tenant_id in self.tenants


class Severity(enum.Enum):
    """How much a role's capability matters to the service."""

    WARN = "warn"  # served; the operator is told how to remove it
    WRITE = "write"  # refused unless SQL_UNSAFE_WRITABLE_DATABASES lists the database
    SUPERUSER = "superuser"  # refused unless SQL_UNSAFE_SUPERUSER_DATABASES lists it


@dataclass(frozen=True)
class Capability:
    """One thing the target's role can do beyond reading, and what the service makes of it."""

    severity: Severity
    privilege: str
    fix: str = ""


_ROLE_CHECK = """
SELECT
  current_user::text, current_database()::text,
  r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls,
  EXISTS (
    SELECT 1 FROM pg_catalog.pg_auth_members m
    JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
    WHERE m.member = r.oid AND (g.rolsuper OR g.rolcreaterole OR g.rolcreatedb)),
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
  (SELECT pg_has_role(d.datdba, 'USAGE') FROM pg_catalog.pg_database d
   WHERE d.datname = current_database())
  OR EXISTS (
    SELECT 1 FROM pg_catalog.pg_namespace n
    WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
      AND pg_has_role(n.nspowner, 'USAGE'))
  OR EXISTS (
    SELECT 1 FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
      AND pg_has_role(c.relowner, 'USAGE'))
  OR EXISTS (
    SELECT 1 FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
      AND pg_has_role(p.proowner, 'USAGE')),
  EXISTS (
    SELECT 1 FROM pg_catalog.pg_database d,
      LATERAL pg_catalog.aclexplode(coalesce(d.datacl, pg_catalog.acldefault('d', d.datdba))) a
    WHERE d.datname = current_database() AND a.privilege_type = 'TEMPORARY'
      AND a.grantee <> 0 AND pg_has_role(a.grantee, 'USAGE')),
  has_database_privilege(current_database(), 'TEMPORARY')
FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
"""
_CHECKED = (
    (Severity.SUPERUSER, "SUPERUSER"),
    (Severity.SUPERUSER, "CREATEROLE"),
    (Severity.SUPERUSER, "CREATEDB"),
    (Severity.SUPERUSER, "BYPASSRLS"),
    (Severity.SUPERUSER, "membership in a SUPERUSER, CREATEROLE or CREATEDB role"),
    (Severity.WRITE, "INSERT, UPDATE, DELETE or TRUNCATE on a table"),
    (Severity.WRITE, "USAGE or UPDATE on a sequence"),
    (Severity.WRITE, "CREATE on a schema"),
    (Severity.WRITE, "CREATE on the database"),
    (Severity.WRITE, "ownership of the database or of objects in it"),
    (Severity.WRITE, "TEMPORARY on the database, granted to the role itself"),
)


async def role_capabilities(conn: psycopg.AsyncConnection[Any]) -> list[Capability]:
    """Everything the connection's role can do beyond reading (empty for a SELECT-only
    role on a database whose PUBLIC TEMPORARY privilege was revoked)."""
    cur = await conn.execute(_ROLE_CHECK)
    row = await cur.fetchone()
    if row is None:
        return [Capability(Severity.SUPERUSER, "an unknown role")]
    database, flags, temporary = str(row[1]), row[2:-1], bool(row[-1])
    found = [
        Capability(severity, privilege)
        for (severity, privilege), held in zip(_CHECKED, flags, strict=True)
        if held
    ]
    if temporary and not flags[-1]:  # held through PUBLIC only
        revoke = sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(
            sql.Identifier(database)
        )
        found.append(
            Capability(
                Severity.WARN,
                "TEMPORARY on the database (PUBLIC's default)",
                revoke.as_string(conn),
            )
        )
    return found


def refusal(config: TargetConfig, capabilities: Iterable[Capability]) -> Capability | None:
    """The capability that stops the service from querying this database, if any."""
    for capability in capabilities:
        if capability.severity is Severity.SUPERUSER and not config.allow_superuser:
            return capability
        if capability.severity is Severity.WRITE and not (
            config.allow_writable or config.allow_superuser
        ):
            return capability
    return None


def refusal_message(name: str, capability: Capability) -> str:
    """One line: the database, the privilege, and what to do about it."""
    variable = (
        SUPERUSER_VARIABLE if capability.severity is Severity.SUPERUSER else WRITABLE_VARIABLE
    )
    return (
        f"database {name!r}: its role holds {capability.privilege}; give it a SELECT-only "
        f"role (README, 'Your own data'), or list {name!r} in {variable} to serve it anyway"
    )


def connect_kwargs(
    *,
    connect_timeout_s: float,
    statement_timeout_cap_s: float = 30.0,
    work_mem_kb: int = Limits.work_mem_kb,
) -> dict[str, Any]:
    """How every connection to a target is opened (the session settings above, and the
    statements' memory limits: ``memory_options``)."""
    options = f"{_SESSION_OPTIONS} -c statement_timeout={int(statement_timeout_cap_s * 1000)}"
    if memory := memory_options(work_mem_kb):
        options = f"{options} {memory}"
    return {
        "autocommit": True,
        "options": options,
        "application_name": "tandem-sql",
        "connect_timeout": max(1, int(connect_timeout_s)),
    }


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    """Each pooled warehouse connection: our loaders, and no statement prepared by
    psycopg itself. The answers' repeated statements are prepared by name on the
    connection (``gate/_pipelined``); psycopg, holding prepared statements of its own,
    sends ``DEALLOCATE ALL`` when it sees a ROLLBACK go through it (after a failed
    statement), which would drop ours too and fail the next answer (SQLSTATE 26000)."""
    register_loaders(conn)
    conn.prepare_threshold = None


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
        work_mem_kb: int = Limits.work_mem_kb,
    ) -> None:
        self.config = config
        self._connect_kwargs = connect_kwargs(
            connect_timeout_s=connect_timeout_s,
            statement_timeout_cap_s=statement_timeout_cap_s,
            work_mem_kb=work_mem_kb,
        )
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
        self.catalog = CatalogCache(
            self._load_catalog,
            ttl_s=catalog_ttl_s,
            fingerprint=self._fingerprint,
            database=config.name,
        )
        self._role_checked = False
        self.capabilities: tuple[Capability, ...] = ()
        self._refusal: Capability | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def glossary(self) -> tuple[GlossaryEntry, ...]:
        return self.config.glossary

    @property
    def refusal(self) -> Capability | None:
        """What makes the service refuse this database (known once it was reached)."""
        return self._refusal

    async def open(self) -> bool:
        """Open the pool, check the role, and start loading the catalog in the background
        (a warehouse of a thousand tables takes seconds to read; the service serves
        meanwhile). False (logged) when the database is unreachable for now: the role is
        then checked, and the catalog loaded, when a request first needs it."""
        await self.pool.open(wait=False)
        try:
            async with await self._connect() as conn:
                await self._check_role(conn)
        except psycopg.Error as exc:
            _log.warning(
                "target database unreachable at start; will retry on use",
                extra={"fields": {"database": self.name, "error.type": type(exc).__name__}},
            )
            return False
        if self._refusal is None:
            self.catalog.start()
        return True

    async def close(self) -> None:
        await self.catalog.close()
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
        """The catalog, refusing a database whose role turned out to be able to write."""
        catalog = await self.catalog.get()
        if self._refusal is not None:
            raise PermissionDenied(
                f"database {self.name!r} is refused: its role holds {self._refusal.privilege}",
                reason="DATABASE_NOT_ALLOWED",
                metadata={"database": self.name},
            )
        try:
            bind(catalog, self.config.access)
        except PolicyError as exc:
            # Loud, and for everyone: a policy that no longer matches the database would
            # otherwise leave a renamed table or column unprotected.
            _log.error(str(exc), extra={"fields": {"database": self.name}})
            raise FailedPrecondition(
                f"database {self.name!r} is refused: its access policy does not match "
                f"its catalog ({exc})",
                reason="SQL_ACCESS_DENIED",
                metadata={"database": self.name},
            ) from None
        return catalog

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        # A connection of its own, not the pool's: an unreachable database fails here at
        # once instead of after the pool's wait, and catalog reads are rare.
        return await psycopg.AsyncConnection.connect(self.config.url, **self._connect_kwargs)

    async def _check_role(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if self._role_checked:
            return
        self.capabilities = tuple(await role_capabilities(conn))
        self._role_checked = True
        self._refusal = refusal(self.config, self.capabilities)
        log_capabilities(self.config, self.capabilities, self._refusal)

    async def _load_catalog(self) -> Catalog:
        async with await self._connect() as conn:
            await self._check_role(conn)
            catalog, unresolved = await load_catalog(
                conn,
                self.name,
                exclude=self.config.exclude,
                joins=self.config.joins,
                glossary=self.config.glossary,
            )
            for problem in unresolved:
                _log.warning(
                    f"database {self.name!r}: a join of its glossary file is ignored: {problem}",
                    extra={"fields": {"database": self.name}},
                )
            if self.config.access is not None:
                # what each view reads, for the policy to check (see services.sql.access)
                catalog.derived[SOURCES_KEY] = await read_view_sources(conn)
                catalog.derived[ROW_SECURITY_KEY] = await read_row_security(conn)
            return catalog

    async def _fingerprint(self) -> str:
        async with await self._connect() as conn:
            return await fingerprint(conn, exclude=self.config.exclude)


def log_capabilities(
    config: TargetConfig, capabilities: Iterable[Capability], refused: Capability | None
) -> None:
    """Warn about PUBLIC's TEMPORARY; shout about every unsafe privilege that is served."""
    for capability in capabilities:
        fields: dict[str, Any] = {"database": config.name, "privilege": capability.privilege}
        if capability.severity is Severity.WARN:
            _log.warning(
                f"database {config.name!r}: its role may create temporary tables through "
                f"PUBLIC; served, but run: {capability.fix}",
                extra={"fields": {**fields, "fix": capability.fix}},
            )
        elif refused is None:
            _log.error(
                f"UNSAFE: database {config.name!r} is served although its role holds "
                f"{capability.privilege} (allowed by configuration)",
                extra={"fields": fields},
            )
    if refused is not None:
        _log.error(
            refusal_message(config.name, refused), extra={"fields": {"database": config.name}}
        )


class WritableTargetError(SettingsError):
    """A configured database's role can write and the operator did not allow it."""


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
                f"the tenant may not query database {target.name!r}",
                reason="DATABASE_NOT_ALLOWED",
                metadata={"database": target.name},
            )
        return target

    async def open(self) -> None:
        """Open every target (each catalog loads in the background); fail start-up when a
        reachable one's role is unsafe, and say at every start which databases serve no
        tenant."""
        for target in self._targets.values():
            await target.open()
            if target.refusal is not None:
                raise WritableTargetError(refusal_message(target.name, target.refusal))
            tenants = target.config.tenants
            if not tenants:
                _log.warning(
                    f"database {target.name!r} serves no tenant: list who may query it in "
                    f"SQL_DATABASE_TENANTS ({target.name}=tenant,tenant or {target.name}=*)",
                    extra={"fields": {"database": target.name}},
                )
            else:
                _log.info(
                    "database tenants",
                    extra={"fields": {"database": target.name, "tenants": sorted(tenants)}},
                )

    async def close(self) -> None:
        for target in self._targets.values():
            await target.close()
