"""What the data checks read from a statement, gathered in one walk of its tree: the
tables by the aliases the statement gives them, its string literals and its equalities
between two columns. A statement is walked once however many checks read it.

An alias names a table within its own SELECT: a sub-query may give ``t0`` to another
table than the outer query does (a follow-up nests the earlier statement, both written
by one linker). A column is therefore read against the aliases of the SELECT it stands
in, then of the SELECTs around it (a correlated reference), never one map for all."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for
from services.sql.tree import conjuncts

__all__ = [
    "StatementNodes",
    "column_name",
    "conjuncts",
    "is_key",
    "joined_to",
    "ranking_key",
    "read_statement",
]


def column_name(column: exp.Column) -> str:
    """The column's name as Postgres reads it: folded to lower case unless quoted
    (``c.sbCustId`` is ``sbcustid``)."""
    identifier = column.this
    quoted = isinstance(identifier, exp.Identifier) and identifier.quoted
    return column.name if quoted else column.name.lower()


def ranking_key(tree: exp.Select) -> exp.Expr | None:
    """The expression a SELECT ranks by first: its first ORDER BY key, an output's alias
    read as the output it names; None when it is not ordered."""
    order = tree.args.get("order")
    if order is None or not order.expressions:
        return None
    key: exp.Expr = order.expressions[0].this
    named = {o.alias: o.this for o in tree.expressions if isinstance(o, exp.Alias)}
    if isinstance(key, exp.Column) and not key.table and key.name in named:
        key = named[key.name]
    return key


def joined_to(alias: str, conditions: list[exp.Expr]) -> list[tuple[exp.Column, exp.Column]]:
    """Each column equality of the join ``conditions`` that ties ``alias`` to another
    alias, as (its own column, the other's); equalities within one alias are left out."""
    pairs: list[tuple[exp.Column, exp.Column]] = []
    for on in conditions:
        for eq in on.find_all(exp.EQ):
            left, right = eq.this, eq.expression
            if not isinstance(left, exp.Column) or not isinstance(right, exp.Column):
                continue
            mine, other = (left, right) if left.table == alias else (right, left)
            if mine.table == alias and other.table != alias:
                pairs.append((mine, other))
    return pairs


def is_key(table: TableInfo, column: str) -> bool:
    """The column is a key of its table by itself (primary, or unique)."""
    return table.primary_key == (column,) or (column,) in table.unique_keys


@dataclass
class StatementNodes:
    """The parts of one statement the checks read."""

    tree: exp.Expr
    tables: dict[str, TableInfo] = field(default_factory=dict)  # by alias (and by name)
    literals: list[exp.Literal] = field(default_factory=list)  # string literals only
    equalities: list[exp.EQ] = field(default_factory=list)  # column = column
    # by (id of the SELECT the table is read in, alias): what ``table_of`` reads first
    scoped: dict[tuple[int, str], TableInfo] = field(default_factory=dict)

    def table_of(self, column: exp.Column) -> TableInfo | None:
        """The table a qualified column's alias names where the column stands: the
        innermost SELECT that gives the alias, else the statement-wide map."""
        alias = column.table
        if not alias:
            return None
        select = column.find_ancestor(exp.Select)
        while select is not None:
            found = self.scoped.get((id(select), alias))
            if found is not None:
                return found
            select = select.find_ancestor(exp.Select)
        return self.tables.get(alias)

    def owner(self, column: exp.Column) -> TableInfo | None:
        """The table a column belongs to: by its qualifier, else the one table of the
        statement holding a column of that name."""
        if column.table:
            return self.table_of(column)
        name = column_name(column)
        holders = {t.qualified: t for t in self.tables.values() if t.column(name)}
        return next(iter(holders.values())) if len(holders) == 1 else None


def read_statement(tree: exp.Expr, catalog: Catalog) -> StatementNodes:
    """The statement's tables, string literals and column equalities, in one walk."""
    nodes = StatementNodes(tree)
    for node in tree.walk():
        if isinstance(node, exp.Table):
            info = table_for(catalog, node)
            if info is not None:
                nodes.tables[node.alias_or_name] = info
                nodes.tables.setdefault(node.name, info)
                select = node.find_ancestor(exp.Select)
                if select is not None:
                    nodes.scoped[(id(select), node.alias_or_name)] = info
                    nodes.scoped.setdefault((id(select), node.name), info)
        elif isinstance(node, exp.Literal) and node.is_string:
            nodes.literals.append(node)
        elif (
            isinstance(node, exp.EQ)
            and isinstance(node.this, exp.Column)
            and isinstance(node.expression, exp.Column)
        ):
            nodes.equalities.append(node)
    return nodes
