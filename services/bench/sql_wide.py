"""The wide version of a text-to-SQL dataset: each database beside about a thousand
look-alike tables, as a real warehouse carries them (``tandem eval sql --wide``).

A warehouse's question is rarely about its only table called ``singer``: staging loads
(``stg_…``), archives, backups, yearly and regional copies of ordinary tables sit beside
the one the business means, with rows. Two kinds of extra table are built here, every one
with rows copied from the dataset:

- **copies of the other databases' tables** under warehouse-style names
  (``stg_pets_1_student_2021``, ``fct_flight_2_airlines_emea``), each a deterministic
  subset of the source rows, as many variants per table as it takes to reach the wanted
  table count; they are built once into a template database and each wide database is
  created from it;
- **look-alikes of the database's own tables**: ``<t>_archive``, ``stg_<t>``,
  ``<t>_2019`` in the table's schema and ``archive.<t>`` in a schema of their own, each a
  strict subset of the table's rows and without keys, so a statement that reads a
  look-alike instead of the table answers differently.

The database's own tables, keys and rows are untouched, so every gold query reads what it
read before. Nothing here knows a particular dataset.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from services.bench.sql_fresh import NO_AUTOVACUUM

# Warehouse naming: a layer prefix and a copy suffix. Their product gives each source
# table as many distinct look-alike names as a thousand tables need.
_PREFIXES = ("stg_", "raw_", "src_", "int_", "dim_", "fct_", "ods_", "tmp_", "bak_", "old_")
_SUFFIXES = (
    "",
    "_archive",
    "_backup",
    "_hist",
    "_snapshot",
    "_2019",
    "_2020",
    "_2021",
    "_2022",
    "_2023",
    "_emea",
    "_apac",
    "_amer",
    "_latam",
)
# Look-alikes of a database's own tables: (schema or None for the table's own, name
# pattern, share of rows kept).
_OWN_LOOKALIKES: tuple[tuple[str | None, str, float], ...] = (
    (None, "{t}_archive", 0.6),
    (None, "stg_{t}", 0.8),
    (None, "{t}_2019", 0.3),
    ("archive", "{t}", 0.5),
)
_NAME_MAX = 63  # Postgres truncates longer identifiers


@dataclass(frozen=True)
class SourceTable:
    """One table of a dataset database: where it lives, its columns and its rows."""

    database: str
    schema: str
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, Postgres type)
    rows: tuple[tuple[Any, ...], ...]


_TABLES_SQL = """
SELECT n.nspname, c.relname, c.oid
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
ORDER BY n.nspname, c.relname
"""
_COLUMNS_SQL = """
SELECT attname, format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute
WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum
"""


async def table_names(url: str) -> set[tuple[str, str]]:
    """(schema, name) of every ordinary table of the database at ``url``."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        return {(s, n) for s, n, _ in await (await conn.execute(_TABLES_SQL)).fetchall()}


async def read_tables(
    url: str, database: str, *, skip: frozenset[tuple[str, str]] = frozenset()
) -> list[SourceTable]:
    """Every ordinary table of the database at ``url`` but ``skip``, with its rows, in
    name order."""
    found: list[SourceTable] = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for schema, name, oid in await (await conn.execute(_TABLES_SQL)).fetchall():
            if (schema, name) in skip:
                continue
            columns = await (await conn.execute(_COLUMNS_SQL, (oid,))).fetchall()
            rows = await (
                await conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(schema, name)))
            ).fetchall()
            found.append(
                SourceTable(database, schema, name, tuple((c, t) for c, t in columns), tuple(rows))
            )
    return found


def variant_names(table: SourceTable, count: int) -> list[str]:
    """``count`` warehouse-style names for a copy of ``table`` (distinct, at most 63
    characters; the source database is in each, so two databases' ``singer`` differ)."""
    base = f"{table.database}_{table.name}"
    names: list[str] = []
    for suffix, prefix in itertools.product(_SUFFIXES, _PREFIXES):
        name = f"{prefix}{base}{suffix}"[:_NAME_MAX]
        if name not in names:
            names.append(name)
        if len(names) == count:
            break
    return names


def subset(rows: Sequence[tuple[Any, ...]], share: float, salt: int) -> list[tuple[Any, ...]]:
    """A deterministic share of ``rows`` (at least one row, and fewer than all when there
    are two or more and the share is below one)."""
    if not rows:
        return []
    keep = max(1, math.floor(len(rows) * share))
    if share < 1.0 and len(rows) > 1:
        keep = min(keep, len(rows) - 1)
    order = sorted(range(len(rows)), key=lambda i: (i * 2654435761 + salt * 40503) % 2**32)
    chosen = sorted(order[:keep])
    return [rows[i] for i in chosen]


async def _create(
    conn: psycopg.AsyncConnection[Any],
    schema: str,
    name: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[tuple[Any, ...]],
) -> None:
    defs = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t)) for c, t in columns
    )
    await conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(schema, name), defs))
    if not rows:
        return
    names = sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns)
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(schema, name), names)
    async with conn.cursor().copy(statement) as copy:
        for row in rows:
            await copy.write_row(row)


async def build_template(
    admin_url: str, template: str, sources: Sequence[SourceTable], extra_tables: int
) -> int:
    """(Re-)create database ``template`` holding about ``extra_tables`` copies of
    ``sources`` under warehouse-style names in ``public``; returns how many it holds."""
    from services.sql import database_url  # noqa: PLC0415

    per_table = max(1, math.ceil(extra_tables / max(1, len(sources))))
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
        ident = sql.Identifier(template)
        await admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
        await admin.execute(sql.SQL("CREATE DATABASE {}").format(ident))
    made = 0
    async with await psycopg.AsyncConnection.connect(database_url(admin_url, template)) as conn:
        for k, table in enumerate(sources):
            for v, name in enumerate(variant_names(table, per_table)):
                if made >= extra_tables:
                    break
                share = 0.4 + 0.5 * ((k * 7 + v * 3) % 10) / 10
                await _create(conn, "public", name, table.columns, subset(table.rows, share, v))
                made += 1
        await conn.execute(NO_AUTOVACUUM)  # cloned as loaded: see sql_fresh
        await conn.commit()
    return made


async def add_lookalikes(conn: psycopg.AsyncConnection[Any], own: Sequence[SourceTable]) -> int:
    """Look-alikes of the database's own tables (see the module docstring); returns how
    many were made. Run as the owner on a connection to the database."""
    made = 0
    taken = {(t.schema, t.name) for t in own}
    for k, table in enumerate(own):
        for schema, pattern, share in _OWN_LOOKALIKES:
            where = schema or table.schema
            name = pattern.format(t=table.name)[:_NAME_MAX]
            if (where, name) in taken:
                continue
            taken.add((where, name))
            if schema is not None:
                await conn.execute(
                    sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
                )
            await _create(conn, where, name, table.columns, subset(table.rows, share, k + 1))
            made += 1
    return made
