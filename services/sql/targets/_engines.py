"""The two file engines: how each opens read-only, runs one statement under a timeout,
and describes its tables in the catalog's terms (Postgres type names, declared keys,
comments where the engine keeps them). Synchronous: called in a target's own threads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import hashlib
import queue
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import duckdb

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo, excluded
from services.sql.gate import FailureKind, StatementError
from services.sql.targets._targets import Capability

SCHEMA = "main"
_ROW_COUNT_CAP = 100_000
_MESSAGE_CHARS = 200


def _duckdb() -> Any:
    """DuckDB, imported where a DuckDB warehouse is opened: only the sql image carries it
    (66 MB), and everything else that imports this package (the CLI, the gateway's image)
    must not need it."""
    import duckdb  # noqa: PLC0415

    return duckdb


class EngineConnection(Protocol):
    def run(
        self, text: str, params: tuple[Any, ...], *, timeout_s: float, max_rows: int | None = None
    ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]: ...

    def interrupt(self) -> None: ...


class FileEngine(Protocol):
    """An engine behind a warehouse: files (SQLite, DuckDB) or a server (MySQL)."""

    def open(self) -> None: ...
    def close(self) -> None: ...
    def ping(self) -> None: ...
    def statement_connection(self) -> contextlib.AbstractContextManager[EngineConnection]: ...
    def catalog_connection(self) -> contextlib.AbstractContextManager[EngineConnection]: ...
    def structure(self, database: str, exclude: Sequence[str]) -> Catalog: ...
    def fingerprint(self, exclude: Sequence[str]) -> str: ...
    def capabilities(self) -> list[Capability]: ...


def _short(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:_MESSAGE_CHARS]


# SQLSTATEs the repair loop and the error mapping already know, by the engines' words.
_DATA_STATES = (
    (
        re.compile(r"no such column|column .* (not found|does not exist)|referenced column", re.I),
        "42703",
    ),
    (re.compile(r"no such table|table .* does not exist|catalog error", re.I), "42P01"),
    (re.compile(r"syntax error|parser error|incomplete input", re.I), "42601"),
    (re.compile(r"ambiguous", re.I), "42702"),
    (re.compile(r"aggregate|group by", re.I), "42803"),
    (re.compile(r"no such function|function .* does not exist|scalar function", re.I), "42883"),
    (re.compile(r"conversion|could not convert|mismatch", re.I), "22P02"),
)


def data_state(message: str) -> str:
    return next((state for pattern, state in _DATA_STATES if pattern.search(message)), "42000")


# --- SQLite ------------------------------------------------------------------------------

# sqlite3 authorizer action codes a read may use; every other action is denied.
_SQLITE_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, 33}  # 33: RECURSIVE
)
_SQLITE_DENIED_FUNCTIONS = frozenset(
    {
        "load_extension",
        "readfile",
        "writefile",
        "edit",
        "fts3_tokenizer",
        "sqlite_compileoption_get",
    }
)
_SQLITE_TYPES = (
    ("int", "bigint"),
    ("char", "text"),
    ("clob", "text"),
    ("text", "text"),
    ("blob", "bytea"),
    ("real", "double precision"),
    ("floa", "double precision"),
    ("doub", "double precision"),
    ("dec", "numeric"),
    ("num", "numeric"),
    ("bool", "boolean"),
    ("datetime", "timestamp without time zone"),
    ("timestamp", "timestamp without time zone"),
    ("date", "date"),
    ("time", "time without time zone"),
)


def sqlite_type(declared: str) -> str:
    """A SQLite declared type as the catalog's Postgres name (by SQLite's affinity rules,
    with the date and boolean names people declare): ``VARCHAR(20)`` is ``text``."""
    lowered = declared.lower()
    if not lowered:
        return "text"
    if "int" in lowered:
        return "bigint"
    for part, name in _SQLITE_TYPES[1:]:
        if part in lowered:
            return name
    return "numeric"


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([+-]\d{2}:\d{2}|Z)?$"
)


def _typed_column(values: list[Any]) -> tuple[str, list[Any]]:
    """A result column's Postgres type name from its values (SQLite's types are the
    values'), and the values as the Postgres path returns them: SQLite keeps dates and
    timestamps as ISO text, so a column whose every value is one is a date or timestamp
    column, returned as such (``2026-09-28 00:00:00`` as the timestamp it is)."""
    present = [v for v in values if v is not None]
    if not present:
        return "text", values
    if all(isinstance(v, bool) for v in present):
        return "boolean", values
    if all(isinstance(v, int) for v in present):
        return "bigint", values
    if all(isinstance(v, int | float) for v in present):
        return "double precision", values
    if all(isinstance(v, bytes) for v in present):
        return "bytea", values
    if all(isinstance(v, str) for v in present):
        try:
            if all(_ISO_DATE.match(v) for v in present):
                return "date", [None if v is None else dt.date.fromisoformat(v) for v in values]
            if all(_ISO_TIMESTAMP.match(v) for v in present):
                parsed = [None if v is None else dt.datetime.fromisoformat(v) for v in values]
                zoned = all(p.tzinfo is not None for p in parsed if p is not None)
                return f"timestamp with{'' if zoned else 'out'} time zone", parsed
        except ValueError:  # shaped like one, but not a real date (2024-02-30)
            pass
    return "text", values


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    if action not in _SQLITE_READ_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_READ and arg1 and arg1.lower().startswith("sqlite_"):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _SQLITE_DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class _SqliteConnection:
    """One sqlite3 connection; a progress handler enforces the statement's deadline."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._deadline = float("inf")
        conn.set_progress_handler(self._progress, 1000)

    def _progress(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def interrupt(self) -> None:
        self.conn.interrupt()

    def run(
        self, text: str, params: tuple[Any, ...], *, timeout_s: float, max_rows: int | None = None
    ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        self._deadline = time.monotonic() + timeout_s
        try:
            cursor = self.conn.execute(text, params)
            rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows)
            names = [d[0] for d in cursor.description or ()]
            cursor.close()
        except sqlite3.Error as exc:
            raise _sqlite_error(exc) from None
        finally:
            self._deadline = float("inf")
            with contextlib.suppress(sqlite3.Error):
                self.conn.rollback()
        typed = [_typed_column([r[i] for r in rows]) for i in range(len(names))]
        types = [t for t, _ in typed]
        columns = [c for _, c in typed]
        return names, types, [tuple(c[i] for c in columns) for i in range(len(rows))]


def _sqlite_error(exc: sqlite3.Error) -> StatementError:
    message = _short(exc)
    lowered = message.lower()
    if "interrupted" in lowered:
        return StatementError(FailureKind.TIMEOUT, "57014", "statement timed out")
    if (
        "not authorized" in lowered
        or "readonly" in lowered
        or "read-only" in lowered
        or ("query_only" in lowered)
    ):
        return StatementError(FailureKind.PERMISSION, "42501", message)
    if isinstance(exc, sqlite3.OperationalError) and (
        "unable to open" in lowered or "locked" in lowered or "disk i/o" in lowered
    ):
        return StatementError(FailureKind.UNAVAILABLE, "08006", "database unavailable")
    if "not a database" in lowered or "malformed" in lowered:
        return StatementError(FailureKind.UNAVAILABLE, "08006", "database unavailable")
    if "memory" in lowered or "too big" in lowered:
        return StatementError(FailureKind.RESOURCE, "53200", message)
    return StatementError(FailureKind.DATA, data_state(message), message)


class SqliteEngine:
    """A SQLite file: ``mode=ro`` URI connections with ``PRAGMA query_only`` and a
    read-only authorizer, kept in a small pool (sqlite3 connections are cheap but not
    shared between threads at once)."""

    def __init__(self, path: Path, *, read_only: bool = True) -> None:
        self.path = path
        self.read_only = read_only
        self._idle: queue.SimpleQueue[_SqliteConnection] = queue.SimpleQueue()
        self._all: list[_SqliteConnection] = []
        self._lock = threading.Lock()

    def _connect(self, *, statements: bool) -> _SqliteConnection:
        if not self.path.is_file():
            raise StatementError(FailureKind.UNAVAILABLE, "08006", "database file not found")
        if self.read_only:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA trusted_schema = OFF")
            if statements:
                conn.set_authorizer(_sqlite_authorizer)
        else:
            conn = sqlite3.connect(str(self.path), check_same_thread=False)
        return _SqliteConnection(conn)

    def open(self) -> None:
        with self.catalog_connection() as conn:
            conn.run("SELECT count(*) FROM sqlite_master", (), timeout_s=5.0)

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.conn.close()
            self._all.clear()

    def ping(self) -> None:
        with self.statement_connection() as conn:
            conn.run("SELECT 1", (), timeout_s=1.0)

    @contextlib.contextmanager
    def statement_connection(self) -> Iterator[EngineConnection]:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            try:
                conn = self._connect(statements=True)
            except sqlite3.Error as exc:
                raise _sqlite_error(exc) from None
            with self._lock:
                self._all.append(conn)
        try:
            yield conn
        finally:
            self._idle.put(conn)

    @contextlib.contextmanager
    def catalog_connection(self) -> Iterator[EngineConnection]:
        try:
            conn = self._connect(statements=False)
        except sqlite3.Error as exc:
            raise _sqlite_error(exc) from None
        try:
            yield conn
        finally:
            conn.conn.close()

    def structure(self, database: str, exclude: Sequence[str]) -> Catalog:
        with self.catalog_connection() as wrapped:
            conn = wrapped.conn  # type: ignore[attr-defined]
            names = [
                str(row[0])
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
                )
            ]
            tables = []
            for name in names:
                if excluded((SCHEMA, name), exclude):
                    continue
                quoted = '"' + name.replace('"', '""') + '"'
                info = conn.execute(f"PRAGMA table_info({quoted})").fetchall()
                columns = tuple(
                    ColumnInfo(str(c[1]), sqlite_type(str(c[2] or "")), not c[3] and not c[5])
                    for c in info
                )
                primary = tuple(str(c[1]) for c in sorted(info, key=lambda c: c[5]) if c[5])
                foreign = self._foreign_keys(conn, quoted)
                unique = []
                for index in conn.execute(f"PRAGMA index_list({quoted})").fetchall():
                    if index[2] and index[3] == "u":
                        iquoted = '"' + str(index[1]).replace('"', '""') + '"'
                        cols = conn.execute(f"PRAGMA index_info({iquoted})").fetchall()
                        unique.append(tuple(str(c[2]) for c in sorted(cols)))
                try:
                    count = conn.execute(
                        f"SELECT count(*) FROM (SELECT 1 FROM {quoted} LIMIT {_ROW_COUNT_CAP})"
                    ).fetchone()[0]
                except sqlite3.Error:
                    count = -1
                tables.append(
                    TableInfo(
                        schema=SCHEMA,
                        name=name,
                        row_estimate=int(count),
                        columns=columns,
                        primary_key=primary,
                        foreign_keys=foreign,
                        unique_keys=tuple(unique),
                    )
                )
        return resolve_foreign_keys(Catalog(database=database, tables=tuple(tables)))

    @staticmethod
    def _foreign_keys(conn: sqlite3.Connection, quoted: str) -> tuple[ForeignKeyInfo, ...]:
        grouped: dict[int, list[tuple[str, str, str | None]]] = {}
        for row in conn.execute(f"PRAGMA foreign_key_list({quoted})").fetchall():
            grouped.setdefault(int(row[0]), []).append((str(row[2]), str(row[3]), row[4]))
        found = []
        for parts in grouped.values():
            parent = parts[0][0]
            found.append(
                ForeignKeyInfo(
                    tuple(p[1] for p in parts),
                    f"{SCHEMA}.{parent}",
                    tuple(str(p[2]) if p[2] is not None else "" for p in parts),
                )
            )
        return tuple(found)

    def capabilities(self) -> list[Capability]:
        return []  # opened read-only: nothing it connects with can write

    def fingerprint(self, exclude: Sequence[str]) -> str:
        digest = hashlib.sha256()
        with self.catalog_connection() as wrapped:
            conn = wrapped.conn  # type: ignore[attr-defined]
            for name, text in conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name"):
                if not excluded((SCHEMA, str(name)), exclude):
                    digest.update(f"{name}:{text}\n".encode())
            version = conn.execute("PRAGMA schema_version").fetchone()[0]
        for path in (self.path, Path(f"{self.path}-wal")):
            with contextlib.suppress(OSError):
                stat = path.stat()
                digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
        digest.update(str(version).encode())
        return digest.hexdigest()


def resolve_foreign_keys(catalog: Catalog) -> Catalog:
    """A foreign key written without the parent's columns references its primary key;
    table names are matched as the engines match them (ignoring case). The tables come
    in (schema, name) order by code point, as Postgres's catalog lists them under the C
    collation, whatever order the engine's metadata sorts in (MySQL's ignores case and
    puts ``_`` elsewhere): the linker meets tables in the same order on every engine."""
    by_name = {t.name.lower(): t for t in catalog.tables}
    tables = []
    for table in catalog.tables:
        keys = []
        for fk in table.foreign_keys:
            parent = by_name.get(fk.referenced_table.rpartition(".")[2].lower())
            if parent is None:
                continue
            columns = fk.referenced_columns
            if not all(columns):
                columns = parent.primary_key
            if len(columns) != len(fk.columns):
                continue
            keys.append(ForeignKeyInfo(fk.columns, parent.qualified, tuple(columns)))
        tables.append(replace(table, foreign_keys=tuple(keys)))
    tables.sort(key=lambda t: (t.schema, t.name))
    return Catalog(database=catalog.database, tables=tuple(tables))


# --- DuckDB ------------------------------------------------------------------------------

_DUCKDB_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "lock_configuration": True,
    "threads": 2,
    "memory_limit": "1GB",
}
_DUCKDB_TYPES = {
    "INTEGER": "integer", "BIGINT": "bigint", "SMALLINT": "smallint", "TINYINT": "smallint",
    "HUGEINT": "numeric", "UBIGINT": "numeric", "UINTEGER": "bigint", "USMALLINT": "integer",
    "UTINYINT": "smallint", "DOUBLE": "double precision", "FLOAT": "real", "REAL": "real",
    "VARCHAR": "text", "BOOLEAN": "boolean", "DATE": "date", "BLOB": "bytea",
    "TIMESTAMP": "timestamp without time zone", "TIMESTAMP_NS": "timestamp without time zone",
    "TIMESTAMP_MS": "timestamp without time zone", "TIMESTAMP_S": "timestamp without time zone",
    "TIMESTAMP WITH TIME ZONE": "timestamp with time zone", "INTERVAL": "interval",
    "TIME": "time without time zone", "UUID": "uuid", "JSON": "json",
}  # fmt: skip


def duckdb_type(name: str) -> str:
    """A DuckDB type as the catalog's Postgres name (``DECIMAL(18,3)`` is ``numeric``)."""
    upper = name.upper()
    if upper.endswith("[]"):
        return duckdb_type(upper[:-2]) + "[]"
    if upper.startswith("DECIMAL") or upper.startswith("NUMERIC"):
        return "numeric"
    return _DUCKDB_TYPES.get(upper, "text")


class _DuckdbConnection:
    """One DuckDB connection (a cursor of the target's database); a timer interrupts
    it at the statement's deadline."""

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self.conn = conn

    def interrupt(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.interrupt()

    def run(
        self, text: str, params: tuple[Any, ...], *, timeout_s: float, max_rows: int | None = None
    ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        timer = threading.Timer(timeout_s, self.interrupt)
        timer.start()
        try:
            cursor = self.conn.execute(text, list(params)) if params else self.conn.execute(text)
            rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows)
            description = cursor.description or []
        except _duckdb().Error as exc:
            raise _duckdb_error(exc) from None
        finally:
            timer.cancel()
        names = [str(d[0]) for d in description]
        types = [duckdb_type(str(d[1])) for d in description]
        return names, types, [tuple(_plain(v) for v in r) for r in rows]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | decimal.Decimal):
        return value
    return value


def _duckdb_error(exc: duckdb.Error) -> StatementError:
    db = _duckdb()
    message = _short(exc)
    if isinstance(exc, db.InterruptException):
        return StatementError(FailureKind.TIMEOUT, "57014", "statement timed out")
    if isinstance(exc, db.PermissionException):
        return StatementError(FailureKind.PERMISSION, "42501", message)
    if isinstance(exc, db.OutOfMemoryException):
        return StatementError(FailureKind.RESOURCE, "53200", message)
    if isinstance(exc, db.IOException | db.ConnectionException):
        return StatementError(FailureKind.UNAVAILABLE, "08006", "database unavailable")
    if "read-only" in message.lower() or "read only" in message.lower():
        return StatementError(FailureKind.PERMISSION, "25006", message)
    return StatementError(FailureKind.DATA, data_state(message), message)


class DuckdbEngine:
    """A DuckDB file opened ``read_only`` with external access off, extensions neither
    installed nor loaded, the configuration locked; or a folder of CSV/Parquet files,
    copied once into a private database file (rebuilt when a file changes) that is then
    opened the same way, so no statement ever reads a path."""

    def __init__(self, path: Path, *, read_only: bool = True) -> None:
        self.path = path
        self.read_only = read_only
        self._root: duckdb.DuckDBPyConnection | None = None
        self._built: Path | None = None
        self._lock = threading.Lock()
        self._active: set[_DuckdbConnection] = set()

    def _files(self) -> list[Path]:
        if not self.path.is_dir():
            return [self.path]
        return sorted(
            p for p in self.path.iterdir() if p.suffix.lower() in (".csv", ".parquet", ".tsv")
        )

    def _database_file(self) -> Path:
        if not self.path.is_dir():
            if not self.path.is_file():
                raise StatementError(FailureKind.UNAVAILABLE, "08006", "database file not found")
            return self.path
        # A folder: its files become tables of a private database file.
        folder = Path(tempfile.mkdtemp(prefix="tandem-duckdb-"))
        built = folder / "folder.duckdb"
        conn = _duckdb().connect(
            str(built),
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
        )
        try:
            for file in self._files():
                reader = "read_parquet" if file.suffix.lower() == ".parquet" else "read_csv_auto"
                table = '"' + file.stem.replace('"', '""') + '"'
                conn.execute(f"CREATE TABLE {table} AS SELECT * FROM {reader}(?)", [str(file)])
        finally:
            conn.close()
        self._built = built
        return built

    def open(self) -> None:
        with self._lock:
            if self._root is not None:
                return
            target = self._database_file()
            db = _duckdb()
            try:
                if self.read_only:
                    self._root = db.connect(str(target), read_only=True, config=_DUCKDB_CONFIG)
                else:
                    self._root = db.connect(str(target))
            except db.Error as exc:
                raise _duckdb_error(exc) from None

    def close(self) -> None:
        with self._lock:
            root, self._root = self._root, None
            active = list(self._active)
        # Statements still running (a catalog read, a statement past its client timeout)
        # are interrupted; the database closes once their connections are let go.
        for conn in active:
            conn.interrupt()
        if root is not None:
            for _ in range(100):
                try:
                    root.close()
                    break
                except _duckdb().ResourceInUseException:
                    time.sleep(0.02)
        with self._lock:
            if self._built is not None:
                shutil.rmtree(self._built.parent, ignore_errors=True)
                self._built = None

    def ping(self) -> None:
        with self.statement_connection() as conn:
            conn.run("SELECT 1", (), timeout_s=1.0)

    @contextlib.contextmanager
    def statement_connection(self) -> Iterator[EngineConnection]:
        if self._root is None:
            self.open()
        # The database's own connection answers one call at a time (it refuses, not
        # waits): each thread takes a connection of its own from it, one at a time.
        with self._lock:
            if self._root is None:
                raise StatementError(FailureKind.UNAVAILABLE, "08006", "database closed")
            cursor = self._root.cursor()
            conn = _DuckdbConnection(cursor)
            self._active.add(conn)
        try:
            yield conn
        finally:
            with self._lock:
                self._active.discard(conn)
            cursor.close()

    catalog_connection = statement_connection

    def structure(self, database: str, exclude: Sequence[str]) -> Catalog:
        with self.statement_connection() as wrapped:
            conn = wrapped.conn  # type: ignore[attr-defined]
            relations = conn.execute(
                "SELECT schema_name, table_name, coalesce(comment, ''), estimated_size "
                "FROM duckdb_tables() WHERE NOT internal AND NOT temporary "
                "AND database_name = current_database() "
                "UNION ALL SELECT schema_name, view_name, coalesce(comment, ''), -1 "
                "FROM duckdb_views() WHERE NOT internal AND NOT temporary "
                "AND database_name = current_database() ORDER BY 1, 2"
            ).fetchall()
            columns: dict[tuple[str, str], list[ColumnInfo]] = {}
            for schema, table, name, kind, nullable, comment in conn.execute(
                "SELECT schema_name, table_name, column_name, data_type, is_nullable, "
                "coalesce(comment, '') FROM duckdb_columns() WHERE NOT internal "
                "AND database_name = current_database() ORDER BY schema_name, table_name, "
                "column_index"
            ).fetchall():
                columns.setdefault((schema, table), []).append(
                    ColumnInfo(str(name), duckdb_type(str(kind)), bool(nullable), str(comment))
                )
            keys = conn.execute(
                "SELECT schema_name, table_name, constraint_type, constraint_column_names, "
                "referenced_table, referenced_column_names FROM duckdb_constraints() "
                "WHERE database_name = current_database() "
                "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY') "
                "ORDER BY schema_name, table_name, constraint_index"
            ).fetchall()
        primary: dict[tuple[str, str], tuple[str, ...]] = {}
        unique: dict[tuple[str, str], list[tuple[str, ...]]] = {}
        foreign: dict[tuple[str, str], list[ForeignKeyInfo]] = {}
        for schema, table, kind, cols, parent, parent_cols in keys:
            key = (str(schema), str(table))
            if kind == "PRIMARY KEY":
                primary[key] = tuple(cols)
            elif kind == "UNIQUE":
                unique.setdefault(key, []).append(tuple(cols))
            elif parent:
                foreign.setdefault(key, []).append(
                    ForeignKeyInfo(tuple(cols), f"{schema}.{parent}", tuple(parent_cols or ()))
                )
        tables = tuple(
            TableInfo(
                schema=str(schema),
                name=str(name),
                comment=str(comment),
                row_estimate=int(size) if size is not None else -1,
                columns=tuple(columns.get((schema, name), [])),
                primary_key=primary.get((schema, name), ()),
                foreign_keys=tuple(foreign.get((schema, name), [])),
                unique_keys=tuple(unique.get((schema, name), [])),
            )
            for schema, name, comment, size in relations
            if not excluded((str(schema), str(name)), exclude)
        )
        return resolve_foreign_keys(Catalog(database=database, tables=tables))

    def capabilities(self) -> list[Capability]:
        return []  # opened read-only: nothing it connects with can write

    def fingerprint(self, exclude: Sequence[str]) -> str:
        digest = hashlib.sha256()
        for path in self._files():
            with contextlib.suppress(OSError):
                stat = path.stat()
                digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
        digest.update(",".join(exclude).encode())
        return digest.hexdigest()
