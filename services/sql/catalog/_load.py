"""One catalog load, in the order that keeps a wide warehouse cheap to read.

The structure first (three set-based queries, whatever the table count), less the tables
the operator excluded; then the look-alike families (``_families``), which need only the
structure and, where nothing else tells a family's canonical table, bounded row counts;
then stored values and inferred keys and joins for the tables questions are linked to
only. A copy (``stg_singer`` beside ``singer``) is still listed, readable by name, but
its values are not read and no key is inferred for it: a warehouse of a thousand tables
that are forty tables and their copies costs what forty tables cost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import psycopg
from psycopg import sql

from services.sql.catalog._catalog import Catalog, TableInfo, introspect, read_values
from services.sql.catalog._families import (
    choose_canonical,
    lookalike_groups,
    mark_lookalikes,
    needs_rows,
    referenced_tables,
    schema_sizes,
)
from services.sql.catalog._joins import infer_joins, resolve_joins
from services.sql.catalog._narrowing import index_of
from services.sql.definitions import JoinSpec

_log = logging.getLogger("tandem.sql.catalog")

# Row counts that tell look-alikes apart stop counting here (more is "large"), each
# family's counts read in one statement under this timeout.
ROW_COUNT_CAP = 100_000
_COUNT_TIMEOUT = "2s"


async def load_catalog(
    conn: psycopg.AsyncConnection[Any],
    database: str,
    *,
    exclude: Sequence[str] = (),
    joins: Sequence[JoinSpec] = (),
    structure: Catalog | None = None,
) -> tuple[Catalog, list[str]]:
    """The database's catalog as the SQL service serves it, and the glossary joins that
    could not be resolved (each in words). ``structure``: the tables as another engine
    describes them (a SQLite or DuckDB file, ``services.sql.targets``), read instead of
    ``pg_catalog``; values, families and keys are then found the same way, without
    Postgres's planner statistics."""
    statistics = structure is None
    if structure is None:
        structure = await introspect(conn, database, exclude=exclude, values=False)
    declared, problems = resolve_joins(structure, joins)
    referenced = referenced_tables(structure, declared)
    sizes = schema_sizes(structure.tables)
    families = []
    for members in lookalike_groups(structure.tables):
        rows = {t.qualified: t.row_estimate for t in members if t.row_estimate >= 0}
        if needs_rows(members, referenced=referenced, schema_sizes=sizes):
            rows |= await _row_counts(conn, [t for t in members if t.qualified not in rows])
        families.append(
            choose_canonical(members, referenced=referenced, schema_sizes=sizes, rows=rows)
        )
    marked = mark_lookalikes(structure, families)
    copies = {t.qualified for t in marked.tables if t.lookalike_of}
    valued = await read_values(conn, marked, skip=copies, statistics=statistics)
    linked = replace(valued, tables=tuple(t for t in valued.tables if not t.lookalike_of))
    inferred = await infer_joins(conn, linked, declared)
    keyed = {t.qualified: t for t in inferred.tables}
    tables = tuple(keyed.get(t.qualified, t) for t in valued.tables)
    catalog = replace(valued, tables=tables, joins=inferred.joins)
    index_of(catalog)  # built while loading, not by the first question
    return catalog, problems


async def _row_counts(
    conn: psycopg.AsyncConnection[Any], tables: Sequence[TableInfo]
) -> dict[str, int]:
    """Rows of each table, counted up to :data:`ROW_COUNT_CAP`, in one bounded statement;
    none when it fails (the family's canonical table then goes by name)."""
    if not tables:
        return {}
    counts = sql.SQL(", ").join(
        sql.SQL("(SELECT count(*) FROM (SELECT 1 FROM {} LIMIT {}) AS s)").format(
            sql.Identifier(t.schema, t.name), sql.Literal(ROW_COUNT_CAP)
        )
        for t in tables
    )
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = '{_COUNT_TIMEOUT}'")
            row = await (await conn.execute(sql.SQL("SELECT {}").format(counts))).fetchone()
    except psycopg.Error as exc:
        _log.info(
            "look-alike row counts skipped", extra={"fields": {"error.type": type(exc).__name__}}
        )
        return {}
    if row is None:
        return {}
    return {t.qualified: int(n) for t, n in zip(tables, row, strict=True)}
