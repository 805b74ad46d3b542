"""A principal's stored values: the values of a filtered table that their own rows hold.

The catalog reads each text column's values once per load, over every row. A principal's
catalog (:func:`~services.sql.access._view.restricted`) drops them from every table a row
filter polices: they are other people's values too, and a value linked, suggested ("nearest:
'Germany'?") or checked from them would tell a principal that a row hidden from them holds
it. Without any, though, a principal's question names no value of such a table at all
("How many companies are in Germany?" reads as a word nothing holds, even for the person
whose rows hold it).

So per catalog load and per filter as substituted (one read for everyone of a region, not
one per person) the values are read again through the principal's own view: one statement
per filtered table, gated and run as the principal (their filter written into it, their
role), and only values the full catalog stored are kept. In role mode a table under the
warehouse's own row-level security is read the same way, as the role (the login role's
values of it are not the role's). The service key's path never
comes here. A read that fails or is refused leaves the table without values: no evidence,
never other people's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from sqlglot import exp

from services.sql.access._view import DERIVED_KEY, View
from services.sql.catalog import TEXT_TYPES, Catalog, TableInfo

_log = logging.getLogger("tandem.sql.access")

# (statement, most rows it may return) -> its rows as (column index, value), None when it
# could not run: the engine runs it through the gate and the runner as the principal.
ValueReader = Callable[[str, int], Awaitable[list[tuple[int, str]] | None]]


def values_statement(table: TableInfo, full: TableInfo) -> tuple[str, tuple[str, ...], int] | None:
    """``SELECT <i>, CAST(<column> AS TEXT) FROM <table> UNION …``: every stored value of
    ``table``'s text columns (as ``full``, the full catalog's table, stored them), with the
    columns in index order and the most rows it can return; None when none stores any."""
    columns: list[str] = []
    cap = 0
    for column in table.columns:
        stored = full.column(column.name)
        if stored is None or not column.data_type.startswith(TEXT_TYPES):
            continue
        count = len({*stored.sample_values, *stored.known_values})
        if count:
            columns.append(column.name)
            cap += count
    if not columns:
        return None
    name = exp.table_(table.name, db=table.schema, quoted=True).sql(dialect="postgres")
    branches = [
        f"SELECT {i} AS c, CAST({exp.column(c, quoted=True).sql(dialect='postgres')} AS TEXT)"
        f" AS v FROM {name}"
        for i, c in enumerate(columns)
    ]
    # UNION (not ALL): each column's distinct values once; one more row than stored tells
    # nothing new (the values kept are the stored ones), so the cap is theirs plus one.
    return " UNION ".join(branches), tuple(columns), cap + 1


async def with_visible_values(
    restricted_catalog: Catalog, full: Catalog, view: View, read: ValueReader
) -> tuple[Catalog, bool]:
    """``restricted_catalog`` (the view's, without filtered tables' values) with each
    filtered table's stored values that the view's rows hold (see the module docstring),
    and whether every read ran (a catalog missing some is not kept for the load)."""
    complete = True
    tables: list[TableInfo] = []
    for table in restricted_catalog.tables:
        condition = view.filters.get(table.qualified)
        original = full.table(table.qualified)
        statement = values_statement(table, original) if original is not None else None
        per_principal = isinstance(condition, exp.Expr) or table.qualified in view.secured
        if not per_principal or statement is None:
            tables.append(table)  # the same rows for all, or reading it is refused anyway
            continue
        assert original is not None
        text, columns, cap = statement
        rows = await read(text, cap)
        if rows is None:
            _log.info("a principal's stored values could not be read; the table has none")
            complete = False
            tables.append(table)
            continue
        seen: dict[str, set[str]] = {}
        for index, value in rows:
            if 0 <= index < len(columns):
                seen.setdefault(columns[index], set()).add(value)
        kept = []
        for column in table.columns:
            stored = original.column(column.name)
            held = seen.get(column.name)
            if stored is None or not held:
                kept.append(column)
                continue
            kept.append(
                replace(
                    column,
                    sample_values=tuple(v for v in stored.sample_values if v in held),
                    known_values=tuple(v for v in stored.known_values if v in held),
                )
            )
        tables.append(replace(table, columns=tuple(kept)))
    result = Catalog(
        restricted_catalog.database,
        tuple(tables),
        restricted_catalog.refreshed_at,
        restricted_catalog.joins,
        access_view=view.values_key,
    )
    result.derived[DERIVED_KEY] = restricted_catalog.derived[DERIVED_KEY]
    return result, complete
