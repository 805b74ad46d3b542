"""What the words of a grouping ("each X", "per X") name through a key column: a column a
reference names better than the table's own abbreviated column ("each destination
airport" is ``flights.dest``, which holds airports' keys, not ``airports.dst``, daylight
saving, whose name only shares the letters of "destination" and wins on the table word
"airport" alone), or the rows of the table a key column points at, where the words name
the column only by naming that table ("each customer placed", "per shipper of orders").
Both readers take this one step (``grouped_rows``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from services.sql.catalog import TableInfo
from services.sql.linker._context import LinkContext
from services.sql.linker._vocabulary import Col

# At most this the words name a column only by abbreviation (letters picked in order,
# ``dst`` of "destination"); ``word_match`` gives a whole prefix ("dest") 0.85.
ABBREVIATED = 0.8


def holds_keys_of(ctx: LinkContext, col: Col, table: str) -> bool:
    """Whether ``col`` holds keys of ``table`` (a declared or inferred key edge)."""
    return any(
        e.child == col.table.qualified and e.parent == table and col.column.name in e.child_columns
        for e in ctx.graph.edges_of(col.table.qualified)
    )


def reference_named(ctx: LinkContext, words: Sequence[str], col: Col) -> Col:
    """The one column of another table that holds keys of ``col``'s table and that the
    words other than the table's name say better than they say ``col``; ``col`` itself
    when its name is said as well as an abbreviation can be, or no such column (or more
    than one) exists. The table word then says what the reference points at."""
    vocab = ctx.vocab
    table_words = [w for w in words if vocab.table_score([w], col.table) > 0]
    rest = [w for w in words if w not in table_words]
    if not table_words or not rest:
        return col
    own = vocab.column_score(rest, col)
    if own > ABBREVIATED:
        return col
    better = [
        (score, c)
        for c in vocab.columns
        if c.table.qualified != col.table.qualified
        and holds_keys_of(ctx, c, col.table.qualified)
        and (score := vocab.column_score(rest, c)) > own
    ]
    if not better:
        return col
    top = max(s for s, _ in better)
    best = [c for s, c in better if abs(s - top) < 1e-9]
    return best[0] if len(best) == 1 else col


def is_own_key(col: Col) -> bool:
    """Whether ``col`` is the whole primary key of its own table."""
    return tuple(col.table.primary_key) == (col.column.name,)


def names_only_its_target(
    ctx: LinkContext, words: Sequence[str], col: Col, table: TableInfo
) -> bool:
    """Whether the words name ``col`` only by naming the table it holds keys of ("each
    customer placed": ``orders.customer_id`` holds customers' keys, and "customer" is all
    the words say of it). The grouping is then the rows of that table, shown by their
    labels, as "each customer" alone is read: the key column is only the way to them.

    Without this the reading rested on how much of the column's name the table word
    covers, which is weighed against every other column name of the database: adding
    three tables with ``_id`` columns lowered the weight of ``id``, raised
    ``customer_id``'s score past the lookup's threshold, and "How many orders has each
    customer placed? Give the company name" lost its customers (grouped by the bare key,
    the company name no longer reached).

    The table's own key is named the same way: "each employee sell to" (the words up to
    a year, "… sell to in 1998") names ``employees.employee_id`` by "employee" alone, the
    verb naming nothing of it; the grouping is the employees shown by their labels, as
    "each employee" is, not the bare key (which only the words "employee id" ask for).
    Any other column of the named table is never replaced ("each customer city")."""
    own_key = col.table.qualified == table.qualified and is_own_key(col)
    if not own_key and (
        col.table.qualified == table.qualified or not holds_keys_of(ctx, col, table.qualified)
    ):
        return False
    rest = [w for w in words if ctx.vocab.table_score([w], table) <= 0]
    return len(rest) < len(words) and (not rest or ctx.vocab.column_score(rest, col) == 0)


def grouped_rows(
    ctx: LinkContext, words: Sequence[str], col: Col, rows: Collection[str]
) -> Col | TableInfo:
    """What a grouping's ``words`` group by, given ``col``, the column found for them, and
    ``rows``, the tables whose rows are measured (qualified names): the reference the
    words name better (``reference_named``); else the rows of a table the words name
    whole that the column holds keys of, where they name the column only by naming that
    table (``names_only_its_target``); else ``col``.

    "shipper of orders" names ``orders.shipper_id`` with its own table's word, the
    measured orders, and "shipper" is all it says of the column: the shippers, shown by
    their labels, as "per shipper" alone is read, not the bare key. A word naming the
    column's own table where that table is not the measured rows' ("the quantity sold
    for each product category", order lines measured) says the way to the target runs
    through it: the grouping is the column of that table the words name, as read before
    (the verifier asks that table's word to be grouped). A table's own key is not such a
    way through: "each employee sell to" names the employees themselves.

    One step for both readers: the list reader (``_shape.link_groups``) and the clause
    reader (``clauses._planning``) read "each X" the same way."""
    col = reference_named(ctx, words, col)
    if (
        not is_own_key(col)
        and col.table.qualified not in rows
        and any(ctx.vocab.table_score([w], col.table) > 0 for w in words)
    ):
        return col
    hits = [
        table
        for table, _ in ctx.vocab.tables_named(words)
        if names_only_its_target(ctx, words, col, table)
    ]
    return hits[0] if len(hits) == 1 else col
