"""The join graph of a catalog: declared foreign keys first, then edges inferred from
names and types, so a warehouse that declares no keys still joins.

An inferred edge ``child.column -> parent.key`` needs a single-column primary key on the
parent, the same type class on both sides, and one of these name shapes:

- the child column has the key's own name (``treatments.patient_id -> patients.patient_id``);
- the child column is ``<parent singular>_id`` or ``<parent singular>id`` (``coupons.merchant_id
  -> merchants.mid``);
- the child column ends with the key's name once the prefix every table name shares is
  dropped from it (``sbTransaction.sbTxCustId -> sbCustomer.sbCustId`` in a schema whose
  tables are all ``sb…``).

When the catalog loads, each inferred edge is checked against the data (a sample of the
child's values must all be keys of the parent) and dropped when the data contradicts it.
Paths are shortest by hop count, declared edges preferred; a question touching several
tables is joined along a tree grown from the base table.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg import sql

from services.sql._catalog import Catalog, ColumnInfo, TableInfo
from services.sql._words import common_prefix, name_words, stem

_log = logging.getLogger("tandem.sql.joins")


def type_family(data_type: str) -> str:
    if data_type.startswith(("smallint", "integer", "bigint", "numeric")):
        return "int"
    if data_type.startswith(("text", "character", "citext", "varchar")):
        return "text"
    if data_type == "uuid":
        return "uuid"
    return data_type


@dataclass(frozen=True)
class Edge:
    """``child.child_column`` references ``parent.parent_column`` (declared or inferred)."""

    child: str
    child_column: str
    parent: str
    parent_column: str
    inferred: bool = False

    def other(self, table: str) -> str:
        return self.parent if table == self.child else self.child

    def column_of(self, table: str) -> str:
        return self.child_column if table == self.child else self.parent_column


class JoinGraph:
    """Every join edge of one catalog, with shortest paths between tables."""

    def __init__(self, catalog: Catalog, extra: Iterable[Edge] = ()) -> None:
        self.catalog = catalog
        self.edges: list[Edge] = []
        self._by_table: dict[str, list[Edge]] = {}
        seen: set[tuple[str, str, str, str]] = set()
        for edge in [*self._declared(catalog), *extra, *self._inferred(catalog)]:
            key = (edge.child, edge.child_column, edge.parent, edge.parent_column)
            if key in seen or edge.child == edge.parent:
                continue
            if edge.inferred and key in catalog.refuted_joins:
                continue
            seen.add(key)
            self.edges.append(edge)
            self._by_table.setdefault(edge.child, []).append(edge)
            self._by_table.setdefault(edge.parent, []).append(edge)

    @staticmethod
    def _declared(catalog: Catalog) -> list[Edge]:
        edges = []
        for table in catalog.tables:
            for fk in table.foreign_keys:
                parent = catalog.table(fk.referenced_table)
                if parent is None or len(fk.columns) != 1:
                    continue
                edges.append(
                    Edge(table.qualified, fk.columns[0], parent.qualified, fk.referenced_columns[0])
                )
        return edges

    @staticmethod
    def _inferred(catalog: Catalog) -> list[Edge]:
        prefix = common_prefix([t.name for t in catalog.tables]).lower()
        edges = []
        for parent in catalog.tables:
            if len(parent.primary_key) != 1:
                continue
            key = parent.column(parent.primary_key[0])
            if key is None:
                continue
            last = stem(name_words(parent.name)[-1]) if parent.name else ""
            base = parent.name.lower()
            if prefix and base.startswith(prefix):
                base = base[len(prefix) :]
            forms = {f"{stem(base)}_id", f"{stem(base)}id", f"{last}_id", f"{last}id"}
            core = key.name.lower()
            if prefix and core.startswith(prefix):
                core = core[len(prefix) :]
            for child in catalog.tables:
                if child.qualified == parent.qualified:
                    continue
                for column in child.columns:
                    if _is_reference(column, key, forms, core, child):
                        edges.append(
                            Edge(child.qualified, column.name, parent.qualified, key.name, True)
                        )
        return edges

    def edges_of(self, table: str) -> list[Edge]:
        return self._by_table.get(table, [])

    def between(self, a: str, b: str) -> list[Edge]:
        return [e for e in self.edges_of(a) if e.other(a) == b]

    def path(self, start: str, goal: str) -> list[Edge] | None:
        """Fewest hops from ``start`` to ``goal``; declared edges before inferred ones."""
        if start == goal:
            return []
        previous: dict[str, tuple[str, Edge]] = {}
        queue = deque([start])
        seen = {start}
        while queue:
            here = queue.popleft()
            for edge in sorted(self.edges_of(here), key=lambda e: e.inferred):
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

    def tree(self, base: str, others: Iterable[str]) -> list[tuple[str, Edge]] | None:
        """Joins reaching every table in ``others`` from ``base``: (new table, edge) pairs,
        each joined to a table already in the tree; None when one is unreachable."""
        inside = [base]
        joins: list[tuple[str, Edge]] = []
        for goal in others:
            if goal in inside:
                continue
            best: list[Edge] | None = None
            best_from = ""
            for start in inside:
                found = self.path(start, goal)
                if found is not None and (best is None or len(found) < len(best)):
                    best, best_from = found, start
            if best is None:
                return None
            node = best_from
            for edge in best:
                node = edge.other(node)
                if node not in inside:
                    inside.append(node)
                    joins.append((node, edge))
        return joins


def _is_reference(
    column: ColumnInfo, key: ColumnInfo, forms: set[str], core: str, child: TableInfo
) -> bool:
    if type_family(column.data_type) != type_family(key.data_type):
        return False
    if child.primary_key == (column.name,) and column.name != key.name:
        return False
    name = column.name.lower()
    if name == key.name.lower():
        return child.primary_key != (column.name,) or len(child.primary_key) > 1
    if name in forms:
        return True
    return len(core) >= 5 and name.endswith(core) and core not in ("id", "_id")


# How many of a child column's values are looked up in the parent's key per inferred edge.
_CHECK_SAMPLE = 200
_CHECK_TIMEOUT = "1s"
_CHECK_SQL = """
SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
  SELECT 1 FROM {parent} AS p WHERE p.{parent_col} = s.v))
FROM (SELECT {child_col} AS v FROM {child} WHERE {child_col} IS NOT NULL LIMIT %s) AS s
"""


async def refute_joins(conn: psycopg.AsyncConnection[Any], catalog: Catalog) -> Catalog:
    """The catalog with the inferred edges its data contradicts marked refuted: when most
    of a sample of the child column's values are not keys of the parent, the name only
    looks like a reference (a few orphans are dirty data, not a refutation). Cheap (a
    bounded sample against the parent's primary key, under a short timeout); an edge that
    cannot be checked stays."""
    refuted = set()
    for edge in JoinGraph(catalog).edges:
        if not edge.inferred:
            continue
        child, parent = catalog.table(edge.child), catalog.table(edge.parent)
        if child is None or parent is None:
            continue
        statement = sql.SQL(_CHECK_SQL).format(
            child_col=sql.Identifier(edge.child_column),
            child=sql.Identifier(child.schema, child.name),
            parent=sql.Identifier(parent.schema, parent.name),
            parent_col=sql.Identifier(edge.parent_column),
        )
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL statement_timeout = '{_CHECK_TIMEOUT}'")
                row = await (await conn.execute(statement, (_CHECK_SAMPLE,))).fetchone()
        except psycopg.Error as exc:
            _log.info(
                "join check skipped an edge", extra={"fields": {"error.type": type(exc).__name__}}
            )
            continue
        if row is not None and row[1] * 2 > row[0]:
            refuted.add((edge.child, edge.child_column, edge.parent, edge.parent_column))
    return replace(catalog, refuted_joins=frozenset(refuted)) if refuted else catalog
