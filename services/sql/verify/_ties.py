"""The ``ties`` check: a ranking cut after N rows does not fall among equal values.

"The 3 most populated cities" ordered by a count that is 1 in every group, "the oldest
singer" where two share the greatest age: the rows kept are chosen by whatever order the
database happened to return the ties in, not by the question. So is a ranking by an
aggregate that takes one value across the whole result (every group of one row): it ties
everywhere. Such an answer is refused, saying how many rows share the cut's value.

The ranked value is the ordering's keys up to the first one that only breaks ties: a
label or key column after the first key (``ORDER BY count DESC, avg_amount DESC, name``
ranks by the count and the average; the name only decides between equals, and a cut it
decides is decided by spelling). The test is one probe: the statement ordered by the
ranked keys alone and cut with ``FETCH FIRST n ROWS WITH TIES``, counted — more than
``n`` rows means a tie at the cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import TEXT_TYPES, Catalog, table_for
from services.sql.verify._said import aliases, said


@dataclass(frozen=True)
class TiesTest:
    """The probe for one ranked statement: a count of the rows its cut would keep with
    ties, and what the message names."""

    probe: str
    limit: int
    key: str

    def refusal(self, kept: int) -> str:
        return (
            f"the ranking by {self.key} cuts among equal values: {kept} rows tie for the "
            f"first {self.limit} places, so which to give is arbitrary"
        )


def ties_test(tree: exp.Expr, catalog: Catalog) -> TiesTest | None:
    """The test of ``tree`` when it is a SELECT ordered and cut by a LIMIT (no OFFSET);
    None otherwise."""
    if not isinstance(tree, exp.Select):
        return None
    order = tree.args.get("order")
    limit = tree.args.get("limit")
    if order is None or not isinstance(limit, exp.Limit) or tree.args.get("offset"):
        return None
    count = limit.expression
    if not isinstance(count, exp.Literal) or count.is_string:
        return None
    try:
        n = int(count.this)
    except ValueError:
        return None
    keys = order.expressions
    if n < 1 or not keys:
        return None
    ranked = [keys[0]]
    for key in keys[1:]:
        if _breaks_ties(key, tree, catalog):
            break
        ranked.append(key)
    probe = tree.copy()
    probe.set("order", exp.Order(expressions=[k.copy() for k in ranked]))
    probe.set(
        "limit",
        exp.Fetch(
            direction="FIRST",
            count=exp.Literal.number(n),
            limit_options=exp.LimitOptions(rows=True, with_ties=True),
        ),
    )
    text = probe.sql(dialect="postgres")
    names = aliases(tree)
    said_keys = ", ".join(said(k.this if isinstance(k, exp.Ordered) else k, names) for k in ranked)
    return TiesTest(f"(SELECT count(*) FROM ({text}) AS tandem_ties)", n, said_keys)


def _breaks_ties(key: exp.Expr, tree: exp.Select, catalog: Catalog) -> bool:
    """A key after the first that is a bare label or key column (text, or a key of its
    table), directly or through the output name it orders by."""
    node = key.this if isinstance(key, exp.Ordered) else key
    if isinstance(node, exp.Column) and not node.table:
        shown = {e.alias: e.this for e in tree.expressions if isinstance(e, exp.Alias)}
        node = shown.get(node.name, node)
    if not isinstance(node, exp.Column):
        return False
    tables = {t.alias_or_name: t for t in tree.find_all(exp.Table)}
    owner = tables.get(node.table) if node.table else None
    if owner is None and len(tables) == 1:
        owner = next(iter(tables.values()))
    info = table_for(catalog, owner) if owner is not None else None
    column = info.column(node.name) if info is not None else None
    if info is None or column is None:
        return False
    is_key = info.primary_key == (node.name,) or (node.name,) in info.unique_keys
    return is_key or column.data_type.startswith(TEXT_TYPES)
