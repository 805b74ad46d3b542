"""Defined terms asked, each computed: "what are the PMPD and PMTC for each month" asks
for two measures, not one under both names."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._outputs import asked_items


def check_terms_computed(ctx: LinkContext, tree: exp.Expr) -> None:
    """ "What are the PMPD and PMTC for each month": two defined terms listed as the
    items asked are two measures; a statement with fewer computed outputs (an aggregate
    in them) than such items answers one of them, or neither, under both names."""
    if not isinstance(tree, exp.Select) or not ctx.applied:
        return
    names = {n.lower() for entry in ctx.glossary for n in entry.names}
    items = {
        re.sub(r"^(?:the|its|their)\s+", "", item) for item in asked_items(ctx.original.lower())
    }
    listed = sorted(items & names)
    if len(listed) < 2:
        return
    computed = sum(1 for output in tree.expressions if output.find(exp.AggFunc))
    if computed < len(listed):
        raise LinkError(
            f"the question asks for {' and '.join(listed)}, {len(listed)} measures; the "
            f"statement computes {computed}"
        )
