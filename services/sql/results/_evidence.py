"""The columns that chose a listing's rows, shown beside what it asks.

A listing cut from a ranking ("the heaviest car", "the 5 largest stadiums") or filtered
by a range of numbers ("songs released after 2010", "singers older than the average")
returns rows for values the question never states: the weight that made the car the
heaviest, the year each song came out. Those columns are shown beside what was asked, so
the answer carries the evidence its rows were chosen by. An equality adds nothing (each
row holds the value the question said), and a statement that groups or aggregates shows
groups, not rows, and a DISTINCT listing shows the distinct values of what it asks
(another column would split them), so none of these is touched; but a DISTINCT that
only undoes its joins' repeats lists one row per row of its first table, told apart by
its key (``keyed_distinct``), so a column of that table splits nothing and is shown:
"singers older than 30 who sang at the Auditions concert" shows the ages, as the
follow-up that narrows "singers older than 30" to that concert does.

One rule for every path that ends in a listing: the linker applies it to the statement
it composed, and a follow-up about the earlier rows ("what year is it from?" after the
heaviest car) applies it with the earlier statement's choice of rows, so it shows what
its question spelled out ("What year is the heaviest car from?") shows. Only columns are
added, of rows already returned: the rows stay the rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, is_number
from services.sql.results._labels import keyed_distinct
from services.sql.results._select import edited, is_listing, own_tables, owner
from services.sql.tree import conjuncts

_RANGES = (exp.GT, exp.GTE, exp.LT, exp.LTE)


def _numeric(column: exp.Column, tables: dict[str, TableInfo]) -> bool:
    table = owner(column, tables)
    info = table.column(column.name) if table is not None else None
    return info is not None and is_number(info.data_type)


def _position(column: exp.Column, tables: dict[str, TableInfo]) -> tuple[int, int]:
    """Where ``column`` stands: its table's place in the statement, its place there."""
    found = owner(column, tables)
    if found is None:
        return (len(tables), 0)
    names = [c.name for c in found.columns]
    table = list(tables.values()).index(found)
    return (table, names.index(column.name) if column.name in names else len(names))


def deciding_columns(select: exp.Select, catalog: Catalog) -> list[exp.Column]:
    """The columns of ``select``'s own tables that chose its rows: each number compared
    by a range (``<``, ``>``, ``<=``, ``>=``) with a value or a sub-query's value, and the
    column a ranking cut by a LIMIT is ordered by first (an output named there read as
    its column; later keys only break ties at the cut), shown or not. None for a
    statement that groups, and for a DISTINCT all but those of the table whose rows it
    lists one each of (``keyed_distinct``: "the singers older than 30 who sang at the
    Auditions concert" shows each singer's age, as the follow-up "only the ones who sang
    at the Auditions concert" after "singers older than 30" does)."""
    entity = None if is_listing(select) else keyed_distinct(select, catalog)
    if not is_listing(select) and entity is None:
        return []
    tables = own_tables(select, catalog)
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
    if entity is not None:
        # a column of another table (a concert's year) is one value per joined row
        return [c for c in found if owner(c, tables) is tables[entity]]
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
    return is_listing(select) and _append(select, columns)


def _append(select: exp.Select, columns: Sequence[exp.Column]) -> bool:
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
    # deciding_columns reads which statements may show more columns (a keyed DISTINCT too)
    return edited(sql, lambda select: _append(select, deciding_columns(select, catalog)))
