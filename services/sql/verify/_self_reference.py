"""A row named after the words of a reference to its own table is the row referred to.

A table that refers to itself (``employees.reports_to`` holds another employee's key)
relates two rows of one table, and the question's word order says which of them a
named value picks: in "who reports to Andrew Fuller?" the name follows the column's own
words, so Andrew Fuller is the employee ``reports_to`` points at, and the rows asked are
the ones pointing at him. A statement that filters the rows it answers with by that name
(``WHERE first_name = 'Andrew' AND last_name = 'Fuller'`` on the rows listed, or shown
through their ``reports_to``) answers another question: "whom does Andrew Fuller report
to", or Fuller himself. It reads like an answer and is wrong, so it is refused, naming
the reference. Held only where the value is compared on the outer query's own alias
and that alias is not the referred-to side of a join through the reference
(``e.reports_to = m.employee_id`` with the name on ``m`` is the right reading). The
reference is any single-column reference from a table to itself, declared or among the
catalog's read joins; its words are its column's name, each part matched by its stem ("report"
in "reports to", "report to"). Both are read as the linker's ``_self_join`` reads them,
which says such a question through the table joined to itself.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError, said_after, self_references
from services.sql.verify._statement import StatementNodes, column_name


def check_named_through_self_reference(
    ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes
) -> None:
    """Refuse (:class:`LinkError`) a value said after a self-reference's words but
    compared on the rows answered (see the module's docstring)."""
    if not isinstance(tree, exp.Select):
        return
    for ref in self_references(ctx.catalog):
        table, child, parent = ref.table, ref.child, ref.parent
        after = said_after(ctx.low, child)
        if not after:
            continue
        for alias, value in _outer_values(tree, nodes, table):
            if not any(a.startswith(value.lower()) for a in after):
                continue
            if _referred_side(nodes, table, alias, child, parent):
                continue
            name = table.rsplit(".", 1)[-1]
            raise LinkError(
                f"'{value}' follows the words of {name}.{child}, so it names the row {child} "
                "refers to; the statement filters the rows it answers with by it instead"
            )


def _outer_values(tree: exp.Select, nodes: StatementNodes, table: str) -> list[tuple[str, str]]:
    """(alias, string) of each ``column = 'string'`` of the outer SELECT's
    WHERE on a column of ``table``."""
    where = tree.args.get("where")
    if where is None:
        return []
    found: list[tuple[str, str]] = []
    for eq in where.find_all(exp.EQ):
        if eq.find_ancestor(exp.Select) is not tree:
            continue
        for col, lit in ((eq.this, eq.expression), (eq.expression, eq.this)):
            if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal)):
                continue
            if not lit.is_string or not col.table:
                continue
            owner = nodes.table_of(col)
            if owner is not None and owner.qualified == table and lit.this.strip():
                found.append((col.table, lit.this.strip()))
    return found


def _referred_side(
    nodes: StatementNodes, table: str, alias: str, child_column: str, parent_column: str
) -> bool:
    """Whether ``alias`` is joined as the row another alias of ``table`` refers to
    (``other.child_column = alias.parent_column``)."""
    for eq in nodes.equalities:
        left, right = eq.this, eq.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        for mine, other in ((left, right), (right, left)):
            if mine.table != alias or other.table == alias:
                continue
            owner = nodes.table_of(other)
            if owner is None or owner.qualified != table:
                continue
            if column_name(mine) == parent_column and column_name(other) == child_column:
                return True
    return False
