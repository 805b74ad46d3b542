"""The schema catalog: what the read-only user of a target database may read.

Introspected from ``pg_catalog`` through the target's own read-only connection, so the
catalog never lists a table that role cannot select from. Served as structured data and
as compact text for a SQL generator: capped (default 8,000 characters) and, when the
whole catalog does not fit, pruned to the tables a question is about.
"""

from __future__ import annotations

import enum
import fnmatch
import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import psycopg
from psycopg import sql

from services.sql.catalog._differences import read_difference_units
from services.sql.catalog._extents import numeric_extents, stat_extents
from services.sql.catalog._rows import ROW_COUNT_CAP, count_rows, row_count
from services.sql.catalog._years import names_year, year_span
from services.sql.words import declared_units, stem

_log = logging.getLogger("tandem.sql.catalog")

# Text columns with at most this many distinct values get sample values in the catalog.
LOW_CARDINALITY_MAX = 25
# Text columns with more, up to this many (planner estimate), are read whole into the
# value index, at most this many columns per database, from tables of at most this many
# rows, each read under its own short statement timeout.
VALUE_INDEX_DISTINCT_MAX = 5000
VALUE_INDEX_COLUMNS_MAX = 64
VALUE_INDEX_ROWS_MAX = 2_000_000
_VALUE_INDEX_TIMEOUT = "2s"
# Columns Postgres holds no statistics for (a database never analysed, or tables too small
# for autovacuum to analyse) are read from the data instead, at most this many per
# catalog load and at most this many rows read in all (a read costs its table's rows);
# the rest keep no values. A budget of rows, not of seconds: the same database must load
# the same catalog on an idle and on a busy server (a 20 s budget left nycflights13's
# ``planes`` without their makers when the machine was loaded, and "planes made by
# Boeing" was answered in one run and refused in the next, ISSUE-45 s65).
DATA_VALUE_COLUMNS_MAX = 512
DATA_VALUE_ROWS_MAX = 50_000_000
SAMPLE_VALUES = 20
_SAMPLE_VALUE_CHARS = 60
TEXT_TYPES = ("text", "character varying", "character", "citext", "name")


@dataclass(frozen=True)
class ForeignKeyInfo:
    """One foreign-key constraint: local columns -> columns of a referenced table."""

    columns: tuple[str, ...]
    referenced_table: str
    referenced_columns: tuple[str, ...]


class JoinOrigin(enum.Enum):
    """Where a join between two tables comes from, strongest first."""

    DECLARED = "declared"  # a FOREIGN KEY constraint
    GLOSSARY = "glossary"  # the database's glossary file ("joins")
    INFERRED = "inferred"  # names and data (or names alone, where data was not read)


@dataclass(frozen=True)
class JoinInfo:
    """A join the database does not declare: ``child`` columns hold values of
    ``parent`` columns (a key of ``parent``, or a column sharing values with it), with
    the evidence for it in words."""

    child: str
    child_columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]
    origin: JoinOrigin
    evidence: str = ""


@dataclass(frozen=True)
class ColumnInfo:
    """One column: name, Postgres type name, nullability, comment, sample values."""

    name: str
    data_type: str
    nullable: bool
    comment: str = ""
    sample_values: tuple[str, ...] = ()
    # Every stored value of a text column too varied for samples but small enough to
    # index (names of companies, people, products): how a question's proper names are
    # linked to the column that holds them. Never rendered into prompts.
    known_values: tuple[str, ...] = ()
    # The least and greatest stored value of an integer column whose name says it holds
    # a year (``year_id``, ``release_year``), read from the data: whether every value is
    # a plausible year decides if "in 2015" may be a condition on it. None when unread.
    span: tuple[int, int] | None = None
    # The least and greatest stored value of a numeric column (``_extents``): whether a
    # number said in a unit ("3 hours") could be meant in a finer one the column counts.
    extent: tuple[float, float] | None = None
    # The unit the column counts where neither its name nor its comment says one, and
    # where that was read: the data (a difference of two time columns, ``_differences``)
    # or the database's glossary ("dep_delay is in minutes", ``_glossary_units``).
    unit: str = ""
    unit_source: str = ""

    @property
    def units(self) -> set[str]:
        """The units the column declares (canonical: "minute"): its name's or comment's
        words ("taxi_time_mins"), else :attr:`unit`. A number said in another unit of
        the measure is converted to it (``linker._converted``), one said raw is checked
        against it (``verify._units``)."""
        return declared_units(self.name, self.comment) or ({self.unit} if self.unit else set())

    @property
    def units_source(self) -> str:
        """Where :attr:`units` were read, as the interpretation says it."""
        if declared_units(self.name, self.comment):
            return "its name or comment"
        return self.unit_source


@dataclass(frozen=True)
class TableInfo:
    """One table or view the read-only role may select from."""

    schema: str
    name: str
    comment: str = ""
    row_estimate: int = -1
    columns: tuple[ColumnInfo, ...] = ()
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKeyInfo, ...] = ()
    # UNIQUE constraints, each a tuple of columns
    unique_keys: tuple[tuple[str, ...], ...] = ()
    # Why ``primary_key`` is the key when the table declares none: inferred from the data
    # (unique and never null), empty for a declared key.
    key_evidence: str = ""
    # A copy of another table (same columns, the same noun in its name with warehouse
    # parts: ``stg_singer``, ``singer_2019``, ``archive.singer``): the qualified name of
    # the table it copies, which questions are linked to unless they name this one, and
    # why that one is the table meant (see ``_families``).
    lookalike_of: str = ""
    lookalike_evidence: str = ""
    # In a principal's catalog (``services.sql.access``): every read of this table is under
    # a row filter, so nothing may read its rows unfiltered on the principal's behalf (a
    # stored-value probe answers "no evidence" instead).
    row_filtered: bool = False

    @cached_property
    def qualified(self) -> str:
        """``schema.name``, written once: every step of a question asks for it, many
        times per table (the key of every table map, on a thousand-table warehouse too)."""
        return f"{self.schema}.{self.name}"

    @cached_property
    def rendered(self) -> str:
        """The table as a generator reads it (:func:`render_table`), written once: a
        table is immutable, and every question's schema view shows it again."""
        return render_table(self)

    def column(self, name: str) -> ColumnInfo | None:
        for column in self.columns:
            if column.name == name:
                return column
        return None


# ``Catalog.derived`` keys that say who reads a catalog, not what it holds: the access
# policy a principal's view is bound to (``services.sql.access``). A catalog narrowed to
# some of its tables is read by the same principal and carries them (:meth:`narrowed`).
ACCESS_KEY = "access"
READER_KEYS = frozenset({ACCESS_KEY})


@dataclass(frozen=True)
class Catalog:
    """Every readable table of one database, in (schema, name) order."""

    database: str
    tables: tuple[TableInfo, ...]
    refreshed_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Joins beyond the declared foreign keys: the glossary's, and those inferred from
    # names and confirmed by the data when the catalog loaded. None when the data was
    # never read (a catalog built by hand): joins are then inferred from names alone.
    joins: tuple[JoinInfo, ...] | None = None
    # Which principal's view of the load this is ("" for the full catalog): a view's
    # catalog (``services.sql.access``) shares the database and the load time with the
    # full one but not its contents (hidden parts gone, filtered tables without stored
    # values), so everything memoised from a catalog's contents is keyed by
    # :attr:`memo_key`, never by database and load time alone — else a vocabulary the
    # service key left would link a principal's question with other people's values.
    access_view: str = ""
    # Why this load's keys and joins are fewer than its data shows, in words ("" when
    # inference did all its work): a guard stopped reads on a server too slow for them
    # (``_inference_work``). Printed by ``tandem sql-check``, warned in the log.
    incomplete: str = ""
    # What other steps derive from this load and keep with it (the narrowing's word
    # index): built once per catalog, never copied into a catalog made from this one —
    # except, into a catalog of some of its tables (:meth:`narrowed`), what says who reads
    # it rather than what it holds (:data:`READER_KEYS`).
    derived: dict[str, object] = field(default_factory=dict, init=False, compare=False, repr=False)

    def narrowed(
        self, tables: tuple[TableInfo, ...], joins: tuple[JoinInfo, ...] | None
    ) -> Catalog:
        """This catalog with only ``tables`` (a question's narrowing): the same load read
        by the same principal, so the access policy it is bound to goes with it. Without
        it the gate would check a principal's statement against a catalog bound to no
        policy and write no row filter into it (on a wide warehouse every question is
        linked among a narrowed catalog)."""
        found = replace(self, tables=tables, joins=joins)
        found.derived.update((k, v) for k, v in self.derived.items() if k in READER_KEYS)
        return found

    @property
    def memo_key(self) -> tuple[str, float, str]:
        """What a memo of this catalog's contents is keyed by (with the tables, where a
        narrowed catalog of the same load is memoised apart)."""
        return (self.database, self.refreshed_at.timestamp(), self.access_view)

    @cached_property
    def contents_key(self) -> tuple[object, ...]:
        """What a memo of what this catalog's tables hold is keyed by: :attr:`memo_key`
        and the tables (a narrowed catalog of the same load is memoised apart). Built
        once per catalog: the generator and the checks ask for it on every question."""
        return (*self.memo_key, tuple(t.qualified for t in self.tables))

    # Lookups built once per catalog (a catalog is immutable): a warehouse of a thousand
    # tables is asked for tables by name many times per question.
    @cached_property
    def _qualified(self) -> dict[tuple[str, str], TableInfo]:
        return {(t.schema, t.name): t for t in self.tables}

    @cached_property
    def _unqualified(self) -> dict[str, TableInfo]:
        found: dict[str, TableInfo] = {}
        for table in self.tables:
            if table.name not in found or (
                table.schema == "public" and found[table.name].schema != "public"
            ):
                found[table.name] = table
        return found

    @cached_property
    def _referencing(self) -> dict[str, list[TableInfo]]:
        found: dict[str, list[TableInfo]] = {}
        for table in self.tables:
            for referenced in dict.fromkeys(fk.referenced_table for fk in table.foreign_keys):
                found.setdefault(referenced, []).append(table)
        return found

    def resolve(self, schema: str | None, name: str) -> TableInfo | None:
        """A table by exact (case-sensitive) name; unqualified names prefer ``public``."""
        if schema is not None:
            return self._qualified.get((schema, name))
        return self._unqualified.get(name)

    def table(self, reference: str) -> TableInfo | None:
        """A table named ``name`` or ``schema.name`` (as written in an intent or request)."""
        schema, _, name = reference.rpartition(".")
        return self.resolve(schema or None, name)

    def neighbours(self, table: TableInfo) -> list[TableInfo]:
        """Tables joined to ``table`` by a foreign key, in either direction."""
        found: dict[str, TableInfo] = {}
        for fk in table.foreign_keys:
            other = self.table(fk.referenced_table)
            if other is not None and other.qualified != table.qualified:
                found[other.qualified] = other
        for other in self._referencing.get(table.qualified, ()):
            if other.qualified != table.qualified:
                found[other.qualified] = other
        return list(found.values())


# --- introspection -------------------------------------------------------------------

# The tables, views and foreign tables the connection's role may select from, in name
# order: what a catalog lists, and what its fingerprint covers.
_READABLE = """
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
  AND NOT c.relispartition
  AND has_table_privilege(c.oid, 'SELECT')
ORDER BY n.nspname, c.relname
"""

_TABLES_SQL = (
    """
SELECT c.oid, n.nspname, c.relname, coalesce(obj_description(c.oid, 'pg_class'), ''),
       c.reltuples::bigint"""
    + _READABLE
)

_COLUMNS_SQL = """
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
       coalesce(col_description(a.attrelid, a.attnum), '')
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""

_KEYS_SQL = """
SELECT con.conrelid, con.contype,
       ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_catalog.pg_attribute a
               ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord),
       fn.nspname || '.' || fc.relname,
       ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_catalog.pg_attribute a
               ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord)
FROM pg_catalog.pg_constraint con
LEFT JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid
LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
WHERE con.conrelid = ANY(%s) AND con.contype IN ('p', 'f', 'u')
ORDER BY con.conrelid, con.conname
"""

# pg_stats shows only rows of tables the current role may read. Values seen once are
# not "most common" but appear in the histogram bounds, so a small column's distinct
# values are the union of both.
_STATS_SQL = """
SELECT schemaname, tablename, attname, n_distinct,
       coalesce(most_common_vals::text::text[], ARRAY[]::text[])
         || coalesce(histogram_bounds::text::text[], ARRAY[]::text[])
FROM pg_catalog.pg_stats
WHERE schemaname = ANY(%s)
"""


def excluded(table: TableInfo | tuple[str, str], patterns: Sequence[str]) -> bool:
    """Whether a table matches one of the operator's exclusion patterns (shell patterns,
    case-insensitive: ``stg_*`` matches the name in any schema, ``archive.*`` the schema)."""
    schema, name = (table.schema, table.name) if isinstance(table, TableInfo) else table
    name, qualified = name.lower(), f"{schema}.{name}".lower()
    return any(
        fnmatch.fnmatchcase(qualified if "." in pattern else name, pattern.lower())
        for pattern in patterns
    )


# What a catalog load depends on, one line per readable table: its name, kind, comment,
# columns (names, types, nullability, comments), constraints, and how often its rows were
# written or analysed. Cheap (no table is read), so it is checked on every TTL and the
# catalog reloaded only when it changed.
_FINGERPRINT_SQL = (
    """
SELECT n.nspname, c.relname, md5(concat_ws(':',
  c.relkind, obj_description(c.oid, 'pg_class'),
  (SELECT string_agg(concat_ws(' ', a.attname, format_type(a.atttypid, a.atttypmod),
                               a.attnotnull, col_description(c.oid, a.attnum)), ','
                     ORDER BY a.attnum)
   FROM pg_catalog.pg_attribute a
   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
  (SELECT string_agg(con.conname || pg_get_constraintdef(con.oid), ',' ORDER BY con.conname)
   FROM pg_catalog.pg_constraint con WHERE con.conrelid = c.oid),
  (SELECT concat_ws(' ', s.n_tup_ins + s.n_tup_upd + s.n_tup_del,
                    greatest(s.last_analyze, s.last_autoanalyze))
   FROM pg_catalog.pg_stat_all_tables s WHERE s.relid = c.oid)))
"""
    + _READABLE
)


async def fingerprint(conn: psycopg.AsyncConnection[Any], *, exclude: Sequence[str] = ()) -> str:
    """A digest of everything a catalog load reads from ``pg_catalog`` for the tables it
    would list, and of the writes to them: unchanged, the cached catalog still holds."""
    digest = hashlib.sha256()
    for schema, name, line in await (await conn.execute(_FINGERPRINT_SQL)).fetchall():
        if not excluded((schema, name), exclude):
            digest.update(f"{schema}.{name}:{line}\n".encode())
    return digest.hexdigest()


async def introspect(
    conn: psycopg.AsyncConnection[Any],
    database: str,
    *,
    exclude: Sequence[str] = (),
    values: bool = True,
) -> Catalog:
    """Read the catalog visible to the connection's role (one round trip per query), less
    the tables ``exclude`` matches. With ``values`` the rows are counted (``_rows``) and
    the stored values read too (see :func:`read_values`); without, the structure alone
    (rows as the planner estimates them), for a loader that counts and reads only the
    tables questions are linked to."""
    cur = await conn.execute(_TABLES_SQL)
    table_rows = [row for row in await cur.fetchall() if not excluded((row[1], row[2]), exclude)]
    oids = [row[0] for row in table_rows]
    columns: dict[int, list[tuple[str, str, bool, str]]] = {}
    for relid, name, data_type, nullable, comment in await (
        await conn.execute(_COLUMNS_SQL, (oids,))
    ).fetchall():
        columns.setdefault(relid, []).append((name, data_type, nullable, comment))
    primary: dict[int, tuple[str, ...]] = {}
    unique: dict[int, list[tuple[str, ...]]] = {}
    foreign: dict[int, list[ForeignKeyInfo]] = {}
    for relid, kind, cols, ref_table, ref_cols in await (
        await conn.execute(_KEYS_SQL, (oids,))
    ).fetchall():
        if kind == "p":
            primary[relid] = tuple(cols)
        elif kind == "u":
            unique.setdefault(relid, []).append(tuple(cols))
        else:
            foreign.setdefault(relid, []).append(
                ForeignKeyInfo(tuple(cols), ref_table, tuple(ref_cols))
            )
    tables = tuple(
        TableInfo(
            schema=schema,
            name=name,
            comment=comment,
            row_estimate=int(estimate),
            columns=tuple(ColumnInfo(*column) for column in columns.get(oid, [])),
            primary_key=primary.get(oid, ()),
            foreign_keys=tuple(foreign.get(oid, [])),
            unique_keys=tuple(unique.get(oid, [])),
        )
        for oid, schema, name, comment, estimate in table_rows
    )
    catalog = Catalog(database=database, tables=tables)
    if not values:
        return catalog
    counted = await count_rows(conn, catalog.tables)
    tables = tuple(
        replace(t, row_estimate=row_count(t.row_estimate, counted.get(t.qualified)))
        for t in catalog.tables
    )
    return await read_values(conn, replace(catalog, tables=tables))


async def read_values(
    conn: psycopg.AsyncConnection[Any],
    catalog: Catalog,
    *,
    skip: Iterable[str] = (),
    statistics: bool = True,
) -> Catalog:
    """The catalog with the stored values of its text columns: a few samples of each
    low-cardinality column and the value index of varied ones, read from the data with
    the value index's bounds. The planner's statistics stand in only where reading is
    dear: a table of :data:`ROW_COUNT_CAP` rows or more, or once the load's budget for
    reads is spent. A small table reads the same whether or not it was analysed:
    ``pg_stats`` is a sample, and even a full one drops a value seen once when only one
    such is left for the histogram (a status held by one row), and its ``n_distinct``
    counts values too long to sample. Tables named in ``skip`` (qualified) keep none:
    nothing links a question by them. Without ``statistics`` (an engine that keeps no
    ``pg_stats``) every value is read from the data, within the same bounds."""
    skipped = set(skip)
    schemas = sorted({t.schema for t in catalog.tables})
    stats: dict[tuple[str, str, str], tuple[float, list[str]]] = {}
    for schema, table, column, n_distinct, common in (
        await (await conn.execute(_STATS_SQL, (schemas,))).fetchall() if statistics else ()
    ):
        stats[(schema, table, column)] = (float(n_distinct), list(common))
    tables = []
    values = _ValueBudget()
    for table in catalog.tables:
        if table.qualified in skipped:
            tables.append(table)
            continue
        schema, name, estimate = table.schema, table.name, table.row_estimate
        numeric = [(c.name, c.data_type) for c in table.columns]
        scanned = 0 <= estimate < ROW_COUNT_CAP
        if scanned:
            extents = await numeric_extents(
                conn, schema, name, numeric, statement_timeout=_VALUE_INDEX_TIMEOUT
            )
        else:  # min/max over a large table is a full scan: read the planner's sample
            extents = stat_extents(numeric, {c: stats.get((schema, name, c)) for c, _ in numeric})
        differences = {
            found.column: found
            for found in await read_difference_units(
                conn,
                schema,
                name,
                [(c, t, extents.get(c)) for c, t in numeric],
                statement_timeout=_VALUE_INDEX_TIMEOUT,
            )
        }
        column_infos = []
        for column in table.columns:
            samples: tuple[str, ...] = ()
            known: tuple[str, ...] = ()
            stat = stats.get((schema, name, column.name))
            if not column.data_type.startswith(TEXT_TYPES):
                pass
            elif (stat is None or 0 <= estimate < ROW_COUNT_CAP) and values.data_left(estimate):
                samples, known = await _values_from_data(conn, schema, name, column.name, values)
            elif stat is not None:
                samples = _samples(stat[0], stat[1], estimate)
                if not samples and values.index_left > 0 and _indexable(stat[0], estimate):
                    values.index_left -= 1
                    known = await _known_values(conn, schema, name, column.name)
            extent = extents.get(column.name)
            if extent is not None and names_year(column.name, column.data_type):
                # already read with the extents: the data's own least and greatest value,
                # or on a table too large to scan the planner's sample of them (``_years``)
                span: tuple[int, int] | None = (int(extent[0]), int(extent[1]))
            else:
                span = await year_span(  # None but for a column named for a year (``_years``)
                    conn,
                    schema,
                    name,
                    column.name,
                    column.data_type,
                    statement_timeout=_VALUE_INDEX_TIMEOUT,
                )
            column_infos.append(
                replace(
                    column,
                    sample_values=samples,
                    known_values=known,
                    span=span,
                    extent=extent,
                    unit=differences[column.name].unit if column.name in differences else "",
                    unit_source=(
                        differences[column.name].evidence if column.name in differences else ""
                    ),
                )
            )
        tables.append(replace(table, columns=tuple(column_infos)))
    return replace(catalog, tables=tuple(tables))


class _ValueBudget:
    """What one catalog load may still spend on reading values: value-index columns, and
    columns read from the data for want of statistics (by count and by rows read). Work,
    never time: what a catalog holds must follow from the data, not from how busy the
    server was while it loaded (a question answered or refused by the clock)."""

    def __init__(self) -> None:
        self.index_left = VALUE_INDEX_COLUMNS_MAX
        self._data_left = DATA_VALUE_COLUMNS_MAX
        self._rows_left = DATA_VALUE_ROWS_MAX

    def data_left(self, rows: int) -> bool:
        """Whether a column of a table of ``rows`` rows may still be read from the data,
        spending its share when so (a table of unknown size costs :data:`ROW_COUNT_CAP`,
        the least a count past the cap says)."""
        cost = rows if rows >= 0 else ROW_COUNT_CAP
        if self._data_left <= 0 or cost > self._rows_left:
            return False
        self._data_left -= 1
        self._rows_left -= cost
        return True


async def _values_from_data(
    conn: psycopg.AsyncConnection[Any], schema: str, table: str, column: str, budget: _ValueBudget
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Sample values and the value index of a column Postgres has no statistics for, read
    from the data with the value index's bounds (distinct short values, a row cap, a short
    timeout): at most :data:`LOW_CARDINALITY_MAX` distinct values are samples, more (up to
    :data:`VALUE_INDEX_DISTINCT_MAX`, within the index's column budget) are indexed."""
    found = await _known_values(conn, schema, table, column)
    if len(found) <= LOW_CARDINALITY_MAX:
        return found[:SAMPLE_VALUES], ()
    if budget.index_left <= 0:
        return (), ()
    budget.index_left -= 1
    return (), found


def _indexable(n_distinct: float, estimate: int) -> bool:
    distinct = n_distinct if n_distinct >= 0 else -n_distinct * max(estimate, 0)
    return (
        LOW_CARDINALITY_MAX < distinct <= VALUE_INDEX_DISTINCT_MAX
        and 0 < estimate <= VALUE_INDEX_ROWS_MAX
    )


async def _known_values(
    conn: psycopg.AsyncConnection[Any], schema: str, table: str, column: str
) -> tuple[str, ...]:
    """The column's distinct short values, or none when there are more than the index
    takes or the read fails (the catalog must load even where a column cannot be read)."""
    statement = sql.SQL(
        "SELECT DISTINCT {col} FROM {tbl} WHERE {col} IS NOT NULL AND length({col}) <= %s LIMIT %s"
    ).format(col=sql.Identifier(column), tbl=sql.Identifier(schema, table))
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = '{_VALUE_INDEX_TIMEOUT}'")
            rows = await (
                await conn.execute(statement, (_SAMPLE_VALUE_CHARS, VALUE_INDEX_DISTINCT_MAX + 1))
            ).fetchall()
    except psycopg.Error as exc:
        _log.info(
            "value index skipped a column",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return ()
    if len(rows) > VALUE_INDEX_DISTINCT_MAX:
        return ()
    return tuple(sorted(str(r[0]) for r in rows))


def _samples(n_distinct: float, common: list[str], estimate: int) -> tuple[str, ...]:
    """Most common values of a low-cardinality column (from the planner statistics)."""
    distinct = n_distinct if n_distinct >= 0 else -n_distinct * max(estimate, 0)
    if distinct <= 0 or distinct > LOW_CARDINALITY_MAX:
        return ()
    values = sorted({v for v in common if len(v) <= _SAMPLE_VALUE_CHARS})
    return tuple(values[:SAMPLE_VALUES])


# --- rendering -----------------------------------------------------------------------


@dataclass(frozen=True)
class RenderedCatalog:
    """Catalog text for a generator plus which tables it describes and which it left out."""

    text: str
    truncated: bool
    tables: tuple[TableInfo, ...]
    omitted: tuple[str, ...]


def render_table(table: TableInfo) -> str:
    """One table as a compact block: header line, then one line per column."""
    rows = f"~{table.row_estimate} rows" if table.row_estimate >= 0 else "rows unknown"
    header = f"TABLE {table.qualified} ({rows})"
    if table.comment:
        header += f": {table.comment}"
    lines = [header]
    fk_by_column = {fk.columns[0]: fk for fk in table.foreign_keys if len(fk.columns) == 1}
    for column in table.columns:
        parts = [f"  {column.name} {column.data_type}"]
        if column.name in table.primary_key:
            parts.append("PK")
        elif not column.nullable:
            parts.append("NOT NULL")
        fk = fk_by_column.get(column.name)
        if fk is not None:
            parts.append(f"-> {fk.referenced_table}({fk.referenced_columns[0]})")
        line = " ".join(parts)
        if column.comment:
            line += f": {column.comment}"
        if column.sample_values:
            line += " [values: " + ", ".join(column.sample_values) + "]"
        lines.append(line)
    for fk in table.foreign_keys:
        if len(fk.columns) > 1:
            lines.append(
                f"  FOREIGN KEY ({', '.join(fk.columns)}) -> "
                f"{fk.referenced_table}({', '.join(fk.referenced_columns)})"
            )
    return "\n".join(lines)


_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """Lowercase word stems of ``text`` (plural ``s``/``es``/``ies`` folded), for linking."""
    found = set()
    for word in _WORD.findall(text.lower()):
        found.add(word)
        found.add(stem(word))
    return found


def relevance(table: TableInfo, question_words: set[str]) -> float:
    """How strongly a question's words point at a table (0 when not at all)."""
    score = 0.0
    if words(table.name.replace("_", " ")) & question_words:
        score += 3.0
    score += 0.5 * len(words(table.comment) & question_words)
    for column in table.columns:
        if words(column.name.replace("_", " ")) & question_words:
            score += 1.0
        for value in column.sample_values:
            value_words = words(value)
            if value_words and value_words <= question_words:
                score += 2.0
    return score


def rank_tables(catalog: Catalog, question: str) -> list[tuple[TableInfo, float]]:
    """Tables by relevance to ``question``, best first; ties keep catalog order."""
    question_words = words(question)
    scored = [(table, relevance(table, question_words)) for table in catalog.tables]
    return sorted(scored, key=lambda pair: -pair[1])


# ``Catalog.derived``: every table of the catalog rendered, one after another.
_WHOLE_TEXT = "rendered"


def _whole_text(catalog: Catalog) -> str:
    """Every table of the catalog as the generator reads it, joined once per catalog (a
    catalog is immutable; every question's schema view over all of it shows it again)."""
    found = catalog.derived.get(_WHOLE_TEXT)
    if not isinstance(found, str):
        found = "\n\n".join(t.rendered for t in catalog.tables)
        catalog.derived[_WHOLE_TEXT] = found
    return found


def render(
    catalog: Catalog,
    *,
    max_chars: int,
    question: str | None = None,
    tables: Sequence[TableInfo] | None = None,
) -> RenderedCatalog:
    """The catalog as text of at most ``max_chars``.

    ``tables`` restricts it to those tables. When everything does not fit and a
    question is given, the tables most relevant to it (and their foreign-key
    neighbours) are kept first; whatever still does not fit is omitted, and a single
    table larger than the cap is cut.
    """
    if tables is None:
        candidates = list(catalog.tables)
        omitted_by_filter: list[str] = []
        full = _whole_text(catalog)
    else:
        candidates = list(tables)
        chosen_names = {t.qualified for t in candidates}
        omitted_by_filter = [t.qualified for t in catalog.tables if t.qualified not in chosen_names]
        full = "\n\n".join(t.rendered for t in candidates)
    if len(full) <= max_chars:
        return RenderedCatalog(full, False, tuple(candidates), tuple(omitted_by_filter))
    blocks = {t.qualified: t.rendered for t in candidates}
    order = candidates
    if question:
        order = _relevance_order(catalog, candidates, question)
    kept: list[TableInfo] = []
    used = 0
    for table in order:
        size = len(blocks[table.qualified]) + (2 if kept else 0)
        if used + size <= max_chars:
            kept.append(table)
            used += size
    truncated = False
    if not kept and order:
        kept = [order[0]]
        truncated = True
    kept_names = {t.qualified for t in kept}
    kept_in_order = [t for t in candidates if t.qualified in kept_names]
    text = "\n\n".join(blocks[t.qualified] for t in kept_in_order)
    if len(text) > max_chars:
        text = text[:max_chars]
        truncated = True
    left_out = [t.qualified for t in candidates if t.qualified not in kept_names]
    if left_out and not question:
        truncated = True
    return RenderedCatalog(
        text, truncated, tuple(kept_in_order), tuple(omitted_by_filter + left_out)
    )


def _relevance_order(
    catalog: Catalog, candidates: Sequence[TableInfo], question: str
) -> list[TableInfo]:
    """Relevant tables first, each followed by its FK neighbours, then the rest."""
    allowed = {t.qualified for t in candidates}
    ranked = [t for t, score in rank_tables(catalog, question) if score > 0]
    order: dict[str, TableInfo] = {}
    for table in ranked:
        if table.qualified in allowed:
            order.setdefault(table.qualified, table)
    for table in list(order.values()):
        for other in catalog.neighbours(table):
            if other.qualified in allowed:
                order.setdefault(other.qualified, other)
    for table in candidates:
        order.setdefault(table.qualified, table)
    return list(order.values())


def table_names(tables: Iterable[TableInfo]) -> list[str]:
    return [t.qualified for t in tables]


def quoted_name(table: TableInfo) -> sql.Composed:
    """``schema.table`` as safely quoted identifiers."""
    return sql.SQL(".").join([sql.Identifier(table.schema), sql.Identifier(table.name)])
