"""One way to write that a row has related rows: ``EXISTS (SELECT 1 FROM … JOIN … ON …
WHERE …)``, conditions joined by AND.

Two writers build the same sub-query: a first question's restricting joins moved into
one (``_semijoin``: "the museums that have a visit") and a follow-up's narrowing of the
earlier rows to those with a related row (``conversation._semijoin``: "only those with a
visit"). Written by one builder, the two paths give the same statement text for the
same rows, which is what lets a follow-up compare, and an answer read, either alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp


def conjoined(parts: Sequence[exp.Expr]) -> exp.Expr:
    """``parts`` joined by AND (the one part itself when there is one); the parts are
    used as given, not copied."""
    return exp.and_(*parts) if len(parts) > 1 else parts[0]


def exists(
    first: exp.Table,
    joins: Sequence[tuple[exp.Table, Sequence[exp.Expr]]],
    where: Sequence[exp.Expr],
) -> exp.Exists:
    """``EXISTS (SELECT 1 FROM first JOIN … WHERE …)``: each of ``joins`` a table and the
    equalities it joins on (a CROSS JOIN where it has none: the WHERE ties it), ``where``
    the correlation to the outer row and any condition on the related rows. Every node
    is copied: the caller's tree is left as it was."""
    sub = exp.Select(expressions=[exp.Literal.number(1)])
    sub.set("from_", exp.From(this=first.copy()))
    for table, on in joins:
        if on:
            sub.append("joins", exp.Join(this=table.copy(), on=conjoined([p.copy() for p in on])))
        else:
            sub.append("joins", exp.Join(this=table.copy(), kind="CROSS"))
    sub.set("where", exp.Where(this=conjoined([p.copy() for p in where])))
    return exp.Exists(this=sub)
