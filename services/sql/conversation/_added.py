"""A value swap that swaps nothing: the new value is another filter.

"and for Virgin America?" after "the average air time of flights from JFK to SFO, only
the evening departures": no column the statement compares stores the new value, and the
column that does (``airlines.name``) is compared by no condition of the statement, so
the words name one more condition on the same rows, not a replacement. Before, the
router's rewrite put the value in place of an unrelated word ("evening") and the turn
was refused.

Where the new value could stand in for one the statement already compares, adding it
would answer a question nobody asked (ford's models *and* Germany's: none), so it is
not added: a value of the same table as a compared one or of the table a compared
column refers to (another airport after "from JFK"), a value reached through a table
whose row the statement already picked by a value (the country of the maker said), or
through the very column a condition compares.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import (
    Catalog,
    JoinGraph,
    TableInfo,
    comparisons,
    stored_spelling,
    table_for,
)
from services.sql.conversation._conditions import Linked
from services.sql.conversation._statement import aliased, parse, sources


def adds_a_value(sql: str, linked: Linked, catalog: Catalog) -> bool:
    """Whether ``linked`` (the swap's words read as a condition) is a stored value of a
    column the statement ``sql`` does not compare, on rows no compared value picks."""
    if linked.having or not linked.conditions:
        return False
    select = parse(sql)
    tables = aliased(select, catalog, nested=True)
    for join in linked.joins:
        if isinstance(join.this, exp.Table) and (info := table_for(catalog, join.this)):
            tables[join.this.alias_or_name.lower()] = info
    roots = sources(select)
    root = roots[0].alias_or_name.lower() if roots else ""
    new: list[tuple[str, TableInfo, str]] = []
    for condition in linked.conditions:
        said = _string_equality(condition)
        if said is None:
            return False
        (alias, column), value = said
        table = tables.get(alias)
        if table is None or stored_spelling(table, column, value) is None:
            return False
        new.append((alias, table, column))
    through = {
        (c.table.lower(), c.name.lower())
        for join in linked.joins
        for c in (join.args.get("on") or exp.true()).find_all(exp.Column)
    }
    refers = {
        (e.child, e.child_columns[0].lower()): e.parent
        for e in JoinGraph(catalog).edges
        if e.kind != "overlap" and len(e.child_columns) == 1
    }

    def kind(table: TableInfo, column: str) -> set[str]:
        """The table ``table.column`` refers to (an airport code's ``airports``), if any."""
        parent = refers.get((table.qualified, column.lower()))
        return set() if parent is None else {parent}

    for item in comparisons(select, catalog):
        if not (item.literal.is_string and item.equality):
            continue
        compared = _column_of(item.literal)
        if compared is None:
            return False
        alias = compared.table.lower()
        if (alias, compared.name.lower()) in through:
            return False  # the join goes through the very column compared
        if alias != root and any(a == alias for a, _ in through):
            return False  # the row joined through is one the statement picked by a value
        owner = tables.get(alias)
        if owner is None:
            return False
        for _, table, column in new:
            if owner.qualified == table.qualified or kind(owner, compared.name) & (
                {table.qualified} | kind(table, column)
            ):
                return False  # a value of the kind already compared: a swap, not a filter
    return True


def _column_of(literal: exp.Literal) -> exp.Column | None:
    compared = literal.parent
    if isinstance(compared, exp.Tuple):
        compared = compared.parent
    column = compared.this if compared is not None else None
    while isinstance(column, exp.Func) and not isinstance(column, exp.Column):
        column = column.this
    return column if isinstance(column, exp.Column) else None


def _string_equality(condition: exp.Expr) -> tuple[tuple[str, str], str] | None:
    """((alias, column), value) of a ``column = 'text'`` condition."""
    while isinstance(condition, exp.Paren):
        condition = condition.this
    if not isinstance(condition, exp.EQ):
        return None
    left, right = condition.this, condition.expression
    if isinstance(left, exp.Literal):
        left, right = right, left
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
        return (left.table.lower(), left.name), right.this
    return None
