"""A season said where the data keeps months ("in the summer"): refused naming it.

Which months a season spans depends on the hemisphere and the convention (meteorological,
astronomical, a retailer's quarter), so a season is never read as a month list by
guessing. Where nothing read the question otherwise (no stored value, column or table
named so; a glossary term is applied before this and never reaches it), the refusal says
what could not be placed and where the months are kept ("'summer': which months it spans
is unsaid — flights.month?"), not that nothing in the schema fits, which misleads when
the month column exists. One rule for first questions and follow-ups.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.sql.catalog import TableInfo
from services.sql.linker._dates import calendar_part
from services.sql.linker._plan import is_temporal

# The seasons of the year, as a noun: after a determiner or a preposition ("in the
# summer", "this winter", "during spring") or before "months"; "prices fall" is a verb.
_SEASON = re.compile(
    r"\b(?:(?:in|during|over|through|for|of|this|last|next|each|every|the)\s+)+"
    r"(spring|summer|autumn|fall|winter)\b|\b(spring|summer|autumn|fall|winter)\s+months?\b",
    re.IGNORECASE,
)


def unsaid_season(text: str, tables: Sequence[TableInfo]) -> str | None:
    """The refusal of a season ``text`` says where ``tables`` keep months or dates, or
    None when it says none or they keep neither (then nothing points at a month)."""
    found = _SEASON.search(text)
    if found is None:
        return None
    season = (found.group(1) or found.group(2)).lower()
    months = [f"{p.table.name}.{p.column.name}" for t in tables if (p := calendar_part(t, "month"))]
    dates = [f"{t.name}.{c.name}" for t in tables for c in t.columns if is_temporal(c.data_type)]
    near = months or dates
    if not near:
        return None
    return f"'{season}': which months it spans is unsaid — {', '.join(near[:3])}?"
