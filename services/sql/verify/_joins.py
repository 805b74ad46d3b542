"""The ``joins`` check: two tables are joined only on columns that are a key of one
another.

A join pairs each row with the rows whose column holds the same value. When the columns
are a reference and the key it points at (declared, in the glossary, or inferred from
names and data), each row finds its one related row; when they are two categories that
happen to share labels (a status in both tables), or a measure that happens to take key
values (``semester.semester_id = course.num_semesters``: semesters 1..8, counts 1..8),
rows pair with rows they have nothing to do with, and every count and sum over the join
is wrong while the statement runs without a complaint.

A join condition passes when the catalog's join graph holds an edge between exactly those
columns, or when one side is a key of its table (declared or inferred: unique, never
null) and the other is of the same type family. A column whose name says it counts or
sums is never a join column, whatever edge was inferred for it; a declared foreign key
always is.

A reference of several columns (``salaries (year_id, team_id) -> teams``, whose key is the
pair) is an edge too, but of all its columns at once: the statement's equalities between
the same two tables pass when they join every column of it, each with its own. One
column of it joined alone (``team_id`` without ``year_id``) pairs a row with the parent's
rows of every year, and stays refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import JoinGraph, TableInfo
from services.sql.verify._said import aliases, said
from services.sql.verify._statement import StatementNodes, column_name, is_key
from services.sql.words import measure_name


@dataclass(frozen=True)
class JoinPair:
    """One equality between columns of two tables."""

    left: TableInfo
    left_column: str
    right: TableInfo
    right_column: str
    node: exp.EQ
    tree: exp.Expr

    @property
    def text(self) -> str:
        """The condition, said for a person (written only for a refusal)."""
        return said(self.node, aliases(self.tree))


def join_pairs(nodes: StatementNodes) -> list[JoinPair]:
    """Every ``a.x = b.y`` of the statement between columns of two different tables, in
    join conditions and WHERE clauses alike (an implicit join is a join)."""
    found: list[JoinPair] = []
    for eq in nodes.equalities:
        left, right = eq.this, eq.expression
        assert isinstance(left, exp.Column) and isinstance(right, exp.Column)
        a, b = nodes.table_of(left), nodes.table_of(right)
        if a is None or b is None or a.qualified == b.qualified:
            continue
        found.append(JoinPair(a, column_name(left), b, column_name(right), eq, nodes.tree))
    return found


def _edge_between(graph: JoinGraph, pair: JoinPair) -> tuple[bool, bool]:
    """(an edge joins exactly these columns, that edge is declared)."""
    for edge in graph.edges_of(pair.left.qualified, overlap=True):
        ends = {
            (edge.child, edge.child_column),
            (edge.parent, edge.parent_column),
        }
        if len(edge.child_columns) != 1:
            continue
        if ends == {
            (pair.left.qualified, pair.left_column),
            (pair.right.qualified, pair.right_column),
        }:
            return True, not edge.inferred
    return False, False


def _ends(pair: JoinPair) -> tuple[str, str]:
    """The aliases of the two tables an equality joins (what tells two readings of one
    table apart)."""
    left, right = pair.node.this, pair.node.expression
    assert isinstance(left, exp.Column) and isinstance(right, exp.Column)
    return left.table, right.table


def _composite_joined(pair: JoinPair, among: list[JoinPair], graph: JoinGraph) -> bool:
    """``pair`` is one column of a reference of several columns between its two tables,
    and the statement joins every other column of that reference between the same two
    readings of them."""
    ends = _ends(pair)
    joined = {
        frozenset({(p.left.qualified, p.left_column), (p.right.qualified, p.right_column)})
        for p in among
        if {*_ends(p)} == {*ends}
    }
    mine = frozenset(
        {(pair.left.qualified, pair.left_column), (pair.right.qualified, pair.right_column)}
    )
    for edge in graph.edges_of(pair.left.qualified, overlap=True):
        if len(edge.child_columns) < 2 or {edge.child, edge.parent} != {
            pair.left.qualified,
            pair.right.qualified,
        }:
            continue
        columns = [
            frozenset({(edge.child, c), (edge.parent, p)})
            for c, p in zip(edge.child_columns, edge.parent_columns, strict=True)
        ]
        if mine in columns and all(c in joined for c in columns):
            return True
    return False


def join_refusal(pair: JoinPair, graph: JoinGraph, among: list[JoinPair] | None = None) -> str:
    """Why the join is refused, or empty when it passes. ``among``: every join pair of
    the statement, for a reference of several columns (all of them joined, or refused)."""
    if among and _composite_joined(pair, among, graph):
        return ""
    edge, declared = _edge_between(graph, pair)
    if declared:
        return ""
    for table, column in ((pair.left, pair.left_column), (pair.right, pair.right_column)):
        if measure_name(column):
            return (
                f"{table.name}.{column} counts or sums something; joining on it "
                f"({pair.text}) pairs rows that do not belong together"
            )
    if edge:
        return ""
    if is_key(pair.left, pair.left_column) or is_key(pair.right, pair.right_column):
        return ""
    return (
        f"{pair.text} joins two columns neither of which is a key of its table, and no "
        f"reference between them is known"
    )
