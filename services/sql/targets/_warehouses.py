"""File warehouses: a SQLite or DuckDB database file (or a folder of CSV/Parquet files)
served beside Postgres, read-only at the connection, off the event loop.

``SQL_DATABASES=shop=sqlite:///srv/shop.sqlite;events=duckdb:///srv/events.duckdb``.
Statements are generated, linked and gated in Postgres's dialect as for every target;
at this boundary the gated text is transpiled to the engine's dialect, checked again by
the gate's dialect rules (``services.sql.gate.DialectGate``), and run on a connection
that cannot write (SQLite: a ``mode=ro`` URI, ``PRAGMA query_only`` and an authorizer
that allows reads and nothing else; DuckDB: ``read_only``, no external access, no
extension install or autoload, the configuration locked), in a thread of the target's
own executor, under a statement timeout (SQLite's progress handler, DuckDB's interrupt)
and the row and result-size caps.

The catalog is read from the engine's own metadata into the structures the Postgres
path fills (:mod:`services.sql.targets._engines`), and the stored values and inferred
keys come from the same catalog code as for Postgres, its statements transpiled here
(:class:`CatalogConnection`): the linker works unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import sqlglot
from psycopg import sql as psql

from services.common import SettingsError, deadline_passed
from services.sql.catalog import Catalog, CatalogCache, load_catalog
from services.sql.gate import (
    Dialect,
    DialectGate,
    FailureKind,
    Limits,
    ResultSet,
    StatementError,
    statement_budget,
    to_dialect,
)
from services.sql.results import column_kind, encode, encoded_size, fingerprint
from services.sql.targets._engines import DuckdbEngine, EngineConnection, FileEngine, SqliteEngine
from services.sql.targets._mysql import MysqlEngine
from services.sql.targets._targets import (
    Capability,
    Target,
    TargetConfig,
    log_capabilities,
    refusal,
)
from tandem.v1 import sql_service_pb2 as pb

_log = logging.getLogger("tandem.sql.targets")

_SCHEMES = {
    "sqlite": Dialect.SQLITE,
    "duckdb": Dialect.DUCKDB,
    "mysql": Dialect.MYSQL,
    "mariadb": Dialect.MYSQL,
}
_TIMEOUT_SETTING = re.compile(r"SET\s+LOCAL\s+statement_timeout\s*=\s*'?(\d+)(ms|s)?'?", re.I)
_CATALOG_TIMEOUT_S = 30.0


def engine_of(url: str) -> Dialect | None:
    """The engine a warehouse URL names (``sqlite://``, ``duckdb://``, ``mysql://`` or
    ``mariadb://``); None for Postgres (any other URL or connection string)."""
    scheme, sep, _ = url.partition("://")
    return _SCHEMES.get(scheme.lower()) if sep else None


def file_engine(url: str) -> tuple[Dialect, Path] | None:
    """The engine and path of a file warehouse URL (``sqlite:///abs/file.sqlite``,
    ``duckdb:///abs/file.duckdb`` or ``duckdb:///abs/folder/``); None for any other."""
    dialect = engine_of(url)
    if dialect is None or dialect is Dialect.MYSQL:
        return None
    return dialect, Path(url.partition("://")[2].split("?", 1)[0])


def _engine(dialect: Dialect, url: str, *, read_only: bool) -> FileEngine:
    if dialect is Dialect.MYSQL:
        return MysqlEngine(url, read_only=read_only)
    path = Path(url.partition("://")[2].split("?", 1)[0])
    if dialect is Dialect.SQLITE:
        return SqliteEngine(path, read_only=read_only)
    return DuckdbEngine(path, read_only=read_only)


_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at offset 8 of a DuckDB file
_FOLDER_FILES = (".csv", ".tsv", ".parquet")


def _kind_of(path: Path) -> str:
    """What a file holds by its first bytes: ``sqlite``, ``duckdb`` or ``other``."""
    with path.open("rb") as handle:
        head = handle.read(16)
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    if head[8:12] == _DUCKDB_MAGIC:
        return "duckdb"
    return "other"


def file_problem(url: str) -> str | None:
    """Why a file warehouse URL cannot be served, in one line with the fix; None when
    the file (or folder) is there, readable and of the engine the URL names."""
    engine = file_engine(url)
    if engine is None:
        return None
    dialect, path = engine
    scheme = dialect.value
    if not path.is_absolute():
        return f"{path}: give an absolute path ({scheme}:///srv/data/file)"
    if not path.exists():
        return f"file not found: {path} (check the path in the URL)"
    if path.is_dir():
        if dialect is Dialect.SQLITE:
            return f"{path} is a folder, not a SQLite file"
        if not any(p.suffix.lower() in _FOLDER_FILES for p in path.iterdir()):
            return f"the folder {path} holds no .csv, .tsv or .parquet file"
        return None
    try:
        kind = _kind_of(path)
    except PermissionError:
        return (
            f"permission denied: the service's user cannot read {path}; give it read "
            f"access (chmod o+r, or a group it is in)"
        )
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or type(exc).__name__}"
    if kind == "other":
        return f"{path} is not a {'SQLite' if scheme == 'sqlite' else 'DuckDB'} database"
    if kind != scheme:
        named = "SQLite" if kind == "sqlite" else "DuckDB"
        return f"{path} is a {named} database: name it {kind}://{path}"
    return None


class EngineWarehouse:
    """The execution side of a file target: the executor, its connections, the dialect
    gate and the hard limits. Stands where a Postgres target has its pool
    (``StatementRunner`` runs a verdict on either)."""

    def __init__(
        self,
        name: str,
        dialect: Dialect,
        url: str,
        *,
        workers: int = 4,
        read_only: bool = True,
    ) -> None:
        # ``read_only`` False opens the file writable (a MySQL session without its read-only
        # transaction) with no connection-level layer: only the hostile-statement tests do,
        # to prove the gates alone stop a write.
        self.name = f"{dialect.value}:{name}"
        self.database = name
        self.dialect = dialect
        self.engine: FileEngine = _engine(dialect, url, read_only=read_only)
        self.gate = DialectGate(dialect)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"sql-{name}")
        # each column name's catalog type where every table agrees on it (the transpile
        # keeps Postgres's date arithmetic on date columns)
        self._column_types: dict[str, str] = {}
        self._closed = False

    async def call(self, work: Callable[[], Any]) -> Any:
        """``work`` in one of the target's threads (never on the event loop)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    async def open(self) -> None:
        await self.call(self.engine.open)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.call(self.engine.close)
            self._executor.shutdown(wait=False)

    async def ping(self) -> bool:
        try:
            await asyncio.wait_for(self.call(self.engine.ping), timeout=1.0)
        except Exception:
            return False
        return True

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[CatalogConnection]:
        """A read-only connection for the catalog's own reads (values, keys, probes)."""
        yield CatalogConnection(self)

    async def run_gated(self, text: str, limits: Limits, tables: Sequence[str]) -> ResultSet:
        """Run ``text`` (Postgres, gated; reading ``tables``) in the engine's dialect."""
        started = time.perf_counter()
        try:
            engine_text = to_dialect(text, self.dialect, self._column_types.get)
        except (sqlglot.errors.SqlglotError, ValueError, IndexError):
            raise StatementError(
                FailureKind.DATA, "42601", f"not expressible in {self.dialect.value}"
            ) from None
        violations = self.gate.check(engine_text, tables)
        if violations:
            first = violations[0]
            raise StatementError(
                FailureKind.PERMISSION,
                "42501",
                f"the {self.dialect.value} gate refused the statement: "
                f"{first.rule.wire_name} {first.subject}".strip(),
            )
        return await self.run_unvetted(engine_text, limits, started=started)

    async def run_unvetted(
        self, text: str, limits: Limits, *, started: float | None = None
    ) -> ResultSet:
        """The engine-side layers alone, on text in the engine's dialect (tests prove
        each of them; the service reaches this only through :meth:`run_gated`)."""
        started = time.perf_counter() if started is None else started
        timeout, deadline_bound = statement_budget(limits)
        handle = _Interrupt()
        try:
            return await asyncio.wait_for(
                self.call(lambda: self._fetch(text, limits, timeout, handle, started)),
                timeout=timeout + limits.client_grace_s,
            )
        except TimeoutError:
            handle.fire()
            kind = FailureKind.DEADLINE if deadline_bound else FailureKind.TIMEOUT
            raise StatementError(kind, "57014", "statement timed out (client-side)") from None
        except StatementError as exc:
            if exc.kind is FailureKind.TIMEOUT and (deadline_bound or deadline_passed()):
                raise StatementError(FailureKind.DEADLINE, exc.sqlstate, exc.message) from None
            raise

    def _fetch(
        self, text: str, limits: Limits, timeout: float, handle: _Interrupt, started: float
    ) -> ResultSet:
        with self.engine.statement_connection() as conn:
            handle.arm(conn)
            names, types, rows = conn.run(text, (), timeout_s=timeout, max_rows=limits.max_rows + 1)
        columns = tuple(
            pb.SqlColumn(name=n, data_type=t) for n, t in zip(names, types, strict=True)
        )
        kinds = [column_kind(c.data_type) for c in columns]
        out: list[pb.SqlRow] = []
        size = 0
        reason: pb.TruncationReason.ValueType = pb.TRUNCATION_REASON_UNSPECIFIED
        for record in rows:
            if len(out) >= limits.max_rows:
                reason = pb.TRUNCATION_REASON_ROW_CAP
                break
            row = pb.SqlRow(values=[encode(v, k) for v, k in zip(record, kinds, strict=True)])
            row_size = sum(encoded_size(v) for v in row.values) + 2 * len(row.values)
            if size + row_size > limits.max_result_bytes:
                reason = pb.TRUNCATION_REASON_SIZE_CAP
                break
            out.append(row)
            size += row_size
        return ResultSet(
            columns=columns,
            rows=tuple(out),
            truncated=reason != pb.TRUNCATION_REASON_UNSPECIFIED,
            truncation_reason=reason,
            fingerprint=fingerprint(columns, out),
            duration_s=time.perf_counter() - started,
        )

    # --- the catalog ------------------------------------------------------------------

    async def load_catalog(
        self, exclude: Sequence[str], joins: Sequence[Any], glossary: Sequence[Any] = ()
    ) -> tuple[Catalog, list[str]]:
        structure = await self.call(lambda: self.engine.structure(self.database, exclude))
        types: dict[str, set[str]] = {}
        for table in structure.tables:
            for column in table.columns:
                types.setdefault(column.name, set()).add(column.data_type)
        self._column_types = {name: next(iter(t)) for name, t in types.items() if len(t) == 1}
        return await load_catalog(
            CatalogConnection(self),  # type: ignore[arg-type]
            self.database,
            exclude=exclude,
            joins=joins,
            structure=structure,
            glossary=glossary,
        )

    async def fingerprint(self, exclude: Sequence[str]) -> str:
        return str(await self.call(lambda: self.engine.fingerprint(exclude)))


class _Interrupt:
    """Cancels a running statement from outside its thread (the client-side timeout)."""

    def __init__(self) -> None:
        self._conn: EngineConnection | None = None
        self._lock = threading.Lock()
        self._fired = False

    def arm(self, conn: EngineConnection) -> None:
        with self._lock:
            self._conn = conn
            if self._fired:
                conn.interrupt()

    def fire(self) -> None:
        with self._lock:
            self._fired = True
            if self._conn is not None:
                self._conn.interrupt()


class _Rows:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    async def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    async def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None


class CatalogConnection:
    """What the shared catalog code (values, key and join inference, stored-value
    probes) needs of a psycopg connection, on a file warehouse: its statements, written
    for Postgres with ``%s`` parameters, transpiled to the engine's dialect and run
    read-only in the target's executor; ``SET LOCAL statement_timeout`` bounds the next
    statement; a failure is a ``psycopg.Error``, as the callers expect."""

    def __init__(self, warehouse: EngineWarehouse) -> None:
        self._warehouse = warehouse
        self._timeout_s = _CATALOG_TIMEOUT_S

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            self._timeout_s = _CATALOG_TIMEOUT_S

    async def execute(self, statement: Any, params: Sequence[Any] = ()) -> _Rows:
        text = statement.as_string(None) if isinstance(statement, psql.Composable) else statement
        setting = _TIMEOUT_SETTING.search(text)
        if setting is not None:
            value = int(setting.group(1))
            self._timeout_s = value / 1000 if setting.group(2) == "ms" else float(value)
            return _Rows([])
        try:
            # as the statements a question runs are written (FILTER on MySQL, dates)
            engine_text = to_dialect(text, self._warehouse.dialect)
        except sqlglot.errors.SqlglotError as exc:
            raise psycopg.DataError(f"not expressible in the engine's dialect: {exc}") from None
        engine = self._warehouse.engine
        timeout = self._timeout_s

        def work() -> list[tuple[Any, ...]]:
            with engine.catalog_connection() as conn:
                return list(conn.run(engine_text, tuple(params), timeout_s=timeout)[2])

        try:
            return _Rows(await self._warehouse.call(work))
        except StatementError as exc:
            if exc.kind is FailureKind.TIMEOUT:  # as Postgres cancels it: a guard stopped it
                raise psycopg.errors.QueryCanceled(exc.message) from None
            raise psycopg.OperationalError(exc.message) from None


def path_digest(paths: Sequence[Path]) -> str:
    """Size and modification time of each file (a changed file reloads the catalog)."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


class EngineTarget(Target):
    """A configured SQLite or DuckDB database: served like a Postgres target (catalog
    cache, access policy, tenants), its pool a :class:`EngineWarehouse`. Opened read-only,
    so there is no role to check: nothing it connects with can write."""

    def __init__(
        self,
        config: TargetConfig,
        *,
        pool_max_size: int = 4,
        catalog_ttl_s: float = 300.0,
        read_only: bool = True,
    ) -> None:
        dialect = engine_of(config.url)
        if dialect is None:
            raise ValueError(f"not a SQLite, DuckDB or MySQL URL: database {config.name!r}")
        if config.access is not None:
            # Fail closed: a policy's row filters are written into statements, and a view
            # reads past them; on Postgres the policy is checked against what each view
            # reads (services.sql.access), which these engines are not asked for.
            raise SettingsError(
                f"database {config.name!r}: access policies (SQL_ACCESS_POLICIES) need a "
                "Postgres database; serve this one without a policy or from Postgres"
            )
        self.config = config
        self.warehouse: EngineWarehouse = EngineWarehouse(
            config.name, dialect, config.url, workers=pool_max_size, read_only=read_only
        )
        # where a Postgres target keeps its pool: the runner runs verdicts on either
        self.pool = self.warehouse  # type: ignore[assignment]
        self.catalog = CatalogCache(
            self._load_catalog,
            ttl_s=catalog_ttl_s,
            fingerprint=self._fingerprint,
            database=config.name,
        )
        self._role_checked = False
        self.capabilities: tuple[Capability, ...] = ()
        self._refusal: Capability | None = None

    async def open(self) -> bool:
        """Open the database (False, logged, when it cannot be reached now), check what
        its user may do (MySQL's grants; a file is opened read-only) and start loading the
        catalog in the background."""
        try:
            await self.warehouse.open()
            await self._check_grants()
        except StatementError as exc:
            _log.warning(
                "target database unreachable at start; will retry on use",
                extra={"fields": {"database": self.name, "error.type": exc.kind.value}},
            )
            return False
        if self._refusal is None:
            self.catalog.start()
        return True

    async def _check_grants(self) -> None:
        if self._role_checked:
            return
        self.capabilities = tuple(await self.warehouse.call(self.warehouse.engine.capabilities))
        self._role_checked = True
        self._refusal = refusal(self.config, self.capabilities)
        log_capabilities(self.config, self.capabilities, self._refusal)

    async def close(self) -> None:
        await self.catalog.close()
        await self.warehouse.close()

    async def ping(self) -> bool:
        return await self.warehouse.ping()

    async def _load_catalog(self) -> Catalog:
        try:
            await self._check_grants()
            catalog, unresolved = await self.warehouse.load_catalog(
                self.config.exclude, self.config.joins, self.config.glossary
            )
        except StatementError as exc:
            raise psycopg.OperationalError(exc.message) from None
        for problem in unresolved:
            _log.warning(
                f"database {self.name!r}: a join of its glossary file is ignored: {problem}",
                extra={"fields": {"database": self.name}},
            )
        return catalog

    async def _fingerprint(self) -> str:
        try:
            return await self.warehouse.fingerprint(self.config.exclude)
        except StatementError as exc:
            raise psycopg.OperationalError(exc.message) from None


def open_target(
    config: TargetConfig,
    *,
    pool_max_size: int = 4,
    catalog_ttl_s: float = 300.0,
    statement_timeout_cap_s: float = 30.0,
    connect_timeout_s: float = 5.0,
    work_mem_kb: int = Limits.work_mem_kb,
) -> Target:
    """The target for ``config``'s URL: an engine warehouse for ``sqlite://``,
    ``duckdb://`` and ``mysql://``, Postgres for anything else."""
    if engine_of(config.url) is not None:
        return EngineTarget(config, pool_max_size=pool_max_size, catalog_ttl_s=catalog_ttl_s)
    return Target(
        config,
        pool_max_size=pool_max_size,
        catalog_ttl_s=catalog_ttl_s,
        statement_timeout_cap_s=statement_timeout_cap_s,
        connect_timeout_s=connect_timeout_s,
        work_mem_kb=work_mem_kb,
    )
