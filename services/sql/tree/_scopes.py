"""Identifiers and scoped table references of a sqlglot tree (see the package)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

# sqlglot's base node class (``Expression``, renamed ``Expr`` in newer releases).
EXPR: type[exp.Expr] = getattr(exp, "Expr", exp.Expression)


def ident(node: object) -> str | None:
    """An identifier's name as Postgres resolves it: unquoted folds to lowercase."""
    if node is None:
        return None
    if isinstance(node, exp.Identifier):
        return str(node.this) if node.quoted else str(node.this).lower()
    if isinstance(node, EXPR) and isinstance(node.this, str):
        return node.this.lower()
    return None


def children(value: object) -> Iterator[exp.Expr]:
    """The nodes an argument of a node holds (one, or a list of them)."""
    if isinstance(value, EXPR):
        yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, EXPR):
                yield item


def scoped_tables(
    node: exp.Expr, ctes: frozenset[str] = frozenset(), *, into: bool = True
) -> Iterator[tuple[exp.Table, frozenset[str]]]:
    """Every table reference under ``node`` with the CTE names visible where it stands:
    a CTE sees the earlier siblings (every sibling, itself included, under WITH
    RECURSIVE), the main query all of them. ``into`` False stops at SELECT INTO (its
    target is written, not read)."""
    with_ = node.args.get("with_")
    if isinstance(with_, exp.With):
        items = [c for c in with_.expressions if isinstance(c, exp.CTE)]
        names = [ident(c.args["alias"].this) or "" if c.args.get("alias") else "" for c in items]
        recursive = bool(with_.args.get("recursive"))
        for index, cte in enumerate(items):
            seen = names if recursive else names[:index]
            yield from scoped_tables(cte.this, ctes | frozenset(n for n in seen if n), into=into)
        ctes = ctes | frozenset(n for n in names if n)
    if not into and isinstance(node, exp.Into):
        return
    if isinstance(node, exp.Table):
        yield node, ctes
    for key, value in node.args.items():
        if key == "with_":
            continue
        for child in children(value):
            yield from scoped_tables(child, ctes, into=into)
