"""The conditions a WHERE or ON clause ANDs together, read apart."""

from __future__ import annotations

from sqlglot import exp


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The conditions ANDed in ``node``, without their parentheses."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]
