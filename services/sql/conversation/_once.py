"""Codes of the earlier rows, each listed once.

"which destinations did they go to?" after "how many flights from JFK were flown by
planes with more than 300 seats?" lists a column of those flights that refers to another
table's key (``flights.dest`` → ``airports.faa``): what is asked for is the airports, and
a listing that shows nothing else of the flights (no key, no label of theirs) cannot tell
one flight's row from another's, so a code repeated once per flight is a duplicate that
only inflates the answer (117 rows where 10 destinations were flown to). Such a listing
is ``SELECT DISTINCT``. A listing that shows any other column of the rows (their names,
their altitudes, a key) keeps one row per earlier row: its rows are told apart.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for
from services.sql.conversation._statement import parse, sources


def _code_columns(table: TableInfo, catalog: Catalog) -> set[str]:
    """The table's columns that refer to another table's key: declared keys, then the
    joins the catalog inferred from the data (a warehouse that declares none)."""
    codes = {c for fk in table.foreign_keys for c in fk.columns}
    for join in catalog.joins or ():
        if join.child == table.qualified:
            codes.update(join.child_columns)
    return codes - set(table.primary_key)


def listed_once(sql: str, catalog: Catalog) -> str:
    """``sql`` as ``SELECT DISTINCT`` where it lists, from its first table, only columns
    that refer to other tables' keys (no aggregate, no grouping); else ``sql`` unchanged."""
    tree = parse(sql)
    if (
        not isinstance(tree, exp.Select)
        or tree.args.get("distinct")
        or tree.args.get("group")
        or any(e.find(exp.AggFunc) is not None for e in tree.expressions)
    ):
        return sql
    read = sources(tree)
    if not read:
        return sql
    first = read[0]
    table = table_for(catalog, first)
    if table is None:
        return sql
    codes = _code_columns(table, catalog)
    shown = [e.unalias() for e in tree.expressions]
    if not shown or not all(
        isinstance(c, exp.Column) and c.table == first.alias_or_name and c.name in codes
        for c in shown
    ):
        return sql
    tree.set("distinct", exp.Distinct())
    return tree.sql(dialect="postgres")
