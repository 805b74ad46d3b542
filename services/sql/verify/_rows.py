"""The ``rows`` check: a statement that finds no row is checked once more with each
condition left out, and the answer says which condition no row meets.

A question asked of a database ("which singers …", "list the …") presumes rows; none at
all is most often a statement that reads the question wrongly — a condition together with
its own negation, a value looked for in the wrong column, two conditions no row meets
together — and seldom the real answer. So an empty result is not given as an answer:
each condition of the statement's WHERE and HAVING is left out in turn (one probe of
``EXISTS`` subqueries), and the refusal names the conditions that, left out, let rows
through. When every single one leaves none, it says so.

A count of zero is a row, and is answered: "how many orders were cancelled today?" may
truly be none.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.verify._said import aliases, said


@dataclass(frozen=True)
class Relaxed:
    """The statement with one condition left out, as an EXISTS probe."""

    condition: str  # the condition left out, said for a person
    probe: str


def conditions(tree: exp.Expr) -> list[exp.Expr]:
    """The top-level conditions of a SELECT: its WHERE's and HAVING's conjuncts."""
    if not isinstance(tree, exp.Select):
        return []
    found: list[exp.Expr] = []
    for clause in ("where", "having"):
        node = tree.args.get(clause)
        if node is not None:
            found += list(node.this.flatten()) if isinstance(node.this, exp.And) else [node.this]
    return found


def relaxations(tree: exp.Expr) -> list[Relaxed]:
    """One probe per condition of ``tree``: the statement without that condition (and
    without its ordering and cut), asked whether any row comes back."""
    parts = conditions(tree)
    names = aliases(tree)
    found: list[Relaxed] = []
    for k, part in enumerate(parts):
        relaxed = tree.copy()
        kept = [p.copy() for i, p in enumerate(parts) if i != k]
        where = [p for p in kept if _in(tree, "where", p)]
        having = [p for p in kept if _in(tree, "having", p)]
        relaxed.set("where", exp.Where(this=exp.and_(*where)) if where else None)
        relaxed.set("having", exp.Having(this=exp.and_(*having)) if having else None)
        relaxed.set("order", None)
        relaxed.set("limit", None)
        found.append(Relaxed(said(part, names), f"EXISTS ({relaxed.sql(dialect='postgres')})"))
    return found


def _in(tree: exp.Expr, clause: str, part: exp.Expr) -> bool:
    node = tree.args.get(clause)
    if node is None:
        return False
    pieces = list(node.this.flatten()) if isinstance(node.this, exp.And) else [node.this]
    return any(part == p for p in pieces)


def refusal(relaxed: list[Relaxed], through: list[bool]) -> str:
    """Why an empty result is refused, naming the conditions that hold the rows back."""
    holding = [r.condition for r, rows in zip(relaxed, through, strict=True) if rows]
    if holding:
        return "no row meets every condition of the statement; rows meet all but " + " or ".join(
            repr(c) for c in holding[:3]
        )
    if relaxed:
        return "no row meets the statement's conditions, even with any one of them left out"
    return "the statement finds no row"
