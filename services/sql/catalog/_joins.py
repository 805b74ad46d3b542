"""The join graph of a catalog: declared foreign keys, the joins a glossary declares, and
the joins inferred for it (``_candidates`` proposes them from names, ``_inference`` confirms
them against the data when the catalog loads), so a warehouse that declares no keys still
joins. Declared edges win: no inferred edge stands between two tables a foreign key
already joins.

Paths are shortest by hop count, stronger edges preferred (declared, glossary, inferred by
key, by shared values); a question touching several tables is joined along a tree grown
from its base table.
"""

from __future__ import annotations

import copy
import functools
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.sql.catalog._candidates import OVERLAP_EVIDENCE, name_candidates, type_family
from services.sql.catalog._catalog import Catalog, JoinInfo, JoinOrigin, TableInfo
from services.sql.definitions import JoinSpec
from services.sql.words import name_direction

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

    @functools.cached_property
    def parallel(self) -> dict[tuple[str, str], tuple[Edge, ...]]:
        """Parallel references whose names say no direction: (child, parent) -> the
        child's references to that parent (``matches.home_team_id`` and
        ``matches.away_team_id`` to ``teams``; ``friend.student_id`` and
        ``friend.friend_id`` to ``highschooler``), in column order. Which one a question
        means is said by its words, never by the order (``verify/_directions``); pairs
        whose names say a direction are in :attr:`directed`."""
        groups: dict[tuple[str, str], list[Edge]] = {}
        for edge in self.edges:
            if edge.kind != "overlap" and len(edge.child_columns) == 1:
                groups.setdefault((edge.child, edge.parent), []).append(edge)
        return {
            pair: tuple(edges)
            for pair, edges in groups.items()
            if len(edges) > 1 and pair not in self.directed
        }

    def toward(self, way: str) -> JoinGraph:
        """This graph, preferring of two parallel references the one whose name says
        ``way`` ("flights to Denver" joins ``airports`` on ``flights.dest``); the same
        graph when it has no such pair."""
        return self.preferring(
            frozenset(
                (edges[way].child, edges[way].child_column)
                for edges in self.directed.values()
                if way in edges
            )
        )

    def preferring(self, columns: frozenset[tuple[str, str]]) -> JoinGraph:
        """This graph, preferring of parallel references those on ``columns`` (child,
        column): the direction or the role a question says; the same graph when there
        are none. A shallow copy: edges and caches are shared."""
        if not columns:
            return self
        view = copy.copy(self)
        view._toward = self._toward | columns
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


# What an inferred key or join says in place of its counts to a reader under a row filter.
COUNTS_WITHHELD = "counted over every row, not shown under a row filter"


def without_counts(evidence: str) -> str:
    """An inferred join's ``evidence`` less every part that holds a number ("30 of 31
    distinct values found in …", "(120 rows read)"), for a reader who may see only some
    of the tables' rows: the counts were read over every row, other people's too. The
    parts that hold none stay (the names' reason; an overlap's kind is read from it)."""
    parts = [p for p in evidence.split("; ") if not any(ch.isdigit() for ch in p)]
    if len(parts) == len(evidence.split("; ")):
        return evidence
    return "; ".join([*(parts or ["read from the data"]), COUNTS_WITHHELD])


def _edge(info: JoinInfo) -> Edge:
    if info.origin is JoinOrigin.GLOSSARY:
        kind = "glossary"
    elif info.evidence.startswith(OVERLAP_EVIDENCE):
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
    lines += _self_references(catalog)
    return lines + ([catalog.incomplete] if catalog.incomplete else [])


def _self_references(catalog: Catalog) -> list[str]:
    """The references from a table to its own rows, in :func:`describe`'s words: the join
    graph leaves them out (no path between tables runs through one), but the readers use
    them (``employees.reports_to``), and an inferred one should show its evidence."""
    lines = []
    for table in catalog.tables:
        for fk in table.foreign_keys:
            referred = catalog.table(fk.referenced_table)
            if referred is not None and referred.qualified == table.qualified:
                child = ", ".join(f"{table.qualified}.{c}" for c in fk.columns)
                parent = ", ".join(f"{table.qualified}.{c}" for c in fk.referenced_columns)
                lines.append(f"join {child} -> {parent} (declared)")
    for join in catalog.joins or ():
        if join.child == join.parent:
            child = ", ".join(f"{join.child}.{c}" for c in join.child_columns)
            parent = ", ".join(f"{join.parent}.{c}" for c in join.parent_columns)
            why = f": {join.evidence}" if join.evidence else ""
            lines.append(f"join {child} -> {parent} (inferred{why})")
    return lines


def _family(table: TableInfo, column: str) -> str:
    found = table.column(column)
    return type_family(found.data_type) if found is not None else ""
