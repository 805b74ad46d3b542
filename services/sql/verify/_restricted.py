"""Counts a join restricts: a count that can only see the rows another count's join
lets through.

**A rate whose denominator cannot see its own complement.**
"Coupons used / transactions" computed over transactions inner-joined to coupons on
``transactions.coupon_id``: every transaction counted has a coupon, since the join drops
the ones whose reference is NULL. The denominator is then only the rows the numerator
already holds, and the rate says nothing about the rows it was meant to be a share of.
That follows from SQL and the catalog alone: a division of two counts, the denominator
counting a table joined (inner, or by a WHERE equality) to the numerator's table on a
column of its own that may be NULL (declared nullable) and is no key of it. A LEFT JOIN
keeps those rows, and a NOT NULL reference drops none: neither is refused.

**Two counts, one of them tested on the rows the other's join keeps.** "Makers that
produce at least 2 models and make more than 3 cars" as one HAVING over makers, models
and the cars of each model: the inner join to the cars drops every model without a car,
so "at least 2 models" is tested on the models with cars. A statement with two counts of
columns of two tables, where a HAVING tests the count of the first and the first table's
rows are inner-joined to rows that refer to them, tests it only among the rows that have
such referring rows — an intersection of the two groupings (or a LEFT JOIN) would count
each on its own. Held to HAVING: two counts shown side by side ("patients and
treatments per month", the patients counted through their treatments) are usually
meant of the rows the join keeps; a threshold on a count is a fact about all of them.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import JoinGraph, TableInfo
from services.sql.linker import LinkError
from services.sql.verify._statement import StatementNodes, column_name, is_key


def check_restricted(tree: exp.Expr, nodes: StatementNodes, graph: JoinGraph) -> None:
    """Refuse (:class:`LinkError`) a ratio of counts whose denominator's rows are only
    those that reach the numerator's table through a nullable reference, and two counts
    of which one counts only the rows the other's join keeps."""
    if not isinstance(tree, exp.Select):
        return
    for output in tree.expressions:
        for division in output.find_all(exp.Div):
            above = _counted(nodes, division.this)
            below = _counted(nodes, division.expression)
            if above is None or below is None or above[0] == below[0]:
                continue
            reason = _restricted(nodes, below, above)
            if reason:
                raise LinkError(reason)
    _two_counts(tree, nodes, graph)


def _counted(nodes: StatementNodes, side: exp.Expr) -> tuple[str, TableInfo] | None:
    """The alias and table whose column one side's COUNT counts."""
    count = side if isinstance(side, exp.Count) else side.find(exp.Count)
    if count is None:
        return None
    inner = count.this
    if isinstance(inner, exp.Distinct) and inner.expressions:
        inner = inner.expressions[0]
    if not isinstance(inner, exp.Column) or not inner.table:
        return None
    table = nodes.table_of(inner)
    return (inner.table, table) if table is not None else None


def _restricted(
    nodes: StatementNodes, below: tuple[str, TableInfo], above: tuple[str, TableInfo]
) -> str:
    """Why the denominator's table counts only rows with a numerator row, or ''."""
    for equality in nodes.equalities:
        for mine, theirs in (
            (equality.this, equality.expression),
            (equality.expression, equality.this),
        ):
            if mine.table != below[0] or theirs.table != above[0]:
                continue
            join = equality.find_ancestor(exp.Join)
            if join is not None and join.side:
                continue  # LEFT / RIGHT / FULL: the rows without a reference stay
            name = column_name(mine)
            column = below[1].column(name)
            if column is None or not column.nullable or is_key(below[1], name):
                continue
            return (
                f"the rate's denominator counts {below[1].name} rows only where "
                f"{below[1].name}.{name} refers to a {above[1].name} row: the "
                f"{below[1].name} rows without one are left out of it"
            )
    return ""


def _two_counts(tree: exp.Select, nodes: StatementNodes, graph: JoinGraph) -> None:
    having = tree.args.get("having")
    if having is None:
        return
    counted = [c for c in (_counted(nodes, n) for n in tree.find_all(exp.Count)) if c]
    if len({alias for alias, _ in counted}) < 2:
        return
    tested = [c for c in (_counted(nodes, n) for n in having.find_all(exp.Count)) if c]
    for alias, table in dict(tested).items():
        for equality in nodes.equalities:
            for mine, theirs in (
                (equality.this, equality.expression),
                (equality.expression, equality.this),
            ):
                if mine.table != alias or not theirs.table or theirs.table == alias:
                    continue
                other = nodes.table_of(theirs)
                join = equality.find_ancestor(exp.Join)
                if other is None or (join is not None and join.side):
                    continue
                refers = any(
                    e.child == other.qualified
                    and e.parent == table.qualified
                    and e.child_columns == (column_name(theirs),)
                    and e.parent_columns == (column_name(mine),)
                    for e in graph.edges_of(table.qualified)
                )
                if refers and other.qualified != table.qualified:
                    raise LinkError(
                        f"the statement counts {table.name} only among the {table.name} rows "
                        f"that {other.name} rows refer to: its join for another count drops "
                        f"every {table.name} row without one"
                    )
