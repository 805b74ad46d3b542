"""A table named by a word that a column of the rows read is named by too, which those
rows refer to and the answer uses for nothing: no restriction of theirs.

A table a question names but uses for nothing (no column shown, compared, grouped or
ordered) is read as a restriction: the rows that have a row there ("customers who made
a purchase" joins the purchases; "flights operated by airlines" the airlines). In
"What is the average freight of the orders shipped to Germany, per employee?" the word
"shipped" names ``shippers`` and, as well, a column of the orders' own (northwind's
``ship_name``: the orders keep where each was shipped); the orders each refer to their
one shipper, and the answer reads their ``ship_country``. Joined, ``shippers`` kept the orders whose shipper is set, which no
word asked: the word is said of the orders' columns, not of another table. Only where
every word naming the table names a column of a table the answer uses as well, and
only a table those rows refer to by its whole key (at most one row each): a table whose
rows refer to the ones read (purchases of a customer) restricts them, and so does one
named by words no used column holds.
"""

from __future__ import annotations

from services.sql.catalog import JoinGraph, TableInfo
from services.sql.linker.clauses._reading import Reading


def said_of_columns(reading: Reading, used: set[str], table: TableInfo) -> bool:
    """Whether ``table`` is named only by words that name a column of a ``used`` table
    too, and a ``used`` table refers to its rows by their whole key."""
    references = _references_to(reading.ctx.graph, used, table)
    if not references:
        return False
    named = [m for m in reading.chart.mentions if m.kind == "table" and m.table is table]
    return bool(named) and all(
        any(
            c.kind == "column"
            and c.col is not None
            and c.col.table.qualified in used
            # the reference itself (``bike_id`` for "bikes") is the table's name again
            and (c.col.table.qualified, c.col.column.name.lower()) not in references
            and c.start <= m.start < c.end
            for c in reading.chart.mentions
        )
        for m in named
    )


def _references_to(graph: JoinGraph, used: set[str], table: TableInfo) -> set[tuple[str, str]]:
    """The columns by which a ``used`` table refers to ``table``'s rows by their whole
    key (declared or inferred: each row read has at most one row there), as (table,
    column); none where no used table does."""
    key = {k.lower() for k in table.primary_key}
    return {
        (e.child, c.lower())
        for e in graph.edges_of(table.qualified)
        if key
        and e.parent == table.qualified
        and e.child in used
        and e.child != table.qualified
        and {p.lower() for p in e.parent_columns} == key
        for c in e.child_columns
    }
