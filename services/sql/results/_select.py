"""What the result rules (``_evidence``, ``_labels``) read from a statement, and the one
way they rewrite it.

Both rules read a listing's own tables (FROM and JOINs, not its sub-queries') by alias,
the table a shown column belongs to, and whether the statement is a listing at all; both
add columns to the statement's text. They read and edit it here, the same way."""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for


def own_tables(select: exp.Select, catalog: Catalog) -> dict[str, TableInfo]:
    """The statement's own tables (FROM and JOINs, not its sub-queries') by alias."""
    read = [select.args.get("from_"), *(select.args.get("joins") or [])]
    found: dict[str, TableInfo] = {}
    for source in read:
        table = source.this if source is not None else None
        if isinstance(table, exp.Table) and (info := table_for(catalog, table)) is not None:
            found[table.alias_or_name.lower()] = info
    return found


def owner(column: exp.Column, tables: dict[str, TableInfo]) -> TableInfo | None:
    """The table ``column`` belongs to: by its qualifier, else the one table holding a
    column of that name (None when several or none do)."""
    if column.table:
        return tables.get(column.table.lower())
    owners = [t for t in tables.values() if t.column(column.name) is not None]
    return owners[0] if len(owners) == 1 else None


def is_listing(select: exp.Select) -> bool:
    """A listing of rows, each one row chosen: no groups, no aggregates, and no DISTINCT
    (whose rows are the distinct values it shows: another column would split them)."""
    return (
        isinstance(select, exp.Select)
        and not select.args.get("distinct")
        and not select.args.get("group")
        and all(e.find(exp.AggFunc) is None for e in select.expressions)
    )


def edited(sql: str, edit: Callable[[exp.Select], bool]) -> str:
    """``sql`` after ``edit`` changed its SELECT in place; the text unchanged when it is
    no single SELECT, does not parse, or ``edit`` says it changed nothing."""
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return sql
    if not isinstance(tree, exp.Select) or not edit(tree):
        return sql
    return tree.sql(dialect="postgres")
