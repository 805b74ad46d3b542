"""The base of every tenant-scoped store: its pool, its migrations, its transactions.

Three stores keep tenant rows in Postgres under row-level security — retrieval's
documents and chunks, the SQL service's answer memory, the gateway's conversations. Each
connects as its own login role that cannot bypass the policies, and each statement runs
in a transaction that first sets ``tandem.tenant_id``: a query that forgets its tenant
filter still sees one tenant. What they share is written here once — where the role
connects, opening, closing, the health ping, the tenant transaction and what a lost
database becomes (UNAVAILABLE naming the store, retryable) — and each store keeps only its
statements.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from services.common._db import DATABASE_UNAVAILABLE, Database, Migration, retrying_read
from services.common._errors import ResourceExhausted, Unavailable

T = TypeVar("T")


def role_conninfo(owner_conninfo: str, role: str, app_url: str | None = None) -> str:
    """Where a store's queries connect: ``app_url`` when configured, else the owner's
    connection string with ``role`` as the user and the password dropped (the embedded
    server trusts local roles; a real deployment configures ``app_url``)."""
    if app_url:
        return app_url
    params = conninfo_to_dict(owner_conninfo)
    params.pop("password", None)
    params["user"] = role
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


def read_conninfo(read_url: str, role: str, app_url: str | None = None) -> str:
    """Where a store's reads on a standby connect: ``read_url``'s hosts, as the store's
    role — the user and password of ``app_url`` when configured (a standby has the
    primary's roles), else ``role`` without a password, as ``role_conninfo``."""
    params = conninfo_to_dict(read_url)
    params.pop("password", None)
    params["user"] = role
    if app_url:
        app = conninfo_to_dict(app_url)
        params["user"] = app.get("user") or role
        if app.get("password"):
            params["password"] = app["password"]
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


class TenantStore:
    """A store whose every statement runs for one tenant, as a role row-level security
    binds; subclasses name themselves (``name``, the words an UNAVAILABLE error uses) and
    hold their statements."""

    name: ClassVar[str] = "the store"

    def __init__(self, database: Database, migrations: Sequence[Migration] = ()) -> None:
        self._db = database
        self._migrations = tuple(migrations)

    @property
    def database(self) -> Database:
        return self._db

    async def open(self) -> None:
        """Apply the store's migrations as the owner (none when another pool of the same
        process applied them), then open the pool."""
        await self._db.open(self._migrations)

    async def close(self) -> None:
        await self._db.close()

    async def ping(self) -> bool:
        return await self._db.ping()

    @asynccontextmanager
    async def _unavailable(self) -> AsyncIterator[None]:
        """A database that is gone, or out of connections, is UNAVAILABLE naming the store
        with a retry hint: the caller's retry or fail-open path decides, not a 5xx."""
        try:
            yield
        except (Unavailable, ResourceExhausted) as exc:
            raise Unavailable(
                f"{self.name} is unreachable", reason=DATABASE_UNAVAILABLE, retry_after_s=1.0
            ) from exc

    @asynccontextmanager
    async def _tx(
        self, tenant_id: str, *, pipelined: bool = True, database: Database | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A transaction that sees only ``tenant_id``'s rows. Pipelined by default (a
        result is there once fetched, see ``Database.tenant_transaction``); a caller that
        reads ``rowcount`` or branches on a result mid-way asks for ``pipelined=False``.
        ``database``: another pool than the store's own (a standby, for a read)."""
        db = database or self._db
        async with (
            self._unavailable(),
            db.tenant_transaction(tenant_id, store=self.name, pipelined=pipelined) as conn,
        ):
            yield conn

    async def _read(
        self,
        tenant_id: str,
        run: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]],
        *,
        pipelined: bool = True,
    ) -> T:
        """An idempotent read in the tenant's transaction, run once more on a fresh
        connection when its connection broke under it (a failover): the first request
        after a failover is answered, not failed. Never for writes (``retrying_read``)."""

        async def attempt() -> T:
            async with self._tx(tenant_id, pipelined=pipelined) as conn:
                return await run(conn)

        return await retrying_read(attempt)
