"""Keys and joins confirmed by the data when the catalog loads.

**Keys.** A table that declares no primary key gets one from its data: a column (or, for
a bridge table, a pair of reference-like columns) that is never null and never repeats,
preferring the names keys have (``id``, ``<table>_id``, ``…code``).

**Confirmation.** Each name candidate (``_candidates``) is checked against a bounded
sample: at least 90 % of the child's distinct values must be values of the parent's
column (a few orphans are dirty data; a name that only looks like a reference is
refuted). A candidate the data cannot be read for stays, marked so. Columns no name ties
to a key (an unnamed reference, a text code) are tried against the one key holding their
values. A table's reference to its own rows that no name says (``reports_to``) is
found from the shape of a hierarchy in its data (``_hierarchy``). Every read is
bounded: sampled, and counted against the load's work (``_inference_work``: reads and
rows, never seconds, so the same database infers the same keys and joins on an idle and
on a busy server).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import psycopg
from psycopg import sql

from services.sql.catalog._candidates import (
    OVERLAP_EVIDENCE,
    UNCHECKED,
    join_candidates,
    single_keys,
    type_family,
)
from services.sql.catalog._catalog import Catalog, ColumnInfo, JoinInfo, JoinOrigin, TableInfo
from services.sql.catalog._hierarchy import self_references
from services.sql.catalog._inference_work import InferenceReads
from services.sql.catalog._joins import declared_edges
from services.sql.words import measure_name, name_words, stem

# Bounds of each data read when the catalog loads: rows sampled per table for keys,
# distinct child values checked per edge (the load's work: ``_inference_work``).
KEY_SAMPLE_ROWS = 100_000
JOIN_SAMPLE_VALUES = 1000
CONTAINMENT_MIN = 0.9
# A column holding values of an integer key no name points at is believed only when the
# key is sparse over the column's range (ids 1025..1934 with gaps, not 1..406).
DENSITY_MAX = 0.5
OVERLAP_MIN = 0.5
_OWN_ENDINGS = ("id", "code", "key", "no")
# Endings key names have: preferred when several columns of a table are unique.
_KEY_ENDINGS = ("id", "code", "key", "_no", "num", "number")


async def infer_joins(
    conn: psycopg.AsyncConnection[Any],
    catalog: Catalog,
    declared: Sequence[JoinInfo] = (),
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Catalog:
    """The catalog with keys inferred for tables that declare none, and its joins: the
    ``declared`` ones (a glossary's) first, then the name candidates the data confirms.
    Bounded by work (``_inference_work``: reads and rows scanned), not by the clock;
    what cannot be read keeps the names' word for it. ``clock`` times only the guard
    that marks a load incomplete on a server too slow for that work."""
    reads = InferenceReads(conn, catalog, clock=clock)
    owners = _Owners(catalog.tables)
    tables = []
    for table in catalog.tables:
        keyed_table = table
        if not table.primary_key:
            keyed_table = await _infer_key(reads, table, owners)
        tables.append(keyed_table)
    keyed = replace(catalog, tables=tuple(tables))
    joined = {frozenset((e.child, e.parent)) for e in declared_edges(keyed)}
    joined |= {frozenset((j.child, j.parent)) for j in declared}
    confirmed: list[JoinInfo] = list(declared)
    counts: dict[tuple[str, str], tuple[int, int, int] | None] = {}
    for candidate, data_only in join_candidates(keyed):
        if frozenset((candidate.child, candidate.parent)) in joined:
            continue
        overlap = candidate.evidence == OVERLAP_EVIDENCE
        if overlap:  # one side never repeats: the other refers to it
            unique = await _unique_reference(
                reads, keyed, candidate, counts
            ) or await _unique_reference(reads, keyed, _reversed(candidate), counts)
            if unique is not None:
                confirmed.append(unique)
                continue
        share = await _containment(reads, keyed, candidate)
        if share is None:
            if not data_only:
                confirmed.append(replace(candidate, evidence=f"{candidate.evidence}; {UNCHECKED}"))
            continue
        needed = OVERLAP_MIN if overlap else CONTAINMENT_MIN
        if not overlap and share[1] and OVERLAP_MIN <= share[0] / share[1] < needed:
            listed = await _listed_subset(reads, keyed, candidate, share, counts)
            if listed is not None:
                confirmed.append(listed)
                continue
        if share[1] and share[0] / share[1] >= needed:
            pair = None
            if overlap:  # either table may be the one whose rows the pair names
                pair = await _pair_reference(reads, keyed, candidate) or await _pair_reference(
                    reads, keyed, _reversed(candidate)
                )
            if pair is not None:
                confirmed.append(pair)
                continue
            found = f"{share[0]} of {share[1]} distinct values found in {candidate.parent}"
            confirmed.append(replace(candidate, evidence=f"{candidate.evidence}; {found}"))
    joined |= {frozenset((j.child, j.parent)) for j in confirmed}
    referencing = {(j.child, j.child_columns) for j in confirmed}
    entity_keys = [
        (parent, key)
        for parent in keyed.tables
        for key in single_keys(parent)
        if _owns(key.name, parent.name) >= 2
    ]

    confirmed += await _held_by_keys(
        reads,
        keyed,
        _unnamed_references(keyed, referencing),
        joined,
        entity_keys=entity_keys,
    )
    text_keys = [
        (parent, key)
        for parent in keyed.tables
        for key in single_keys(parent)
        if type_family(key.data_type) == "text"
    ]
    referencing = {(j.child, j.child_columns) for j in confirmed}
    # two codes of one table may both hold the key (origin, dest): the pairs joined so
    # far stay as they are while codes are tried
    confirmed += await _held_by_keys(
        reads,
        keyed,
        _coded_references(keyed, referencing),
        set(joined),
        entity_keys=text_keys,
        grow=False,
    )
    # a table's reference to its own rows (``reports_to``), which no name ties to a key:
    # tried last, on the columns no step above found referring to another table
    referencing = {(j.child, j.child_columns) for j in confirmed}
    confirmed += await self_references(reads, keyed, referencing)
    return replace(keyed, joins=tuple(confirmed), incomplete=reads.incomplete())


async def _held_by_keys(
    reads: InferenceReads,
    catalog: Catalog,
    columns: Sequence[tuple[TableInfo, ColumnInfo]],
    joined: set[frozenset[str]],
    *,
    entity_keys: Sequence[tuple[TableInfo, ColumnInfo]],
    grow: bool = True,
) -> list[JoinInfo]:
    """The references found for ``columns``, each to the one key among ``entity_keys``
    that holds its values (``_only_key_holding``). With ``grow`` a pair of tables joined
    by one find is not tried again for the next column."""
    found: list[JoinInfo] = []
    for child, column in columns:
        join = await _only_key_holding(
            reads, catalog, child, column, joined, entity_keys=entity_keys
        )
        if join is not None:
            found.append(join)
            if grow:
                joined.add(frozenset((join.child, join.parent)))
    return found


def _coded_references(
    catalog: Catalog, referencing: set[tuple[str, tuple[str, ...]]]
) -> list[tuple[TableInfo, ColumnInfo]]:
    """Text columns named for no key (``flights.origin``, ``flights.dest``) that are no
    key of their own table: codes whose values the data may show to be one table's text
    key (``airports.faa``). Text values held by exactly one key are evidence a handful
    of small integers is not."""
    return [
        (table, column)
        for table in catalog.tables
        for column in table.columns
        if type_family(column.data_type) == "text"
        and not column.name.lower().endswith(_KEY_ENDINGS)
        and not measure_name(column.name)
        and (table.qualified, (column.name,)) not in referencing
        and column.name not in table.primary_key
    ]


def _unnamed_references(
    catalog: Catalog, referencing: set[tuple[str, tuple[str, ...]]]
) -> list[tuple[TableInfo, ColumnInfo]]:
    """Columns named like references (``student_id``, ``liked_id``) whose names point at no
    table: the data may still show which key they hold (``friend.student_id`` ->
    ``highschooler.id``)."""
    found = []
    for table in catalog.tables:
        for column in table.columns:
            if (
                column.name.lower().endswith(_KEY_ENDINGS)
                and not measure_name(column.name)
                and type_family(column.data_type) in ("int", "text", "uuid")
                and (table.qualified, (column.name,)) not in referencing
                and table.primary_key != (column.name,)  # its own key: 1:1 shows in names
            ):
                found.append((table, column))
    return found


async def _only_key_holding(
    reads: InferenceReads,
    catalog: Catalog,
    child: TableInfo,
    column: ColumnInfo,
    joined: set[frozenset[str]],
    *,
    entity_keys: Sequence[tuple[TableInfo, ColumnInfo]],
) -> JoinInfo | None:
    """The join to the one entity key (``id``, or named for its own table) of another
    table holding at least 90 % of the column's values; None when none does, or more than
    one does (small integer ids fit many keys: ambiguity is no evidence), or when a read
    of some key was not made (the work left did not cover it): the one key found may
    not be the only one."""
    stopped = reads.stopped()
    holding: list[JoinInfo] = []
    family = type_family(column.data_type)
    for parent, key in entity_keys:
        if parent is child or frozenset((child.qualified, parent.qualified)) in joined:
            continue
        if type_family(key.data_type) != family:
            continue
        candidate = JoinInfo(
            child.qualified,
            (column.name,),
            parent.qualified,
            (key.name,),
            JoinOrigin.INFERRED,
            "",
        )
        # every distinct value, not a sample: the first values read are often the
        # smallest, and small ids fit many keys
        share = await _containment(reads, catalog, candidate, sample=None)
        if share is None or share[1] < 2 or share[0] / share[1] < CONTAINMENT_MIN:
            continue
        if type_family(key.data_type) == "int":
            density = await _density(reads, catalog, candidate)
            if density is None or density > DENSITY_MAX:
                continue  # 1..22 sits inside any dense 1..406: chance, not evidence
        found = f"{share[0]} of {share[1]} distinct values found in {parent.qualified}"
        holding.append(replace(candidate, evidence=f"the only key holding them; {found}"))
    if reads.stopped() != stopped:
        return None
    return holding[0] if len(holding) == 1 else None


async def _density(reads: InferenceReads, catalog: Catalog, join: JoinInfo) -> float | None:
    """How densely the parent's integer key fills the range of the child's values (1.0:
    every integer in it is a key, so any values there would be "found")."""
    names = _join_names(catalog, join)
    if names is None:
        return None
    statement = sql.SQL(
        "SELECT r.lo, r.hi, (SELECT count(*) FROM {parent} AS p "
        "WHERE p.{pcol} BETWEEN r.lo AND r.hi) "
        "FROM (SELECT min({ccol}) AS lo, max({ccol}) AS hi FROM {child}) AS r"
    ).format(**names)
    row = await reads.one(statement, (), (join.child, join.parent))
    if row is None or row[0] is None or row[1] is None:
        return None
    return float(row[2]) / float(int(row[1]) - int(row[0]) + 1)


async def _infer_key(reads: InferenceReads, table: TableInfo, owners: _Owners) -> TableInfo:
    """``table`` with the key its data shows, unchanged when none or the read fails.

    Of the never-null, never-repeating columns: one named for the table itself (``id``,
    ``<table>_id``, ``<table>code``), else one with a key's ending that names no other
    table, else the first column. A column named for another table (``has_pet.petid``)
    is a reference that happens not to repeat in a small sample, so for a table of
    such references the key is a pair of them (a bridge table)."""
    columns = [c for c in table.columns if type_family(c.data_type) in ("int", "text", "uuid")]
    if not columns:
        return table
    sample = sql.SQL("(SELECT * FROM {} LIMIT %s) AS s").format(
        sql.Identifier(table.schema, table.name)
    )
    parts: list[sql.Composable] = [sql.SQL("count(*)")]
    for c in columns:
        ident = sql.Identifier(c.name)
        parts += [sql.SQL("count({})").format(ident), sql.SQL("count(DISTINCT {})").format(ident)]
    statement = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(parts), sample)
    row = await reads.one(statement, (KEY_SAMPLE_ROWS,), (table.qualified,), limit=KEY_SAMPLE_ROWS)
    if row is None or row[0] < 2:
        return table
    rows = row[0]
    unique = [c for i, c in enumerate(columns) if row[1 + 2 * i] == rows and row[2 + 2 * i] == rows]
    references = [c for c in columns if owners.names_another(c.name, table)]
    choices = [
        *(c for c in unique if _owns(c.name, table.name) and c not in references),
        *(c for c in unique if c.name.lower().endswith(_KEY_ENDINGS) and c not in references),
        *(c for c in unique if c is table.columns[0] and c not in references),
    ]
    if choices:
        chosen = choices[0]
        return replace(
            table,
            primary_key=(chosen.name,),
            key_evidence=f"{chosen.name} is never null and never repeats in {rows} rows",
        )
    for i, a in enumerate(references[:6]):
        for b in references[i + 1 : 6]:
            pair = sql.SQL(
                "SELECT count(*), count(DISTINCT ({a}, {b})) FROM {s} "
                "WHERE {a} IS NOT NULL AND {b} IS NOT NULL"
            ).format(a=sql.Identifier(a.name), b=sql.Identifier(b.name), s=sample)
            got = await reads.one(
                pair, (KEY_SAMPLE_ROWS,), (table.qualified,), limit=KEY_SAMPLE_ROWS
            )
            if got is not None and got[0] == rows and got[1] == rows:
                return replace(
                    table,
                    primary_key=(a.name, b.name),
                    key_evidence=f"({a.name}, {b.name}) never null and never repeat in {rows} rows",
                )
    return table


def _owns(column: str, table: str) -> int:
    """How the column is named for the table: 2 for ``id`` or the table's whole name with
    an ``id``/``code``/``key``/``no`` ending (``pets`` -> ``petid``), 1 for its last word
    (``has_pet`` -> ``petid``), 0 for neither. A column named for another table at least
    as strongly as for its own is a reference to that table."""
    name = column.lower()
    if name == "id":
        return 2
    whole, last = _owned_names(table)
    return 2 if name in whole else 1 if name in last else 0


@functools.lru_cache(maxsize=8192)
def _owned_names(table: str) -> tuple[frozenset[str], frozenset[str]]:
    """The column names a table owns by its whole name and by its last word (asked for
    every column against every table: a warehouse of a thousand tables asks a lot)."""
    words = name_words(table)
    if not words:
        return frozenset(), frozenset()

    def named(base: str) -> set[str]:
        return {f"{base}{sep}{end}" for sep in ("", "_") for end in _OWN_ENDINGS}

    whole = named(stem(table.lower())) | named(stem(table.lower().replace("_", "")))
    return frozenset(whole), frozenset(named(stem(words[-1])))


class _Owners:
    """Which tables own a column name (see :func:`_owns`), indexed once per load: whether
    a column is named for another table is then one lookup, not one test per table."""

    def __init__(self, tables: Sequence[TableInfo]) -> None:
        self._by_name: dict[str, list[tuple[str, int]]] = {}
        for table in tables:
            whole, last = _owned_names(table.name)
            for name in whole:
                self._by_name.setdefault(name, []).append((table.qualified, 2))
            for name in last - whole:
                self._by_name.setdefault(name, []).append((table.qualified, 1))

    def names_another(self, column: str, table: TableInfo) -> bool:
        """Whether ``column`` of ``table`` is named for another table at least as strongly
        as for its own (never ``id``, which every table owns)."""
        name = column.lower()
        if name == "id":
            return False
        own = max(_owns(column, table.name), 1)
        return any(
            other != table.qualified and strength >= own
            for other, strength in self._by_name.get(name, ())
        )


async def _containment(
    reads: InferenceReads,
    catalog: Catalog,
    join: JoinInfo,
    *,
    sample: int | None = JOIN_SAMPLE_VALUES,
) -> tuple[int, int] | None:
    """(distinct child values found in the parent column, distinct child values checked)
    over a sample of ``sample`` distinct values (all of them for None, within the read's
    timeout), or None when the read fails. Every value is read without a ``LIMIT``:
    Postgres and DuckDB take ``LIMIT NULL`` for all, SQLite rejects it, so on a SQLite
    warehouse no column was ever found held by a key."""
    names = _join_names(catalog, join)
    if names is None:
        return None
    statement = sql.SQL(
        "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM {parent} AS p "
        "WHERE p.{pcol} = s.v)), count(*) "
        "FROM (SELECT DISTINCT {ccol} AS v FROM {child} WHERE {ccol} IS NOT NULL{limit}) AS s"
    ).format(**names, limit=sql.SQL(" LIMIT %s" if sample is not None else ""))
    params = (sample,) if sample is not None else ()
    row = await reads.one(statement, params, (join.child, join.parent))
    return None if row is None else (int(row[0]), int(row[1]))


# Other same-named columns tried with a shared-values column for a reference of two.
_PAIR_CANDIDATES_MAX = 4


def _reversed(join: JoinInfo) -> JoinInfo:
    return replace(
        join,
        child=join.parent,
        child_columns=join.parent_columns,
        parent=join.child,
        parent_columns=join.child_columns,
    )


async def _listed_subset(
    reads: InferenceReads,
    catalog: Catalog,
    join: JoinInfo,
    share: tuple[int, int],
    counts: dict[tuple[str, str], tuple[int, int, int] | None],
) -> JoinInfo | None:
    """A reference whose parent lists only some of the values referred to:
    ``flights.tailnum`` names the key ``planes.tailnum``, but the plane list lacks ~15 %
    of the tail numbers flown (no row at all for them), so fewer than 90 % of the child's
    values are found. The parent's column still never repeats and nearly every value it
    holds (90 %) is one the child refers to: the parent is a partial list of the child's
    referents, not a look-alike that happens to share some values. Its rows are reached
    through the key exactly (``tailnum IN (…)``, or a join that keeps a child row per
    parent row); the unlisted child values belong to no parent row, so no condition on the
    parent's columns can hold for them. None unless at least half the child's values are
    found (``share``), the parent's column is a key in the rows read, and its values are
    nearly all found in the child; or when the data cannot be read."""
    parent = catalog.table(join.parent)
    if parent is None:
        return None
    top = await _repeats(reads, parent, join.parent_columns[0], counts)
    if top is None or top[0] < 2 or not top[0] == top[1] == top[2]:
        return None
    back = await _containment(reads, catalog, _reversed(join))
    if back is None or not back[1] or back[0] / back[1] < CONTAINMENT_MIN:
        return None
    return replace(
        join,
        evidence=f"{join.evidence}; {share[0]} of {share[1]} distinct values found in "
        f"{join.parent}, the rest in no row of it; {back[0]} of {back[1]} of its values "
        "referred to",
    )


async def _pair_reference(
    reads: InferenceReads, catalog: Catalog, join: JoinInfo
) -> JoinInfo | None:
    """A reference of two columns behind a join on shared values: ``salaries.team_id``
    shares its values with ``teams.team_id``, which repeats (one row per team and
    season); with ``year_id``, which both tables also hold, the pair never repeats in
    ``teams`` and every pair of ``salaries`` is found there, so a salary row refers to
    one team-season. Joined on ``team_id`` alone it would pair with every season's row.
    None when no other same-named column makes such a pair (in the sample read) or the
    data cannot be read."""
    child, parent = catalog.table(join.child), catalog.table(join.parent)
    if child is None or parent is None:
        return None
    first = join.child_columns[0]
    others = []
    for column in parent.columns:
        held = child.column(column.name)
        if (
            column.name != first
            and held is not None
            and not measure_name(column.name)
            and type_family(held.data_type) == type_family(column.data_type)
        ):
            others.append(column.name)
    for other in others[:_PAIR_CANDIDATES_MAX]:
        order = [c.name for c in parent.columns]
        names = (other, first) if order.index(other) < order.index(first) else (first, other)
        a, b = sql.Identifier(names[0]), sql.Identifier(names[1])
        unique = sql.SQL(
            "SELECT count(*), count(DISTINCT ({a}, {b})) FILTER (WHERE {a} IS NOT NULL AND "
            "{b} IS NOT NULL), count(*) FILTER (WHERE {a} IS NULL OR {b} IS NULL) "
            "FROM (SELECT {a}, {b} FROM {t} LIMIT %s) AS s"
        ).format(a=a, b=b, t=sql.Identifier(parent.schema, parent.name))
        row = await reads.one(
            unique, (KEY_SAMPLE_ROWS,), (parent.qualified,), limit=KEY_SAMPLE_ROWS
        )
        if row is None or row[0] < 2 or row[2] or row[1] != row[0]:
            continue
        contained = sql.SQL(
            "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM {p} AS p WHERE p.{a} = s.a "
            "AND p.{b} = s.b)), count(*) FROM (SELECT DISTINCT {a} AS a, {b} AS b FROM {c} "
            "WHERE {a} IS NOT NULL AND {b} IS NOT NULL LIMIT %s) AS s"
        ).format(
            a=a,
            b=b,
            p=sql.Identifier(parent.schema, parent.name),
            c=sql.Identifier(child.schema, child.name),
        )
        share = await reads.one(
            contained, (JOIN_SAMPLE_VALUES,), (child.qualified, parent.qualified)
        )
        if share is None or not share[1] or share[0] / share[1] < CONTAINMENT_MIN:
            continue
        return JoinInfo(
            join.child,
            names,
            join.parent,
            names,
            JoinOrigin.INFERRED,
            f"({names[0]}, {names[1]}) never repeats in {parent.name} ({row[0]} rows read); "
            f"{share[0]} of {share[1]} distinct pairs found there",
        )
    return None


async def _unique_reference(
    reads: InferenceReads,
    catalog: Catalog,
    join: JoinInfo,
    counts: dict[tuple[str, str], tuple[int, int, int] | None],
) -> JoinInfo | None:
    """A reference behind two same-named columns that share values: ``car_names.model``
    shares its values with ``model_list.model``, which is never null and never repeats
    (one row per model), while ``car_names.model`` repeats (a row per car of a model) and
    90 % of its distinct values are found there. Each car names one model: the model's
    table is the parent, as a declared foreign key to a UNIQUE column would say, so a
    count of the cars' model column counts cars, not models. None when the parent's
    column repeats or holds nulls (in the rows read), when the child's does not repeat
    either (one to one: no side tells the direction), or when the data cannot be read.
    ``counts`` keeps each column's (rows, values, distinct values) read once per load."""
    child, parent = catalog.table(join.child), catalog.table(join.parent)
    if child is None or parent is None:
        return None
    top = await _repeats(reads, parent, join.parent_columns[0], counts)
    if top is None or top[0] < 2 or not top[0] == top[1] == top[2]:
        return None
    below = await _repeats(reads, child, join.child_columns[0], counts)
    if below is None or below[2] >= below[1]:
        return None
    share = await _containment(reads, catalog, join)
    if share is None or not share[1] or share[0] / share[1] < CONTAINMENT_MIN:
        return None
    return replace(
        join,
        evidence=f"{join.parent_columns[0]} never repeats in {parent.name} ({top[0]} rows "
        f"read); {share[0]} of {share[1]} distinct values found there",
    )


async def _repeats(
    reads: InferenceReads,
    table: TableInfo,
    column: str,
    counts: dict[tuple[str, str], tuple[int, int, int] | None],
) -> tuple[int, int, int] | None:
    """(rows, non-null values, distinct values) of ``table.column`` in the rows read."""
    if (table.qualified, column) not in counts:
        statement = sql.SQL(
            "SELECT count(*), count({c}), count(DISTINCT {c}) FROM (SELECT {c} FROM {t} "
            "LIMIT %s) AS s"
        ).format(c=sql.Identifier(column), t=sql.Identifier(table.schema, table.name))
        row = await reads.one(
            statement, (KEY_SAMPLE_ROWS,), (table.qualified,), limit=KEY_SAMPLE_ROWS
        )
        counts[(table.qualified, column)] = None if row is None else (row[0], row[1], row[2])
    return counts[(table.qualified, column)]


def _join_names(catalog: Catalog, join: JoinInfo) -> dict[str, sql.Identifier] | None:
    """The identifiers a single-column join's data reads are written with (``child``,
    ``ccol``, ``parent``, ``pcol``), or None when a table is no longer in the catalog."""
    child, parent = catalog.table(join.child), catalog.table(join.parent)
    if child is None or parent is None:
        return None
    return {
        "child": sql.Identifier(child.schema, child.name),
        "ccol": sql.Identifier(join.child_columns[0]),
        "parent": sql.Identifier(parent.schema, parent.name),
        "pcol": sql.Identifier(join.parent_columns[0]),
    }
