"""A ranking cut by a LIMIT, as it would run without the cut: where the cut falls
between rows of equal sort keys, which rows a LIMIT keeps depends on how the database
breaks the tie (an eval's gold must not)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp


def ranking_cut(sql: str) -> tuple[str, int, int] | None:
    """(the statement without its LIMIT, returning its sort keys as its last columns; the
    limit; how many keys) for a ranking cut by a LIMIT, else None: run it to see whether
    the cut falls between rows of equal keys (the gold would depend on how ties break)."""
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return None
    limit = tree.args.get("limit")
    order = tree.args.get("order")
    if not isinstance(tree, exp.Select) or limit is None or order is None:
        return None
    try:
        cut = int(limit.expression.name)
    except (AttributeError, ValueError):
        return None
    named = {e.alias: e.unalias() for e in tree.expressions if e.alias}
    keys: list[exp.Expr] = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Column) and not key.table and key.name in named:
            key = named[key.name]
        elif isinstance(key, exp.Literal) and key.is_int:
            key = tree.expressions[int(key.name) - 1].unalias()
        keys.append(key.copy())
    keyed = tree.copy()
    keyed.set("limit", None)
    keyed.set("expressions", [*keyed.expressions,
                              *(k.as_(f"tandem_key_{i}") for i, k in enumerate(keys))])  # fmt: skip
    return keyed.sql(dialect="postgres"), cut, len(keys)
