"""The columns that chose a listing's rows, shown beside what it asks.

A listing cut from a ranking ("the heaviest car", "the 5 largest stadiums") or filtered
by a range of numbers ("songs released after 2010", "singers older than the average")
returns rows for values the question never states: the weight that made the car the
heaviest, the year each song came out. Those columns are shown beside what was asked, so
the answer carries the evidence its rows were chosen by. An equality adds nothing (each
row holds the value the question said), and a statement that groups or aggregates shows
groups, not rows, and a DISTINCT listing shows the distinct values of what it asks
(another column would split them), so none of these is touched.

One rule for every path that ends in a listing: the linker applies it to the statement
it composed, and a follow-up about the earlier rows ("what year is it from?" after the
heaviest car) applies it with the earlier statement's choice of rows, so it shows what
its question spelled out ("What year is the heaviest car from?") shows. Only columns are
added, of rows already returned: the rows stay the rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, is_number, table_for
from services.sql.tree import conjuncts

_RANGES = (exp.GT, exp.GTE, exp.LT, exp.LTE)


def _tables(select: exp.Select, catalog: Catalog) -> dict[str, TableInfo]:
    """The statement's own tables (FROM and JOINs, not its sub-queries') by alias."""
    read = [select.args.get("from_"), *(select.args.get("joins") or [])]
    found: dict[str, TableInfo] = {}
    for source in read:
        table = source.this if source is not None else None
        if isinstance(table, exp.Table) and (info := table_for(catalog, table)) is not None:
            found[table.alias_or_name.lower()] = info
    return found


def _owner(column: exp.Column, tables: dict[str, TableInfo]) -> TableInfo | None:
    if column.table:
        return tables.get(column.table.lower())
    owners = [t for t in tables.values() if t.column(column.name) is not None]
    return owners[0] if len(owners) == 1 else None


def _numeric(column: exp.Column, tables: dict[str, TableInfo]) -> bool:
    owner = _owner(column, tables)
    info = owner.column(column.name) if owner is not None else None
    return info is not None and is_number(info.data_type)


def _position(column: exp.Column, tables: dict[str, TableInfo]) -> tuple[int, int]:
    """Where ``column`` stands: its table's place in the statement, its place there."""
    owner = _owner(column, tables)
    if owner is None:
        return (len(tables), 0)
    names = [c.name for c in owner.columns]
    table = list(tables.values()).index(owner)
    return (table, names.index(column.name) if column.name in names else len(names))


def _listing(select: exp.Select) -> bool:
    """A listing of rows, each one row chosen: no groups, no aggregates, and no DISTINCT
    (whose rows are the distinct values it shows: another column would split them)."""
    return (
        isinstance(select, exp.Select)
        and not select.args.get("distinct")
        and not select.args.get("group")
        and all(e.find(exp.AggFunc) is None for e in select.expressions)
    )


def deciding_columns(select: exp.Select, catalog: Catalog) -> list[exp.Column]:
    """The columns of ``select``'s own tables that chose its rows: each number compared
    by a range (``<``, ``>``, ``<=``, ``>=``) with a value or a sub-query's value, and the
    column a ranking cut by a LIMIT is ordered by first (an output named there read as
    its column; later keys only break ties at the cut), shown or not. None for a
    statement that groups or drops duplicates."""
    if not _listing(select):
        return []
    tables = _tables(select, catalog)
    found: list[exp.Column] = []
    where = select.args.get("where")
    for part in conjuncts(where.this) if where is not None else []:
        if not isinstance(part, _RANGES):
            continue
        for column, other in ((part.this, part.expression), (part.expression, part.this)):
            if not isinstance(column, exp.Column) or not _numeric(column, tables):
                continue
            if isinstance(other, exp.Subquery) or other.find(exp.Column) is None:
                found.append(column)
                break
    # in the tables' own order, not the conditions' (which follows the words: "after
    # 2009 with more than 16 staff" and "with more than 16 staff after 2009" show alike)
    found.sort(key=lambda c: _position(c, tables))
    order = select.args.get("order")
    if select.args.get("limit") is not None and order is not None:
        named = {e.alias.lower(): e.unalias() for e in select.expressions if e.alias}
        column = order.expressions[0].this  # the rest break ties at the cut
        if isinstance(column, exp.Column) and not column.table:
            column = named.get(column.name.lower(), column)
        if isinstance(column, exp.Column):
            found.append(column)
    return found


def _shown(select: exp.Select) -> set[tuple[str, str]]:
    shown: set[tuple[str, str]] = set()
    for projection in select.expressions:
        column = projection.unalias()
        if isinstance(column, exp.Column):
            shown.add((column.table.lower(), column.name.lower()))
        shown.add(("", projection.alias_or_name.lower()))
    return shown


def show_deciding(select: exp.Select, columns: Sequence[exp.Column]) -> bool:
    """``select`` (a listing) showing each of ``columns`` it does not show yet, after what
    it shows; whether any was added. In place."""
    if not _listing(select):
        return False
    shown = _shown(select)
    added = False
    for column in columns:
        if (column.table.lower(), column.name.lower()) in shown or (
            "",
            column.name.lower(),
        ) in shown:
            continue
        select.set("expressions", [*select.expressions, exp.alias_(column.copy(), column.name)])
        shown = _shown(select)
        added = True
    return added


def with_deciding(sql: str, catalog: Catalog) -> str:
    """``sql`` showing the columns that chose its rows (unchanged text when it shows them
    already, or is no listing)."""
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return sql
    if not isinstance(tree, exp.Select):
        return sql
    if not show_deciding(tree, deciding_columns(tree, catalog)):
        return sql
    return tree.sql(dialect="postgres")
