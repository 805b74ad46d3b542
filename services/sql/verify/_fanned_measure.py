"""A sum or average of a table's column taken over a join to rows that refer to it:
"What is the total freight charged on all orders?" answered as ``SUM(orders.freight)``
over ``orders`` joined to ``order_details`` adds each order's freight once per line of
the order.

Joining a table to one whose rows refer to it (the child of a key, many rows per parent
row) repeats each parent row once per referring row. A ``COUNT(*)`` over such a join is
refused by the outputs check; a ``SUM`` or ``AVG`` of the parent's own column is wrong
the same way (a sum multiplied, an average weighted by the number of referring rows)
whatever the question's words, since it follows from the keys alone. Refused only where
the statement groups by nothing or by the parent's own columns: grouped by a column of
the referring table or of a table reached through it, each group is a set of events
("the average age of the singers who performed at each stadium" is one age per
performance, as a user and Spider's gold read it). It stands too where the aggregate is
over DISTINCT values, where the referring columns are the whole key of the referring
table (one row per parent row: no repetition), and where the referring table is a bridge
to another table the statement reads ("the average weight of the pets of students over
20" through ``has_pet``): only a referring table that leads nowhere else is refused, its
join then adds nothing but the repetition."""

from __future__ import annotations

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._statement import StatementNodes, column_name, is_key, joined_to


def check_fanned_measure(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse (:class:`LinkError`) a SUM or AVG of one table's column in a SELECT that
    inner-joins that table to a table whose rows refer to it."""
    if not isinstance(tree, exp.Select) or ctx.applied or ctx.instructions.strip():
        return
    joins = tree.args.get("joins") or []
    if not joins:
        return
    aliases = {a: t for (select, a), t in nodes.scoped.items() if select == id(tree)}
    if not aliases:
        return
    conditions = [j.args["on"] for j in joins if j.args.get("on") is not None]
    group = tree.args.get("group")
    grouped = {c.table for c in group.find_all(exp.Column)} if group is not None else set()
    for agg in _measures(tree):
        if isinstance(agg.this, exp.Distinct):
            continue
        owners = {c.table for c in agg.find_all(exp.Column)}
        if len(owners) != 1:
            continue
        alias = next(iter(owners))
        table = aliases.get(alias)
        if table is None or grouped - {alias}:
            continue  # grouped by rows reached through the join: a measure per event
        for mine, other in joined_to(alias, conditions):
            child = aliases.get(other.table)
            if child is None:
                continue
            if _refers_to(ctx, table.qualified, column_name(mine), child.qualified, other):
                if is_key(child, column_name(other)):
                    continue  # one referring row per row: nothing repeats
                if any(o.table != alias for _, o in joined_to(other.table, conditions)):
                    continue  # a bridge to another table read: rows related through it
                word = "sum" if isinstance(agg, exp.Sum) else "average"
                raise LinkError(
                    f"the statement takes the {word} of {table.name}'s "
                    f"{column_name(agg.find(exp.Column) or mine)} joined to {child.name}, "
                    f"whose rows refer to them: each {table.name} row is counted once per "
                    f"{child.name} row"
                )


def _measures(tree: exp.Select) -> list[exp.Sum | exp.Avg]:
    """The SUMs and AVGs the SELECT itself computes (not those of its subqueries)."""
    found: list[exp.Sum | exp.Avg] = []
    for agg in tree.find_all(exp.Sum, exp.Avg):
        if isinstance(agg, (exp.Sum, exp.Avg)) and agg.find_ancestor(exp.Select) is tree:
            found.append(agg)
    return found


def _refers_to(
    ctx: LinkContext, parent: str, parent_column: str, child: str, child_col: exp.Column
) -> bool:
    """Whether an edge of the join graph says ``child.child_col`` holds values of
    ``parent.parent_column`` (a declared or inferred key of the parent)."""
    name = column_name(child_col)
    return any(
        edge.parent == parent
        and edge.child == child
        and edge.parent_columns == (parent_column,)
        and edge.child_columns == (name,)
        for edge in ctx.graph.edges_of(parent)
    )
