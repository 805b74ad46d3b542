"""MySQL and MariaDB warehouses (``mysql://user:password@host:3306/shop``): the same
engine boundary as the file warehouses, over PyMySQL in the target's threads.

The user must be SELECT-only, checked from ``SHOW GRANTS`` when the database is first
reached, as a Postgres role is: a grant that writes (INSERT, UPDATE, DELETE, CREATE, …)
refuses the database unless SQL_UNSAFE_WRITABLE_DATABASES lists it; FILE, SUPER, PROCESS,
ALL PRIVILEGES or GRANT OPTION unless SQL_UNSAFE_SUPERUSER_DATABASES does. Every statement
then runs in a ``START TRANSACTION READ ONLY`` with the session's ``max_statement_time``
(MariaDB) / ``max_execution_time`` (MySQL) set to its timeout, in UTC, and is rolled
back; a client-side timeout kills the query from a second connection.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import queue
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import pymysql
import pymysql.constants.FIELD_TYPE as FT

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo, excluded
from services.sql.gate import FailureKind, StatementError
from services.sql.targets._engines import EngineConnection, data_state, resolve_foreign_keys
from services.sql.targets._targets import Capability, Severity

_MESSAGE_CHARS = 200
_CONNECT_TIMEOUT_S = 5

# Grants beyond reading, and how much each matters (see services.sql.targets).
_SUPER = ("ALL PRIVILEGES", "SUPER", "FILE", "PROCESS", "SHUTDOWN", "CREATE USER", "GRANT OPTION",
          "RELOAD", "REPLICATION", "BINLOG", "CONNECTION ADMIN", "READ_ONLY ADMIN")  # fmt: skip
_WRITE = ("INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX", "REFERENCES",
          "TRIGGER", "EXECUTE", "EVENT", "LOCK TABLES", "CREATE TEMPORARY TABLES",
          "CREATE VIEW", "CREATE ROUTINE", "ALTER ROUTINE", "DELETE HISTORY")  # fmt: skip
_GRANT = re.compile(r"^GRANT (.+?) ON (.+?) TO ", re.IGNORECASE)

_MYSQL_TYPES = {
    "tinyint": "smallint", "smallint": "smallint", "mediumint": "integer", "int": "integer",
    "integer": "integer", "bigint": "bigint", "decimal": "numeric", "numeric": "numeric",
    "float": "real", "double": "double precision", "real": "double precision",
    "bit": "integer", "year": "integer", "date": "date", "datetime": "timestamp without time zone",
    "timestamp": "timestamp without time zone", "time": "time without time zone",
    "json": "json", "char": "character", "varchar": "character varying",
    "blob": "bytea", "tinyblob": "bytea", "mediumblob": "bytea", "longblob": "bytea",
    "binary": "bytea", "varbinary": "bytea",
}  # fmt: skip
_RESULT_TYPES = {
    FT.TINY: "smallint", FT.SHORT: "smallint", FT.LONG: "integer", FT.INT24: "integer",
    FT.LONGLONG: "bigint", FT.DECIMAL: "numeric", FT.NEWDECIMAL: "numeric", FT.FLOAT: "real",
    FT.DOUBLE: "double precision", FT.DATE: "date", FT.NEWDATE: "date",
    FT.DATETIME: "timestamp without time zone", FT.TIMESTAMP: "timestamp without time zone",
    FT.TIME: "interval", FT.JSON: "json", FT.YEAR: "integer", FT.BIT: "bytea",
}  # fmt: skip


def mysql_type(name: str) -> str:
    """A MySQL column type (``information_schema.COLUMNS.DATA_TYPE``) as the catalog's
    Postgres name; text types, enums and sets are ``text``."""
    return _MYSQL_TYPES.get(name.lower(), "text")


def _short(exc: BaseException) -> str:
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    text = str(args[1]) if len(args) > 1 else str(exc)
    return (text.splitlines() or [type(exc).__name__])[0][:_MESSAGE_CHARS]


# The server's own state (connections, shutdown, a killed connection): the database is
# unavailable. Client errors (2000-2999) are too. Any other code is the statement's fault.
_UNAVAILABLE = frozenset({1040, 1049, 1053, 1077, 1081, 1129, 1130, 1152, 1153, 1158, 1159,
                          1160, 1161, 1927, 1836})  # fmt: skip


def mysql_error(exc: BaseException) -> StatementError:
    """A PyMySQL error as the failure kinds the service maps to gRPC statuses: a fault
    of the statement (PyMySQL raises OperationalError for many of those too) is DATA,
    so the ask path repairs or refuses it; only the server's state is UNAVAILABLE."""
    code = int(exc.args[0]) if getattr(exc, "args", None) and isinstance(exc.args[0], int) else 0
    message = _short(exc)
    if code in (1969, 3024, 1317, 1028):  # statement time exceeded; query interrupted
        return StatementError(FailureKind.TIMEOUT, "57014", "statement timed out")
    if code in (1044, 1045, 1142, 1143, 1227, 1370, 1792, 1698):
        return StatementError(FailureKind.PERMISSION, "42501", message)
    if code in (1037, 1038, 1041, 3015):  # out of memory, sort memory
        return StatementError(FailureKind.RESOURCE, "53200", message)
    if (
        code in _UNAVAILABLE
        or 2000 <= code < 3000
        or (
            code == 0 and isinstance(exc, pymysql.err.OperationalError | pymysql.err.InterfaceError)
        )
    ):
        return StatementError(FailureKind.UNAVAILABLE, "08006", "database unavailable")
    return StatementError(FailureKind.DATA, data_state(message), message)


def connect_args(url: str) -> dict[str, Any]:
    """PyMySQL's keyword arguments for ``mysql://user:password@host:port/database``."""
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "localhost",
        "port": parts.port or 3306,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "database": unquote(parts.path.lstrip("/")) or None,
        "connect_timeout": _CONNECT_TIMEOUT_S,
        "charset": "utf8mb4",
        "autocommit": True,
    }


class _MysqlConnection:
    """One PyMySQL connection; every statement in a read-only transaction under the
    server's statement time limit, rolled back."""

    def __init__(self, engine: MysqlEngine, conn: pymysql.connections.Connection[Any]) -> None:
        self._engine = engine
        self.conn = conn
        self.thread_id = int(conn.thread_id())  # type: ignore[no-untyped-call]

    def interrupt(self) -> None:
        self._engine.kill(self.thread_id)

    def run(
        self, text: str, params: tuple[Any, ...], *, timeout_s: float, max_rows: int | None = None
    ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        if params:
            text = text.replace("?", "%s")
        try:
            with self.conn.cursor() as cursor:
                if self._engine.read_only:
                    cursor.execute(self._engine.timeout_statement(timeout_s))
                    cursor.execute("START TRANSACTION READ ONLY")
                cursor.execute(text, params or None)
                rows = list(cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows))
                description = cursor.description or ()
        except pymysql.err.Error as exc:
            raise mysql_error(exc) from None
        finally:
            with contextlib.suppress(pymysql.err.Error):
                self.conn.rollback()
        names = [str(d[0]) for d in description]
        types = [_RESULT_TYPES.get(d[1], "text") for d in description]
        out = [list(r) for r in rows]
        for index, kind in enumerate(types):
            zoned = _zoned([r[index] for r in out]) if kind == "text" else None
            if zoned is not None:
                types[index] = "timestamp with time zone"
                for row, value in zip(out, zoned, strict=True):
                    row[index] = value
        return names, types, [tuple(r) for r in out]


_ZONED = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2}$")


def _zoned(values: list[Any]) -> list[Any] | None:
    """A text column whose every value is a timestamp with its UTC offset (what a
    truncated date is written as here) as those instants; None for any other column."""
    present = [v for v in values if v is not None]
    if not present or not all(isinstance(v, str) and _ZONED.match(v) for v in present):
        return None
    return [None if v is None else dt.datetime.fromisoformat(v) for v in values]


class MysqlEngine:
    """A MySQL or MariaDB database reached with a SELECT-only user."""

    def __init__(self, url: str, *, read_only: bool = True) -> None:
        self.url = url
        self.read_only = read_only
        self.database = str(connect_args(url)["database"] or "")
        self._idle: queue.SimpleQueue[_MysqlConnection] = queue.SimpleQueue()
        self._all: list[_MysqlConnection] = []
        self._lock = threading.Lock()
        self._mariadb: bool | None = None

    def _connect(self) -> _MysqlConnection:
        try:
            conn = pymysql.connect(**connect_args(self.url))
            with conn.cursor() as cursor:
                cursor.execute("SET SESSION time_zone = '+00:00'")
                if self.read_only:
                    cursor.execute("SET SESSION TRANSACTION READ ONLY")
                if self._mariadb is None:
                    cursor.execute("SELECT VERSION()")
                    row = cursor.fetchone()
                    self._mariadb = "mariadb" in str(row[0] if row else "").lower()
        except pymysql.err.Error as exc:
            raise mysql_error(exc) from None
        return _MysqlConnection(self, conn)

    def timeout_statement(self, timeout_s: float) -> str:
        if self._mariadb:
            return f"SET SESSION max_statement_time = {max(timeout_s, 0.001):.3f}"
        return f"SET SESSION max_execution_time = {max(int(timeout_s * 1000), 1)}"

    def kill(self, thread_id: int) -> None:
        """Stop a running query from a connection of its own (the client-side timeout)."""
        with contextlib.suppress(pymysql.err.Error, StatementError):
            conn = pymysql.connect(**connect_args(self.url))
            try:
                with conn.cursor() as cursor:
                    cursor.execute(f"KILL QUERY {int(thread_id)}")
            finally:
                conn.close()

    def open(self) -> None:
        with self.statement_connection() as conn:
            conn.run("SELECT 1", (), timeout_s=5.0)

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                with contextlib.suppress(pymysql.err.Error):
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
            conn = self._connect()
            with self._lock:
                self._all.append(conn)
        healthy = True
        try:
            yield conn
        except StatementError as exc:
            healthy = exc.kind is not FailureKind.UNAVAILABLE
            raise
        finally:
            if healthy and conn.conn.open:
                self._idle.put(conn)
            else:
                with self._lock, contextlib.suppress(ValueError):
                    self._all.remove(conn)

    catalog_connection = statement_connection

    def capabilities(self) -> list[Capability]:
        """What the user's grants allow beyond reading (``SHOW GRANTS``)."""
        with self.statement_connection() as wrapped:
            conn = wrapped.conn  # type: ignore[attr-defined]
            with conn.cursor() as cursor:
                cursor.execute("SHOW GRANTS FOR CURRENT_USER()")
                grants = [str(r[0]) for r in cursor.fetchall()]
        found: list[Capability] = []
        for grant in grants:
            match = _GRANT.match(grant)
            privileges = match.group(1).upper() if match else ""
            if grant.upper().rstrip().endswith("WITH GRANT OPTION"):
                privileges += ", GRANT OPTION"
            for privilege in _SUPER:
                if re.search(rf"\b{privilege}\b", privileges):
                    found.append(Capability(Severity.SUPERUSER, f"{privilege} ({grant[:80]})"))
            for privilege in _WRITE:
                if re.search(rf"(^|, ){privilege}(,|$| \()", privileges):
                    found.append(Capability(Severity.WRITE, f"{privilege} ({grant[:80]})"))
        return found

    def structure(self, database: str, exclude: Sequence[str]) -> Catalog:
        with self.statement_connection() as wrapped:
            conn = wrapped.conn  # type: ignore[attr-defined]
            with conn.cursor() as cursor:
                cursor.execute(
                    "SELECT TABLE_NAME, TABLE_COMMENT, TABLE_ROWS FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME"
                )
                relations = cursor.fetchall()
                cursor.execute(
                    "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE, COLUMN_COMMENT "
                    "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                    "ORDER BY TABLE_NAME, ORDINAL_POSITION"
                )
                columns: dict[str, list[ColumnInfo]] = {}
                for table, name, kind, nullable, comment in cursor.fetchall():
                    columns.setdefault(str(table), []).append(
                        ColumnInfo(
                            str(name), mysql_type(str(kind)), nullable == "YES", str(comment or "")
                        )
                    )
                # TABLE_CONSTRAINTS lists nothing to a SELECT-only user on MariaDB: the
                # kind is read from the key's name and whether it references a table
                cursor.execute(
                    "SELECT TABLE_NAME, CASE WHEN CONSTRAINT_NAME = 'PRIMARY' THEN 'PRIMARY KEY' "
                    "WHEN REFERENCED_TABLE_NAME IS NOT NULL THEN 'FOREIGN KEY' ELSE 'UNIQUE' END, "
                    "CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
                    "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() "
                    "ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION"
                )
                keys = cursor.fetchall()
        schema = self.database
        grouped: dict[tuple[str, str, str], list[tuple[str, str | None, str | None]]] = {}
        for table, kind, name, column, parent, parent_column in keys:
            grouped.setdefault((str(table), str(kind), str(name)), []).append(
                (str(column), parent, parent_column)
            )
        primary: dict[str, tuple[str, ...]] = {}
        unique: dict[str, list[tuple[str, ...]]] = {}
        foreign: dict[str, list[ForeignKeyInfo]] = {}
        for (table, kind, _), parts in grouped.items():
            cols = tuple(p[0] for p in parts)
            if kind == "PRIMARY KEY":
                primary[table] = cols
            elif kind == "UNIQUE":
                unique.setdefault(table, []).append(cols)
            elif kind == "FOREIGN KEY" and parts[0][1]:
                foreign.setdefault(table, []).append(
                    ForeignKeyInfo(cols, f"{schema}.{parts[0][1]}", tuple(str(p[2]) for p in parts))
                )
        tables = tuple(
            TableInfo(
                schema=schema,
                name=str(name),
                comment=str(comment or ""),
                row_estimate=int(rows) if rows is not None else -1,
                columns=tuple(columns.get(str(name), [])),
                primary_key=primary.get(str(name), ()),
                foreign_keys=tuple(foreign.get(str(name), [])),
                unique_keys=tuple(unique.get(str(name), [])),
            )
            for name, comment, rows in relations
            if not excluded((schema, str(name)), exclude)
        )
        return resolve_foreign_keys(Catalog(database=database, tables=tables))

    def fingerprint(self, exclude: Sequence[str]) -> str:
        digest = hashlib.sha256()
        with self.statement_connection() as wrapped:
            conn = wrapped.conn  # type: ignore[attr-defined]
            with conn.cursor() as cursor:
                cursor.execute(
                    "SELECT TABLE_NAME, CREATE_TIME, UPDATE_TIME, TABLE_ROWS, "
                    "(SELECT GROUP_CONCAT(CONCAT_WS(' ', COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
                    "COLUMN_COMMENT) ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS c "
                    "WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME) "
                    "FROM information_schema.TABLES t WHERE TABLE_SCHEMA = DATABASE() "
                    "ORDER BY TABLE_NAME"
                )
                for row in cursor.fetchall():
                    if not excluded((self.database, str(row[0])), exclude):
                        digest.update(("|".join(str(v) for v in row) + "\n").encode())
        return digest.hexdigest()


# Why a server could not be reached, by MySQL's error code: the cause and the fix.
_CONNECT_CAUSES = {
    1045: "authentication failed: check the user and password in the URL",
    1049: "database {database!r} does not exist: check the name in the URL",
    1044: "the user may not use database {database!r}: GRANT SELECT ON `{database}`.* TO it",
    1130: "the server refuses this client host: create the user for this host ('user'@'%')",
    2003: "cannot connect: is MySQL/MariaDB running at that host and port?",
    2005: "unknown host: check the host in the URL",
    2013: "the connection was lost while connecting: check the host and port",
}
# The recipe for a user that can only read one database.
READ_ONLY_RECIPE = (
    "CREATE USER 'tandem_ro'@'%' IDENTIFIED BY '…'; GRANT SELECT ON `{database}`.* TO "
    "'tandem_ro'@'%'"
)


def mysql_unreachable(url: str) -> str | None:
    """None when a connection opens with the URL's user; otherwise why not and the fix."""
    args = connect_args(url)
    try:
        pymysql.connect(**args).close()
    except pymysql.err.Error as exc:
        code = int(exc.args[0]) if exc.args and isinstance(exc.args[0], int) else 0
        cause = _CONNECT_CAUSES.get(code)
        if cause is None and code == 2003 and "timed out" in _short(exc).lower():
            cause = "no answer within 5 s: a firewall, or the wrong host or port"
        return (cause or _short(exc)).format(database=args["database"] or "")
    return None
