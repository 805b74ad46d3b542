"""The other reference: of a table's several references to one table (``flights.origin``
and ``flights.dest`` to ``airports``), a statement that found nothing through the one it
joins on, where the data holds rows through another, answered the wrong question.

"The average departure delay of flights in the America/Denver time zone" joined on
``flights.origin`` averages nothing: no flight leaves from an airport in that zone, while
many arrive at one. The statement's empty answer (no row, or one row of NULLs and zeros)
reads as a confident "none"; the stored values say the condition belongs to the other
end. A probe asks, in one bounded statement, whether any row meets the statement's
conditions through each reference (its FROM, joins and WHERE, the join swapped onto the
other reference; no grouping, no cut). Through the one used none, through another some:
refused naming the reference the data points to."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import Edge, JoinGraph
from services.sql.gate import ResultSet
from services.sql.verify._statement import StatementNodes, column_name


@dataclass(frozen=True)
class Swapped:
    """One join of the statement on a reference that has siblings: the probe through it
    (``used``) and through each sibling (``others``)."""

    child: str
    used: str
    used_probe: str
    others: tuple[tuple[str, str], ...]  # (sibling's column, its probe)

    @property
    def probes(self) -> list[str]:
        return [self.used_probe, *(p for _, p in self.others)]

    def refusal(self, answers: list[object]) -> str:
        """Why the statement is refused, or "" when the data does not say so: nothing
        through the reference used, rows through exactly one other."""
        if len(answers) != 1 + len(self.others) or answers[0] is not False:
            return ""
        held = [c for (c, _), a in zip(self.others, answers[1:], strict=True) if a is True]
        if len(held) != 1:
            return ""
        name = self.child.rsplit(".", 1)[-1]
        return (
            f"no row meets the statement's conditions through {name}.{self.used}; rows do "
            f"through {name}.{held[0]}: the question's condition may be on that reference"
        )


def found_nothing(result: ResultSet) -> bool:
    """The answer says "none": no row, or one row whose every value is NULL or zero (an
    aggregate over no row)."""
    if not result.rows:
        return True
    if len(result.rows) > 1:
        return False
    for value in result.rows[0].values:
        kind = value.WhichOneof("kind")
        if kind in (None, "null_value"):
            continue
        if kind in ("int_value", "double_value") and getattr(value, kind) == 0:
            continue
        return False
    return True


def swapped_references(tree: exp.Expr, nodes: StatementNodes, graph: JoinGraph) -> list[Swapped]:
    """The outer SELECT's joins on one of a table's several references to the table it
    joins, each with the probes through it and through its siblings; none when the
    statement joins the two tables on more than one reference (both ends said)."""
    if not isinstance(tree, exp.Select):
        return []
    siblings = _siblings(graph)
    joins: dict[tuple[str, str], list[tuple[exp.EQ, exp.Column, Edge]]] = {}
    for join in tree.args.get("joins") or []:
        on = join.args.get("on")
        if on is None:
            continue
        for eq in on.find_all(exp.EQ):
            left, right = eq.this, eq.expression
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            for mine, theirs in ((left, right), (right, left)):
                a, b = nodes.table_of(mine), nodes.table_of(theirs)
                if a is None or b is None:
                    continue
                for edge in siblings.get((a.qualified, b.qualified), ()):
                    if edge.child_column == column_name(mine) and (
                        edge.parent_column == column_name(theirs)
                    ):
                        joins.setdefault((a.qualified, b.qualified), []).append((eq, mine, edge))
    found: list[Swapped] = []
    for pair, used in joins.items():
        if len(used) != 1:
            continue
        _, mine, edge = used[0]
        others = tuple(
            (e.child_column, _probe(tree, mine, e.child_column))
            for e in siblings[pair]
            if e.child_column != edge.child_column and e.parent_column == edge.parent_column
        )
        if others:
            found.append(Swapped(pair[0], edge.child_column, _probe(tree, mine, ""), others))
    return found


def _siblings(graph: JoinGraph) -> dict[tuple[str, str], tuple[Edge, ...]]:
    """(child, parent) -> the child's single-column references to the parent, where it
    has several."""
    found: dict[tuple[str, str], tuple[Edge, ...]] = dict(graph.parallel)
    for pair, ways in graph.directed.items():
        found[pair] = tuple(ways.values())
    return found


def _probe(tree: exp.Select, column: exp.Column, swap: str) -> str:
    """EXISTS over the statement's rows before grouping: its FROM, joins and WHERE, the
    join column ``column`` renamed ``swap`` (none: as it stands)."""
    probe = tree.copy()
    if swap:  # the copy's node where the original's stands (a copy walks the same way)
        target = next(c for o, c in zip(tree.walk(), probe.walk(), strict=True) if o is column)
        target.set("this", exp.to_identifier(swap))
    probe.set("expressions", [exp.Literal.number(1)])
    for part in ("group", "having", "order", "limit", "offset", "distinct"):
        probe.set(part, None)
    probe.set("with", tree.args.get("with"))
    return f"EXISTS ({probe.sql(dialect='postgres')})"
