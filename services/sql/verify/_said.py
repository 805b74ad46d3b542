"""A part of a statement said for a person: its columns named by their tables, not by
the aliases the statement gave them (``singer.age > 30``, not ``t0.age > 30``)."""

from __future__ import annotations

from sqlglot import exp


def aliases(tree: exp.Expr) -> dict[str, str]:
    """Each alias of ``tree``'s tables (every scope) and the table's own name; an alias
    given to two tables is left out."""
    found: dict[str, str] = {}
    clashes: set[str] = set()
    for table in tree.find_all(exp.Table):
        alias = table.alias_or_name
        if alias in found and found[alias] != table.name:
            clashes.add(alias)
        found[alias] = table.name
    return {a: n for a, n in found.items() if a not in clashes}


def said(node: exp.Expr, names: dict[str, str]) -> str:
    """``node`` as SQL text with table aliases replaced by table names."""
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        name = names.get(column.table)
        if column.table and name:
            column.set("table", exp.to_identifier(name))
    return copy.sql(dialect="postgres")
