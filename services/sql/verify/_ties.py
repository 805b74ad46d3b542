"""The ``ties`` check: a ranking cut after N rows ranks by something.

"The 3 most populated cities" ordered by a count that is 1 in every group ranks nothing:
every row ties, and the rows kept are whichever the database returned first. Such a
ranking by a value the same for every row of the result — the degenerate ranking of an
aggregate over groups of one row, or of a column the rows share — is refused: the
statement read the question wrongly.

A cut that falls among some equal values is the data's, not a misreading ("the top 3
deals by score" where three deals share the third-best score): the answer stands as the
statement ordered it, and says how many rows tie for the places it gives, so nobody takes
the cut for more than it is.

The ranked value is the ordering's keys up to the first one that only breaks ties: a
label or key column after the first key (``ORDER BY count DESC, avg_amount DESC, name``
ranks by the count and the average; the name only decides between equals). The test is
one probe of two counts: the rows the statement keeps when ordered by the ranked keys alone
and cut with ``FETCH FIRST n ROWS WITH TIES``, and all its rows uncut.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import TEXT_TYPES, Catalog, table_for
from services.sql.verify._said import aliases, said
from services.sql.verify._statement import column_name, is_key


@dataclass(frozen=True)
class TiesTest:
    """The probes for one ranked statement: a count of the rows its cut keeps with ties,
    a count of all its rows, and what the messages name."""

    kept_probe: str
    all_probe: str
    limit: int
    key: str

    def degenerate(self, kept: int, total: int) -> bool:
        """Every row ties: the ranking ranks nothing."""
        return total > self.limit and kept >= total

    def refusal(self, total: int) -> str:
        return (
            f"the ranking by {self.key} is the same for all {total} rows: there is no top "
            f"{self.limit} to take"
        )

    def note(self, kept: int) -> str:
        """What an answer whose cut falls among equal values says about it."""
        return (
            f"{kept} rows tie for the first {self.limit} places by {self.key}; the "
            f"{self.limit} shown are the first in the statement's order"
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
    everything = tree.copy()
    everything.set("order", None)
    everything.set("limit", None)
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
    return TiesTest(
        f"(SELECT count(*) FROM ({text}) AS tandem_ties)",
        f"(SELECT count(*) FROM ({everything.sql(dialect='postgres')}) AS tandem_all)",
        n,
        said_keys,
    )


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
    name = column_name(node)
    column = info.column(name) if info is not None else None
    if info is None or column is None:
        return False
    return is_key(info, name) or column.data_type.startswith(TEXT_TYPES)
