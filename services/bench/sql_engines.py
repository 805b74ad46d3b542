"""A loaded dev-set database copied into a SQLite or DuckDB file or a MariaDB database,
for ``tandem eval sql --engine sqlite|duckdb|mysql``: the dataset's dump is loaded into
Postgres exactly as for the Postgres run (the gold queries run there, on the data as
published), then each table is copied with its columns, types, primary, unique and foreign
keys (those still declared: ``--drop-keys`` copies none) and rows. The same questions are
then asked of the engine's warehouse and scored against the same gold results.

SQLite has one schema (``main``): a dataset's tables in another schema (``ewallet``'s
``consumer_div``) land there; DuckDB keeps the schema; MySQL (a private MariaDB server,
``services.bench.mariadb``) gets a database per dataset database, compared byte for byte
as Postgres compares text.
"""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pymysql
from psycopg import sql

from services.bench.mariadb import MariaDb

ENGINES = ("postgres", "sqlite", "duckdb", "mysql")
_SUFFIX = {"sqlite": ".sqlite", "duckdb": ".duckdb"}

_TABLES_SQL = """
SELECT c.oid, n.nspname, c.relname
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname <> 'information_schema'
  AND n.nspname NOT LIKE 'pg\\_%'
ORDER BY n.nspname, c.relname
"""
_COLUMNS_SQL = """
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""
_KEYS_SQL = """
SELECT con.conrelid, con.contype,
       ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_catalog.pg_attribute a
               ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord),
       con.confrelid,
       ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_catalog.pg_attribute a
               ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord)
FROM pg_catalog.pg_constraint con
WHERE con.conrelid = ANY(%s) AND con.contype IN ('p', 'u', 'f')
ORDER BY con.conrelid, con.conname
"""


@dataclass
class _Table:
    oid: int
    schema: str
    name: str
    columns: list[tuple[str, str, bool]] = field(default_factory=list)
    primary: tuple[str, ...] = ()
    unique: list[tuple[str, ...]] = field(default_factory=list)
    foreign: list[tuple[tuple[str, ...], int, tuple[str, ...]]] = field(default_factory=list)


def engine_type(engine: str, pg_type: str) -> str:
    """A Postgres column type as ``engine`` declares it."""
    base = pg_type.lower()
    if base.endswith("[]"):
        return "TEXT" if engine == "sqlite" else engine_type(engine, base[:-2]) + "[]"
    if base in ("integer", "smallint", "bigint"):
        # one integer type: DuckDB joins a foreign key only to a key of the same type
        return "INTEGER" if engine == "sqlite" else "BIGINT"
    if base.startswith("numeric"):
        if engine == "duckdb" and "(" in base:
            precision = int(base.split("(")[1].split(",")[0].rstrip(")"))
            return base.upper().replace("NUMERIC", "DECIMAL") if precision <= 38 else "DOUBLE"
        return "NUMERIC" if engine == "sqlite" else "DOUBLE"
    if base in ("real", "double precision"):
        return "REAL" if engine == "sqlite" else "DOUBLE"
    if base == "boolean":
        return "BOOLEAN"
    if base == "date":
        return "DATE"
    if base.startswith("timestamp"):
        if "with time zone" in base:
            return "TIMESTAMP" if engine == "sqlite" else "TIMESTAMPTZ"
        return "TIMESTAMP"
    if base.startswith(("time", "interval")):
        return "TEXT" if engine == "sqlite" else base.upper().split("(")[0]
    if base.startswith(("character varying", "varchar")):
        return "VARCHAR"
    return "TEXT"


def mysql_type(pg_type: str, longest: int) -> str:
    """A Postgres column type as MySQL declares it; text as VARCHAR(255) when every value
    fits (a key may then be declared on it), else TEXT."""
    base = pg_type.lower()
    if base in ("integer", "smallint", "bigint"):
        return "BIGINT"  # one integer type: a foreign key joins only to a key of its type
    if base.startswith("numeric"):
        return base.upper().replace("NUMERIC", "DECIMAL") if "(" in base else "DOUBLE"
    if base in ("real", "double precision"):
        return "DOUBLE"
    if base == "boolean":
        return "BOOLEAN"
    if base == "date":
        return "DATE"
    if base.startswith("timestamp"):
        return "DATETIME(6)"
    if base.startswith("time "):
        return "TIME(6)"
    return "VARCHAR(255)" if longest <= 255 else "TEXT"


def _mysql_value(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dt.timedelta | list | dict):
        return str(value)
    return value


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, list | dict):
        return str(value)
    return value


def _quoted(*parts: str) -> str:
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


async def _read(conn: psycopg.AsyncConnection[Any]) -> list[_Table]:
    tables = [
        _Table(int(o), str(s), str(n))
        for o, s, n in await (await conn.execute(_TABLES_SQL)).fetchall()
    ]
    by_oid = {t.oid: t for t in tables}
    oids = list(by_oid)
    for oid, name, kind, notnull in await (await conn.execute(_COLUMNS_SQL, (oids,))).fetchall():
        by_oid[int(oid)].columns.append((str(name), str(kind), bool(notnull)))
    for oid, kind, cols, parent, parent_cols in await (
        await conn.execute(_KEYS_SQL, (oids,))
    ).fetchall():
        table = by_oid[int(oid)]
        if kind == "p":
            table.primary = tuple(cols)
        elif kind == "u":
            table.unique.append(tuple(cols))
        elif int(parent) in by_oid:
            table.foreign.append((tuple(cols), int(parent), tuple(parent_cols)))
    return _parents_first(tables)


def _parents_first(tables: list[_Table]) -> list[_Table]:
    """Tables in an order where every referenced table comes before its referrers (a
    cycle keeps the remaining tables in name order)."""
    done: list[_Table] = []
    left = list(tables)
    while left:
        placed = {t.oid for t in done}
        ready = [t for t in left if all(p in placed or p == t.oid for _, p, _ in t.foreign)]
        chosen = ready or left[:1]
        done += chosen
        left = [t for t in left if t not in chosen]
    return done


def _create(engine: str, table: _Table, by_oid: dict[int, _Table], created: set[int]) -> str:
    name = _quoted(table.name) if engine == "sqlite" else _quoted(table.schema, table.name)
    parts = [
        f"{_quoted(c)} {engine_type(engine, kind)}{' NOT NULL' if notnull else ''}"
        for c, kind, notnull in table.columns
    ]
    if table.primary:
        parts.append(f"PRIMARY KEY ({', '.join(_quoted(c) for c in table.primary)})")
    for cols in table.unique:
        parts.append(f"UNIQUE ({', '.join(_quoted(c) for c in cols)})")
    for cols, parent_oid, parent_cols in table.foreign:
        if parent_oid not in created and parent_oid != table.oid:
            continue  # a cycle: DuckDB needs the parent first
        parent = by_oid[parent_oid]
        target = _quoted(parent.name) if engine == "sqlite" else _quoted(parent.schema, parent.name)
        parts.append(
            f"FOREIGN KEY ({', '.join(_quoted(c) for c in cols)}) REFERENCES "
            f"{target} ({', '.join(_quoted(c) for c in parent_cols)})"
        )
    return f"CREATE TABLE {name} ({', '.join(parts)})"


async def copy_database(
    source_url: str, engine: str, folder: Path, name: str, *, mariadb: MariaDb | None = None
) -> str:
    """Copy the database at ``source_url`` into a new ``engine`` file in ``folder`` (or a
    new database on ``mariadb``, read by a SELECT-only user); returns the target URL for
    SQL_DATABASES."""
    path = folder / f"{name}{_SUFFIX.get(engine, '')}"
    path.unlink(missing_ok=True)
    async with await psycopg.AsyncConnection.connect(source_url, autocommit=True) as conn:
        await conn.execute("SET TimeZone = 'UTC'")
        tables = await _read(conn)
        by_oid = {t.oid: t for t in tables}
        data: dict[int, list[tuple[Any, ...]]] = {}
        for table in tables:
            columns = sql.SQL(", ").join(sql.Identifier(c) for c, _, _ in table.columns)
            cur = await conn.execute(
                sql.SQL("SELECT {} FROM {}").format(
                    columns, sql.Identifier(table.schema, table.name)
                )
            )
            data[table.oid] = list(await cur.fetchall())
    if engine == "mysql":
        assert mariadb is not None
        _write_mysql(mariadb, name, tables, by_oid, data)
        return mariadb.create_reader(name, f"eval_ro_{name}"[:60], "eval-reader")
    if engine == "sqlite":
        _write_sqlite(path, tables, by_oid, data)
    else:
        _write_duckdb(path, tables, by_oid, data)
    return f"{engine}://{path.resolve()}"


def _write_mysql(
    server: MariaDb,
    name: str,
    tables: Sequence[_Table],
    by_oid: dict[int, _Table],
    data: dict[int, list[Any]],
) -> None:
    """The tables in a new database on ``server``, compared byte for byte as Postgres
    compares text (``utf8mb4_bin``: MySQL's default collation ignores case)."""
    with server.admin() as conn, conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
        cursor.execute(f"USE `{name}`")
        created: set[int] = set()
        for table in tables:
            rows = data[table.oid]
            longest = {
                i: max((len(str(r[i])) for r in rows if r[i] is not None), default=0)
                for i in range(len(table.columns))
            }
            declared = {
                c: mysql_type(kind, longest[i]) for i, (c, kind, _) in enumerate(table.columns)
            }
            keyable = {c for c, kind in declared.items() if kind != "TEXT"}
            parts = [
                f"`{c}` {declared[c]}{' NOT NULL' if notnull else ''}"
                for c, _, notnull in table.columns
            ]
            if table.primary and set(table.primary) <= keyable:
                parts.append(f"PRIMARY KEY ({', '.join(f'`{c}`' for c in table.primary)})")
            for cols in table.unique:
                if set(cols) <= keyable:
                    parts.append(f"UNIQUE ({', '.join(f'`{c}`' for c in cols)})")
            foreign = []
            for cols, parent_oid, parent_cols in table.foreign:
                if parent_oid in created or parent_oid == table.oid:
                    parent = by_oid[parent_oid]
                    foreign.append(
                        f"FOREIGN KEY ({', '.join(f'`{c}`' for c in cols)}) REFERENCES "
                        f"`{parent.name}` ({', '.join(f'`{c}`' for c in parent_cols)})"
                    )
            try:
                cursor.execute(f"CREATE TABLE `{table.name}` ({', '.join(parts + foreign)})")
            except pymysql.err.Error:
                # a key MySQL cannot declare: the table without its foreign keys
                cursor.execute(f"CREATE TABLE `{table.name}` ({', '.join(parts)})")
            created.add(table.oid)
            if rows:
                cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
                marks = ", ".join("%s" for _ in table.columns)
                cursor.executemany(
                    f"INSERT INTO `{table.name}` VALUES ({marks})",
                    [tuple(_mysql_value(v) for v in row) for row in rows],
                )
                cursor.execute("SET FOREIGN_KEY_CHECKS = 1")


def _write_sqlite(
    path: Path, tables: Sequence[_Table], by_oid: dict[int, _Table], data: dict[int, list[Any]]
) -> None:
    conn = sqlite3.connect(path)
    try:
        created: set[int] = set()
        for table in tables:
            conn.execute(_create("sqlite", table, by_oid, created))
            created.add(table.oid)
            marks = ", ".join("?" for _ in table.columns)
            conn.executemany(
                f"INSERT INTO {_quoted(table.name)} VALUES ({marks})",
                [tuple(_sqlite_value(v) for v in row) for row in data[table.oid]],
            )
        conn.commit()
    finally:
        conn.close()


def _write_duckdb(
    path: Path, tables: Sequence[_Table], by_oid: dict[int, _Table], data: dict[int, list[Any]]
) -> None:
    conn = duckdb.connect(str(path))
    try:
        created: set[int] = set()
        for schema in sorted({t.schema for t in tables}):
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_quoted(schema)}")
        for table in tables:
            try:
                conn.execute(_create("duckdb", table, by_oid, created))
            except duckdb.Error:
                # a key DuckDB cannot declare (types or columns it does not match): the
                # table without its foreign keys; the catalog infers those joins
                conn.execute(_create("duckdb", replace(table, foreign=[]), by_oid, created))
            created.add(table.oid)
            rows = data[table.oid]
            if rows:
                marks = ", ".join("?" for _ in table.columns)
                conn.executemany(
                    f"INSERT INTO {_quoted(table.schema, table.name)} VALUES ({marks})",
                    [list(row) for row in rows],
                )
    finally:
        conn.close()
