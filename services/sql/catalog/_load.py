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

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import psycopg

from services.sql.catalog._catalog import Catalog, introspect, read_values
from services.sql.catalog._families import (
    choose_canonical,
    lookalike_groups,
    mark_lookalikes,
    needs_rows,
    referenced_tables,
    schema_sizes,
)
from services.sql.catalog._inference import infer_joins
from services.sql.catalog._joins import resolve_joins
from services.sql.catalog._narrowing import index_of
from services.sql.catalog._rows import count_rows, row_count
from services.sql.catalog._stated import with_stated_units
from services.sql.definitions import GlossaryEntry, JoinSpec


async def load_catalog(
    conn: psycopg.AsyncConnection[Any],
    database: str,
    *,
    exclude: Sequence[str] = (),
    joins: Sequence[JoinSpec] = (),
    structure: Catalog | None = None,
    glossary: Sequence[GlossaryEntry] = (),
) -> tuple[Catalog, list[str]]:
    """The database's catalog as the SQL service serves it, and the glossary joins that
    could not be resolved (each in words). ``structure``: the tables as another engine
    describes them (a SQLite or DuckDB file, ``services.sql.targets``), read instead of
    ``pg_catalog``; values, families and keys are then found the same way, without
    Postgres's planner statistics.

    On Postgres the row counts of the tables questions are linked to (and of the
    look-alikes only rows can tell apart) are counted (``_rows``), not taken from
    ``pg_class``: what the catalog states and reads must not change with whether
    autovacuum has analysed the tables yet.

    The units the ``glossary`` states ("dep_delay: in minutes") are recorded on the columns
    its entries name (``_stated``), beside those read from the data (``_differences``)."""
    statistics = structure is None
    if structure is None:
        structure = await introspect(conn, database, exclude=exclude, values=False)
    declared, problems = resolve_joins(structure, joins)
    referenced = referenced_tables(structure, declared)
    sizes = schema_sizes(structure.tables)
    counted: dict[str, int] = {}
    families = []
    for members in lookalike_groups(structure.tables):
        # another engine's structure holds counted rows already; Postgres's, estimates
        known = {} if statistics else {t.qualified: t.row_estimate for t in members}
        rows = {k: n for k, n in known.items() if n >= 0}
        if needs_rows(members, referenced=referenced, schema_sizes=sizes):
            counted |= await count_rows(conn, [t for t in members if t.qualified not in rows])
            rows |= {
                t.qualified: row_count(t.row_estimate, counted.get(t.qualified)) for t in members
            }
        families.append(
            choose_canonical(members, referenced=referenced, schema_sizes=sizes, rows=rows)
        )
    marked = mark_lookalikes(structure, families)
    if statistics:
        marked = await _counted(conn, marked, counted)
    copies = {t.qualified for t in marked.tables if t.lookalike_of}
    valued = await read_values(conn, marked, skip=copies, statistics=statistics)
    linked = replace(valued, tables=tuple(t for t in valued.tables if not t.lookalike_of))
    inferred = await infer_joins(conn, linked, declared)
    keyed = {t.qualified: t for t in inferred.tables}
    tables = tuple(keyed.get(t.qualified, t) for t in valued.tables)
    catalog = with_stated_units(
        replace(valued, tables=tables, joins=inferred.joins, incomplete=inferred.incomplete),
        glossary,
    )
    index_of(catalog)  # built while loading, not by the first question
    return catalog, problems


async def _counted(
    conn: psycopg.AsyncConnection[Any], catalog: Catalog, counted: dict[str, int]
) -> Catalog:
    """The catalog with its tables' rows counted, copies left with their estimate (a copy
    is read only when a question names it: a warehouse of a thousand look-alikes costs
    the count of the tables they copy)."""
    wanted = [t for t in catalog.tables if not t.lookalike_of and t.qualified not in counted]
    counted = counted | await count_rows(conn, wanted)
    tables = tuple(
        t
        if t.lookalike_of
        else replace(t, row_estimate=row_count(t.row_estimate, counted.get(t.qualified)))
        for t in catalog.tables
    )
    return replace(catalog, tables=tables)
