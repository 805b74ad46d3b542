"""An elided count: "Which customers have made more than 3 transactions, and how
many?" asks, after the rows, how many of the counted noun each has made: the "how
many" closing the question has no noun of its own, so it is the count the question
compares with a number (its one HAVING count), shown beside the rows. Without it
the rows came alone, the count asked for unshown: a confident wrong."""

from __future__ import annotations

import re

from services.sql.linker._context import LinkContext
from services.sql.linker._plan import Plan

# "…, and how many?" with nothing after it but the question mark
_ELIDED = re.compile(r"(?:,\s*|\s+)and how many\s*[?.!]?\s*$")


def show_elided_count(ctx: LinkContext, plan: Plan) -> None:
    """Show the compared count where a closing "and how many" names no noun; one count
    compared and nothing measured yet, else the plan is left as it was."""
    if plan.measures or len(plan.having) != 1 or not _ELIDED.search(ctx.low):
        return
    counted = plan.having[0][0]
    if counted.func in ("COUNT", "COUNT_DISTINCT"):
        plan.measures.append(counted)
