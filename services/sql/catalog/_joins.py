"""The join graph of a catalog: declared foreign keys, the joins a glossary declares, and
joins inferred from names and confirmed by the data, so a warehouse that declares no keys
still joins.

**Keys.** A table that declares no primary key gets one from its data when the catalog
loads: a column (or, for a bridge table, a pair of reference-like columns) that is never
null and never repeats, preferring the names keys have (``id``, ``<table>_id``, ``…code``).

**Candidates from names.** ``child.column`` may reference ``parent.key`` (a single-column
key: declared, UNIQUE, or inferred) when their types are of one family and one of these
holds:

- the column has the key's own name (``treatments.patient_id -> patients.patient_id``);
- the column is ``<parent>_id`` / ``<parent>id``, singular or of the name's last word
  (``coupons.merchant_id -> merchants.mid``);
- the column ends with the key's name once the prefix every table shares is dropped
  (``sbTransaction.sbTxCustId -> sbCustomer.sbCustId`` in an ``sb…`` schema; in a
  warehouse of many sources, the short prefix the parent shares with its siblings);
- the column, less an ``id`` ending, is the parent's name (``model_list.maker ->
  car_makers.id``, ``countries.continent -> continents.contid``);
- never a column whose name says it counts or sums (``course.num_semesters``, whose
  values 1..8 are all semester ids: a measure is no reference, whatever it holds);
- with the data only: the column's name holds the parent's name (``flights.sourceairport
  -> airports.airportcode``), or two text columns share a name and values (a city in two
  tables), the weakest kind; not when both are a handful of categories the catalog
  samples (a status, a device type: the same labels, no reference).

**Confirmation by the data.** Each candidate is checked against a bounded sample: at least
90 % of the child's distinct values must be values of the parent's column (a few orphans
are dirty data; a name that only looks like a reference is refuted). A candidate the data
cannot be read for stays, marked so. Declared edges win: no inferred edge is added between
two tables a foreign key already joins.

Paths are shortest by hop count, stronger edges preferred (declared, glossary, inferred by
key, by shared values); a question touching several tables is joined along a tree grown
from its base table.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg import sql

from services.sql.catalog._catalog import Catalog, ColumnInfo, JoinInfo, JoinOrigin, TableInfo
from services.sql.definitions import JoinSpec
from services.sql.words import common_prefix, measure_name, name_direction, name_words, stem

_log = logging.getLogger("tandem.sql.joins")


def type_family(data_type: str) -> str:
    if data_type.startswith(("smallint", "integer", "bigint", "numeric")):
        return "int"
    if data_type.startswith(("text", "character", "citext", "varchar")):
        return "text"
    if data_type == "uuid":
        return "uuid"
    return data_type


# How an edge came to be, strongest first: the order paths prefer them in.
_RANK = {"declared": 0, "glossary": 1, "key": 2, "overlap": 3}


@dataclass(frozen=True)
class Edge:
    """``child.child_columns`` hold values of ``parent.parent_columns``.

    ``kind`` is ``declared`` (a foreign key), ``glossary``, ``key`` (inferred, to a key of
    the parent) or ``overlap`` (inferred: two columns sharing values, neither a key);
    ``evidence`` says why an edge that is not declared is believed."""

    child: str
    child_columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]
    kind: str = "declared"
    evidence: str = ""

    @property
    def inferred(self) -> bool:
        return self.kind in ("key", "overlap")

    @property
    def rank(self) -> int:
        return _RANK[self.kind]

    @property
    def child_column(self) -> str:
        return self.child_columns[0]

    @property
    def parent_column(self) -> str:
        return self.parent_columns[0]

    def other(self, table: str) -> str:
        return self.parent if table == self.child else self.child

    def columns_of(self, table: str) -> tuple[str, ...]:
        return self.child_columns if table == self.child else self.parent_columns

    def column_of(self, table: str) -> str:
        return self.columns_of(table)[0]

    def pairs(self, table: str) -> list[tuple[str, str]]:
        """(column of ``table``, column of the other table) for each joined column."""
        mine, theirs = self.columns_of(table), self.columns_of(self.other(table))
        return list(zip(mine, theirs, strict=True))

    @property
    def key(self) -> tuple[str, tuple[str, ...], str, tuple[str, ...]]:
        return (self.child, self.child_columns, self.parent, self.parent_columns)

    def info(self, origin: JoinOrigin) -> JoinInfo:
        return JoinInfo(
            self.child,
            self.child_columns,
            self.parent,
            self.parent_columns,
            origin,
            self.evidence,
        )


class JoinGraph:
    """Every join edge of one catalog, with shortest paths between tables."""

    def __init__(self, catalog: Catalog, extra: Iterable[Edge] = ()) -> None:
        self.catalog = catalog
        self.edges: list[Edge] = []
        self._by_table: dict[str, list[Edge]] = {}
        declared_pairs: set[frozenset[str]] = set()
        seen: set[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = set()
        known = catalog.joins if catalog.joins is not None else name_candidates(catalog)
        for edge in [*declared_edges(catalog), *extra, *map(_edge, known)]:
            if edge.key in seen or edge.child == edge.parent:
                continue
            pair = frozenset((edge.child, edge.parent))
            if edge.inferred and pair in declared_pairs:
                continue  # declared edges win
            if not edge.inferred:
                declared_pairs.add(pair)
            seen.add(edge.key)
            self.edges.append(edge)
            self._by_table.setdefault(edge.child, []).append(edge)
            self._by_table.setdefault(edge.parent, []).append(edge)
        # the child columns a question's direction prefers (see ``toward``)
        self._toward: frozenset[tuple[str, str]] = frozenset()

    @functools.cached_property
    def directed(self) -> dict[tuple[str, str], dict[str, Edge]]:
        """Parallel references whose names say their direction: (child, parent) -> the
        edge whose child column's name says each direction (``flights.origin`` FROM,
        ``flights.dest`` TO, both to ``airports``). Only pairs where each direction is
        said by exactly one of the child's references to that parent."""
        groups: dict[tuple[str, str], list[Edge]] = {}
        for edge in self.edges:
            if edge.kind != "overlap" and len(edge.child_columns) == 1:
                groups.setdefault((edge.child, edge.parent), []).append(edge)
        found: dict[tuple[str, str], dict[str, Edge]] = {}
        for pair, edges in groups.items():
            if len(edges) < 2:
                continue
            ways: dict[str, list[Edge]] = {}
            for edge in edges:
                way = name_direction(edge.child_column)
                if way is not None:
                    ways.setdefault(way, []).append(edge)
            if len(ways) == 2 and all(len(e) == 1 for e in ways.values()):
                found[pair] = {way: e[0] for way, e in ways.items()}
        return found

    def toward(self, way: str) -> JoinGraph:
        """This graph, preferring of two parallel references the one whose name says
        ``way`` ("flights to Denver" joins ``airports`` on ``flights.dest``); the same
        graph when it has no such pair. A shallow copy: edges and caches are shared."""
        prefer = frozenset(
            (edges[way].child, edges[way].child_column)
            for edges in self.directed.values()
            if way in edges
        )
        if not prefer:
            return self
        view = copy.copy(self)
        view._toward = prefer
        return view

    def edges_of(self, table: str, *, overlap: bool = False) -> list[Edge]:
        """The table's edges; those through shared values only when asked (they relate
        no key: no reference, no parent, a path of last resort)."""
        edges = self._by_table.get(table, [])
        return edges if overlap else [e for e in edges if e.kind != "overlap"]

    def between(self, a: str, b: str) -> list[Edge]:
        return [e for e in self.edges_of(a) if e.other(a) == b]

    def path(self, start: str, goal: str) -> list[Edge] | None:
        """Fewest hops from ``start`` to ``goal``, stronger edges first on equal hops;
        through shared values (``overlap`` edges) only when keys join them no way at all:
        two tables that both hold a ``last_name`` are not thereby related."""
        return self._path(start, goal, overlap=False) or self._path(start, goal, overlap=True)

    def _path(self, start: str, goal: str, *, overlap: bool) -> list[Edge] | None:
        if start == goal:
            return []
        previous: dict[str, tuple[str, Edge]] = {}
        queue = deque([start])
        seen = {start}
        while queue:
            here = queue.popleft()
            for edge in sorted(self.edges_of(here, overlap=overlap), key=self._preference):
                there = edge.other(here)
                if there in seen:
                    continue
                seen.add(there)
                previous[there] = (here, edge)
                if there == goal:
                    steps = []
                    node = goal
                    while node != start:
                        node, step = previous[node]
                        steps.append(step)
                    return list(reversed(steps))
                queue.append(there)
        return None

    def _preference(self, edge: Edge) -> tuple[int, int, int]:
        """Stronger edges first; of two edges between the same tables (``friend.student_id``
        and ``friend.friend_id`` both to ``highschooler``) the one the question's direction
        names (``toward``), else the one on the child's earlier column, the reference a
        table is first about."""
        child = self.catalog.table(edge.child)
        names = [c.name for c in child.columns] if child is not None else []
        column = edge.child_column
        named = 0 if (edge.child, column) in self._toward else 1
        return (edge.rank, named, names.index(column) if column in names else len(names))

    def tree(self, base: str, others: Iterable[str]) -> list[tuple[str, Edge]] | None:
        """Joins reaching every table in ``others`` from ``base``: (new table, edge) pairs,
        each joined to a table already in the tree; None when one is unreachable."""
        inside = [base]
        joins: list[tuple[str, Edge]] = []
        for goal in others:
            added = self.reach(inside, goal)
            if added is None:
                return None
            joins += added
        return joins

    def reach(self, inside: list[str], goal: str) -> list[tuple[str, Edge]] | None:
        """The joins that bring ``goal`` into the tables already ``inside`` (which grows):
        the shortest path from any of them; None when none reaches it."""
        if goal in inside:
            return []
        best: list[Edge] | None = None
        best_from = ""
        for start in inside:
            found = self.path(start, goal)
            if found is not None and (best is None or len(found) < len(best)):
                best, best_from = found, start
        if best is None:
            return None
        joins: list[tuple[str, Edge]] = []
        node = best_from
        for edge in best:
            node = edge.other(node)
            if node not in inside:
                inside.append(node)
                joins.append((node, edge))
        return joins


def declared_edges(catalog: Catalog) -> list[Edge]:
    """The foreign keys, composite ones included."""
    edges = []
    for table in catalog.tables:
        for fk in table.foreign_keys:
            parent = catalog.table(fk.referenced_table)
            if parent is None or not fk.columns:
                continue
            edges.append(Edge(table.qualified, fk.columns, parent.qualified, fk.referenced_columns))
    return edges


def _edge(info: JoinInfo) -> Edge:
    if info.origin is JoinOrigin.GLOSSARY:
        kind = "glossary"
    elif info.evidence.startswith(_OVERLAP):
        kind = "overlap"
    else:
        kind = "key" if info.origin is JoinOrigin.INFERRED else "declared"
    return Edge(
        info.child, info.child_columns, info.parent, info.parent_columns, kind, info.evidence
    )


def resolve_joins(catalog: Catalog, specs: Sequence[JoinSpec]) -> tuple[list[JoinInfo], list[str]]:
    """A glossary's joins resolved against the catalog, and what could not be: a table or
    column it does not hold (the role cannot read it, or a typo), or types that cannot be
    compared. Nothing is guessed."""
    resolved: list[JoinInfo] = []
    problems: list[str] = []
    for spec in specs:
        child, parent = catalog.table(spec.child), catalog.table(spec.parent)
        missing = [
            name for name, table in ((spec.child, child), (spec.parent, parent)) if not table
        ]
        if child is None or parent is None:
            problems.append(f"{spec.text()}: no table {missing[0]!r}")
            continue
        pairs = list(zip(spec.child_columns, spec.parent_columns, strict=True))
        bad = [
            f"{table.name}.{name}"
            for table, names in ((child, spec.child_columns), (parent, spec.parent_columns))
            for name in names
            if table.column(name) is None
        ]
        if bad:
            problems.append(f"{spec.text()}: no column {bad[0]!r}")
            continue
        clash = [(a, b) for a, b in pairs if _family(child, a) != _family(parent, b)]
        if clash:
            problems.append(f"{spec.text()}: {clash[0][0]} and {clash[0][1]} have other types")
            continue
        resolved.append(
            JoinInfo(
                child.qualified,
                spec.child_columns,
                parent.qualified,
                spec.parent_columns,
                JoinOrigin.GLOSSARY,
                "declared in the glossary file",
            )
        )
    return resolved, problems


def describe(catalog: Catalog) -> list[str]:
    """The catalog's keys and joins in words, declared apart from inferred with the
    evidence for each (what ``tandem sql-check`` prints)."""
    lines = [
        f"key {t.name}({', '.join(t.primary_key)}): inferred, {t.key_evidence}"
        for t in catalog.tables
        if t.key_evidence
    ]
    for edge in JoinGraph(catalog).edges:
        child = ", ".join(f"{edge.child}.{c}" for c in edge.child_columns)
        parent = ", ".join(f"{edge.parent}.{c}" for c in edge.parent_columns)
        origin = {"declared": "declared", "glossary": "glossary", "key": "inferred"}.get(
            edge.kind, "inferred, shared values only"
        )
        why = f": {edge.evidence}" if edge.evidence and edge.kind != "glossary" else ""
        lines.append(f"join {child} -> {parent} ({origin}{why})")
    return lines


def _family(table: TableInfo, column: str) -> str:
    found = table.column(column)
    return type_family(found.data_type) if found is not None else ""


# --- candidates from names ----------------------------------------------------------

_UNCHECKED = "names only (the data was not read)"
_OVERLAP = "same name and shared values"


def single_keys(table: TableInfo) -> list[ColumnInfo]:
    """The table's single-column keys: its primary key (declared or inferred), then each
    one-column UNIQUE constraint."""
    keys = [table.primary_key] if len(table.primary_key) == 1 else []
    keys += [u for u in table.unique_keys if len(u) == 1 and u not in keys]
    return [c for (name,) in keys if (c := table.column(name)) is not None]


def name_candidates(catalog: Catalog) -> list[JoinInfo]:
    """Joins the names alone suggest, child column to a single-column key of the parent
    (what a catalog never checked against its data is joined by)."""
    return [info for info, data_only in _candidates(catalog) if not data_only]


def _candidates(catalog: Catalog) -> list[tuple[JoinInfo, bool]]:
    """Every candidate join, each with whether only the data can confirm it (a column
    whose name holds the parent's name; same-named text columns)."""
    prefixes = shared_prefixes([t.name for t in catalog.tables])
    found: list[tuple[JoinInfo, bool]] = []
    seen: set[tuple[str, str, str, str]] = set()

    def add(
        child: TableInfo, column: str, parent: TableInfo, key: str, why: str, *, data: bool
    ) -> None:
        mark = (child.qualified, column, parent.qualified, key)
        if mark not in seen:
            seen.add(mark)
            info = JoinInfo(
                child.qualified, (column,), parent.qualified, (key,), JoinOrigin.INFERRED, why
            )
            found.append((info, data))

    # every column by its name, in catalog and column order: a key is compared with each
    # name once, not with each column of each table
    holders: dict[str, list[tuple[int, TableInfo, ColumnInfo]]] = {}
    order = 0
    for child in catalog.tables:
        for column in child.columns:
            holders.setdefault(column.name.lower(), []).append((order, child, column))
            order += 1
    for parent in catalog.tables:
        keys = single_keys(parent)
        if not keys:
            continue
        words = name_words(parent.name)
        last = stem(words[-1]) if words else ""
        base = parent.name.lower()
        prefix = prefixes.get(parent.name, "").lower()
        if prefix and base.startswith(prefix):
            base = base[len(prefix) :]
        whole = stem(base)
        forms = {f"{whole}_id", f"{whole}id", f"{last}_id", f"{last}id"}
        for key in keys:
            core = key.name.lower()
            if prefix and core.startswith(prefix):
                core = core[len(prefix) :]
            family = type_family(key.data_type)
            named = [
                holder
                for name, found in holders.items()
                if _may_name(name, key, (forms, core), (whole, last))
                for holder in found
            ]
            for _, child, column in sorted(named, key=lambda holder: holder[0]):
                if child.qualified == parent.qualified or type_family(column.data_type) != family:
                    continue
                if measure_name(column.name):
                    continue  # "num_semesters" counts semesters, it names none
                why = _named_reference(column, key, (forms, core), child, (whole, last))
                if why:
                    add(child, column.name, parent, key.name, why, data=False)
                elif _holds_name(column.name, last, key):
                    holds = f"{column.name} holds {last}"
                    add(child, column.name, parent, key.name, holds, data=True)
    found += [(info, True) for info in _same_named(catalog, seen)]
    return found


# A prefix a group of tables shares within a wider catalog (a source's ``sb``, ``crm_``) is
# short; a longer shared start is a word of their names (``wallet_…``), not a prefix.
SOURCE_PREFIX_MAX = 4


def shared_prefixes(names: Sequence[str]) -> dict[str, str]:
    """Each table name's prefix: the one every name shares, or, where they share none, the
    short one its siblings share (names beginning with the same two letters, three or more
    of them, as ``common_prefix`` reads a group)."""
    every = common_prefix(list(names))
    if every:
        return dict.fromkeys(names, every)
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name[:2].lower(), []).append(name)
    found: dict[str, str] = {}
    for group in groups.values():
        shared = common_prefix(group) if len(group) >= 3 else ""
        if 2 <= len(shared) <= SOURCE_PREFIX_MAX:
            found |= dict.fromkeys(group, shared)
    return found


def _named_reference(
    column: ColumnInfo,
    key: ColumnInfo,
    key_names: tuple[set[str], str],
    child: TableInfo,
    parent_names: tuple[str, str],
) -> str:
    """Why the column's name says it references ``key``, or empty. ``key_names``: the
    ``<parent>_id`` forms and the key's name without the schema's shared prefix."""
    forms, core = key_names
    if child.primary_key == (column.name,) and column.name != key.name:
        return ""
    name = column.name.lower()
    if name == key.name.lower():
        if child.primary_key != (column.name,) or len(child.primary_key) > 1:
            return f"same name as the key {key.name}"
        return ""
    if name in forms:
        return f"{column.name} names the table"
    if len(core) >= 5 and name.endswith(core) and core not in ("id", "_id"):
        return f"{column.name} ends with the key's name"
    bare = name.removesuffix("_id").removesuffix("id").rstrip("_")
    if bare and len(bare) >= 3 and stem(bare) in parent_names:
        return f"{column.name} is the table's name"
    return ""


def _may_name(
    name: str, key: ColumnInfo, key_names: tuple[set[str], str], parent_names: tuple[str, str]
) -> bool:
    """Whether a column of this (lower-case) name could reference ``key`` by any rule of
    :func:`_named_reference` or :func:`_holds_name`, whatever table holds it."""
    forms, core = key_names
    if name == key.name.lower() or name in forms:
        return True
    if len(core) >= 5 and name.endswith(core) and core not in ("id", "_id"):
        return True
    bare = name.removesuffix("_id").removesuffix("id").rstrip("_")
    if bare and len(bare) >= 3 and stem(bare) in parent_names:
        return True
    return _holds_name(name, parent_names[1], key)


def _holds_name(column: str, last: str, key: ColumnInfo) -> bool:
    """``sourceairport`` holds ``airport``: a reference only the data can confirm."""
    name = column.lower()
    return len(last) >= 4 and last in name and name != key.name.lower()


def _same_named(catalog: Catalog, seen: set[tuple[str, str, str, str]]) -> list[JoinInfo]:
    """Text columns two tables share by name, neither a key of its table: joined when
    their values overlap (checked later), the child being the later table."""
    by_name: dict[str, list[tuple[int, int, TableInfo, ColumnInfo]]] = {}
    for i, table in enumerate(catalog.tables):
        for position, column in enumerate(table.columns):
            if type_family(column.data_type) == "text" and column.name not in table.primary_key:
                by_name.setdefault(column.name, []).append((i, position, table, column))
    found = []
    for holders in by_name.values():
        for k, (i, position, a, column) in enumerate(holders):
            for j, _, b, other in holders[k + 1 :]:
                if column.sample_values and other.sample_values:
                    # a few values both tables sample (a status, a type) are categories
                    # of each, not a reference from one to the other
                    continue
                if (b.qualified, column.name, a.qualified, column.name) in seen or (
                    a.qualified,
                    column.name,
                    b.qualified,
                    column.name,
                ) in seen:
                    continue
                info = JoinInfo(
                    b.qualified,
                    (column.name,),
                    a.qualified,
                    (column.name,),
                    JoinOrigin.INFERRED,
                    _OVERLAP,
                )
                found.append((i, j, position, info))
    return [info for *_, info in sorted(found, key=lambda f: f[:3])]


# --- confirmation by the data ---------------------------------------------------------

# Bounds of the data reads when the catalog loads: rows sampled per table for keys,
# distinct child values checked per edge, each read's timeout, and the whole budget.
KEY_SAMPLE_ROWS = 100_000
JOIN_SAMPLE_VALUES = 1000
CONTAINMENT_MIN = 0.9
# A column holding values of an integer key no name points at is believed only when the
# key is sparse over the column's range (ids 1025..1934 with gaps, not 1..406).
DENSITY_MAX = 0.5
OVERLAP_MIN = 0.5
_READ_TIMEOUT = "2s"
INFERENCE_SECONDS_MAX = 20.0
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
    Bounded: sampled reads under a short timeout, within :data:`INFERENCE_SECONDS_MAX`;
    what cannot be read keeps the names' word for it."""
    deadline = clock() + INFERENCE_SECONDS_MAX
    owners = _Owners(catalog.tables)
    tables = []
    for table in catalog.tables:
        keyed_table = table
        if not table.primary_key and clock() < deadline:
            keyed_table = await _infer_key(conn, table, owners)
        tables.append(keyed_table)
    keyed = replace(catalog, tables=tuple(tables))
    joined = {frozenset((e.child, e.parent)) for e in declared_edges(keyed)}
    joined |= {frozenset((j.child, j.parent)) for j in declared}
    confirmed: list[JoinInfo] = list(declared)
    counts: dict[tuple[str, str], tuple[int, int, int] | None] = {}
    for candidate, data_only in _candidates(keyed):
        if frozenset((candidate.child, candidate.parent)) in joined:
            continue
        overlap = candidate.evidence == _OVERLAP
        if overlap and clock() < deadline:  # one side never repeats: the other refers to it
            unique = await _unique_reference(
                conn, keyed, candidate, counts
            ) or await _unique_reference(conn, keyed, _reversed(candidate), counts)
            if unique is not None:
                confirmed.append(unique)
                continue
        share = await _containment(conn, keyed, candidate) if clock() < deadline else None
        if share is None:
            if not data_only:
                confirmed.append(replace(candidate, evidence=f"{candidate.evidence}; {_UNCHECKED}"))
            continue
        needed = OVERLAP_MIN if overlap else CONTAINMENT_MIN
        if share[1] and share[0] / share[1] >= needed:
            pair = None
            if overlap:  # either table may be the one whose rows the pair names
                pair = await _pair_reference(conn, keyed, candidate) or await _pair_reference(
                    conn, keyed, _reversed(candidate)
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

    def in_time() -> bool:
        return clock() < deadline

    confirmed += await _held_by_keys(
        conn,
        keyed,
        _unnamed_references(keyed, referencing),
        joined,
        entity_keys=entity_keys,
        in_time=in_time,
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
        conn,
        keyed,
        _coded_references(keyed, referencing),
        set(joined),
        entity_keys=text_keys,
        in_time=in_time,
        grow=False,
    )
    return replace(keyed, joins=tuple(confirmed))


async def _held_by_keys(
    conn: psycopg.AsyncConnection[Any],
    catalog: Catalog,
    columns: Sequence[tuple[TableInfo, ColumnInfo]],
    joined: set[frozenset[str]],
    *,
    entity_keys: Sequence[tuple[TableInfo, ColumnInfo]],
    in_time: Callable[[], bool],
    grow: bool = True,
) -> list[JoinInfo]:
    """The references found for ``columns``, each to the one key among ``entity_keys``
    that holds its values (``_only_key_holding``), while time lasts. With ``grow`` a pair
    of tables joined by one find is not tried again for the next column."""
    found: list[JoinInfo] = []
    for child, column in columns:
        if not in_time():
            break
        join = await _only_key_holding(
            conn, catalog, child, column, joined, entity_keys=entity_keys, in_time=in_time
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
    conn: psycopg.AsyncConnection[Any],
    catalog: Catalog,
    child: TableInfo,
    column: ColumnInfo,
    joined: set[frozenset[str]],
    *,
    entity_keys: Sequence[tuple[TableInfo, ColumnInfo]],
    in_time: Callable[[], bool],
) -> JoinInfo | None:
    """The join to the one entity key (``id``, or named for its own table) of another
    table holding at least 90 % of the column's values; None when none does, or more than
    one does (small integer ids fit many keys: ambiguity is no evidence), or when the
    reads ran out of time before every key was tried."""
    holding: list[JoinInfo] = []
    family = type_family(column.data_type)
    for parent, key in entity_keys:
        if parent is child or frozenset((child.qualified, parent.qualified)) in joined:
            continue
        if type_family(key.data_type) != family:
            continue
        if not in_time():
            return None
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
        share = await _containment(conn, catalog, candidate, sample=None)
        if share is None or share[1] < 2 or share[0] / share[1] < CONTAINMENT_MIN:
            continue
        if type_family(key.data_type) == "int":
            density = await _density(conn, catalog, candidate)
            if density is None or density > DENSITY_MAX:
                continue  # 1..22 sits inside any dense 1..406: chance, not evidence
        found = f"{share[0]} of {share[1]} distinct values found in {parent.qualified}"
        holding.append(replace(candidate, evidence=f"the only key holding them; {found}"))
    return holding[0] if len(holding) == 1 else None


async def _density(
    conn: psycopg.AsyncConnection[Any], catalog: Catalog, join: JoinInfo
) -> float | None:
    """How densely the parent's integer key fills the range of the child's values (1.0:
    every integer in it is a key, so any values there would be "found")."""
    child, parent = catalog.table(join.child), catalog.table(join.parent)
    if child is None or parent is None:
        return None
    statement = sql.SQL(
        "SELECT r.lo, r.hi, (SELECT count(*) FROM {parent} AS p "
        "WHERE p.{pcol} BETWEEN r.lo AND r.hi) "
        "FROM (SELECT min({ccol}) AS lo, max({ccol}) AS hi FROM {child}) AS r"
    ).format(
        parent=sql.Identifier(parent.schema, parent.name),
        pcol=sql.Identifier(join.parent_columns[0]),
        ccol=sql.Identifier(join.child_columns[0]),
        child=sql.Identifier(child.schema, child.name),
    )
    row = await _read_one(conn, statement, ())
    if row is None or row[0] is None or row[1] is None:
        return None
    return float(row[2]) / float(int(row[1]) - int(row[0]) + 1)


async def _infer_key(
    conn: psycopg.AsyncConnection[Any], table: TableInfo, owners: _Owners
) -> TableInfo:
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
    row = await _read_one(conn, statement, (KEY_SAMPLE_ROWS,))
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
            got = await _read_one(conn, pair, (KEY_SAMPLE_ROWS,))
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
    conn: psycopg.AsyncConnection[Any],
    catalog: Catalog,
    join: JoinInfo,
    *,
    sample: int | None = JOIN_SAMPLE_VALUES,
) -> tuple[int, int] | None:
    """(distinct child values found in the parent column, distinct child values checked)
    over a sample of ``sample`` distinct values (all of them for None, within the read's
    timeout), or None when the read fails."""
    child, parent = catalog.table(join.child), catalog.table(join.parent)
    if child is None or parent is None:
        return None
    statement = sql.SQL(
        "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM {parent} AS p "
        "WHERE p.{pcol} = s.v)), count(*) "
        "FROM (SELECT DISTINCT {ccol} AS v FROM {child} WHERE {ccol} IS NOT NULL LIMIT %s) AS s"
    ).format(
        parent=sql.Identifier(parent.schema, parent.name),
        pcol=sql.Identifier(join.parent_columns[0]),
        ccol=sql.Identifier(join.child_columns[0]),
        child=sql.Identifier(child.schema, child.name),
    )
    row = await _read_one(conn, statement, (sample,))
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


async def _pair_reference(
    conn: psycopg.AsyncConnection[Any], catalog: Catalog, join: JoinInfo
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
        row = await _read_one(conn, unique, (KEY_SAMPLE_ROWS,))
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
        share = await _read_one(conn, contained, (JOIN_SAMPLE_VALUES,))
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
    conn: psycopg.AsyncConnection[Any],
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
    top = await _repeats(conn, parent, join.parent_columns[0], counts)
    if top is None or top[0] < 2 or not top[0] == top[1] == top[2]:
        return None
    below = await _repeats(conn, child, join.child_columns[0], counts)
    if below is None or below[2] >= below[1]:
        return None
    share = await _containment(conn, catalog, join)
    if share is None or not share[1] or share[0] / share[1] < CONTAINMENT_MIN:
        return None
    return replace(
        join,
        evidence=f"{join.parent_columns[0]} never repeats in {parent.name} ({top[0]} rows "
        f"read); {share[0]} of {share[1]} distinct values found there",
    )


async def _repeats(
    conn: psycopg.AsyncConnection[Any],
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
        row = await _read_one(conn, statement, (KEY_SAMPLE_ROWS,))
        counts[(table.qualified, column)] = None if row is None else (row[0], row[1], row[2])
    return counts[(table.qualified, column)]


async def _read_one(
    conn: psycopg.AsyncConnection[Any], statement: sql.Composed, params: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = '{_READ_TIMEOUT}'")
            return await (await conn.execute(statement, params)).fetchone()
    except psycopg.Error as exc:
        _log.info(
            "join inference skipped a read", extra={"fields": {"error.type": type(exc).__name__}}
        )
        return None
