"""A stored value said after a negated verb ("flights not operated by American Airlines
Inc."): where each row has one such value, "not" is the one inequality ``<>``.

Both readers ask the same two things of it, so they are said once here: where the value
is said after "not" (a participle and its preposition between), and whether the rows have
one such value each. The value's column is of the rows' table itself, or of a table the
rows' table references (``flights.carrier`` to ``airlines``): one carrier per flight, so
"not operated by X" keeps the flights whose carrier is another. A table that references
the value's instead holds many per row ("airlines not flying to BOS": none of their
flights, or some not?), which one inequality does not say, so it is left to refuse."""

from __future__ import annotations

import re

from services.sql.linker._context import LinkContext
from services.sql.linker._vocabulary import Col
from services.sql.words import IRREGULAR_PARTICIPLES

# "not operated by", "not flown from", "not in": the words between "not" and the value
NOT_BEFORE_VALUE = re.compile(
    r"\bnot\s+(?:[a-z]+(?:ed|en|t)\s+)?(?:by|from|in|at|to)\s+(?:the\s+)?$"
)
_PARTICIPLE = re.compile(r"[a-z]+(?:ed|en|t)")
PREPOSITIONS = frozenset({"by", "from", "in", "at", "to"})


def one_per_row(ctx: LinkContext, col: Col) -> bool:
    """Whether each of the question's rows has one value of ``col``: the column is of the
    rows' table (the first table the question names other than the column's), or of a
    table the rows' table references by a declared key."""
    table = col.table.qualified
    rows = next((t for t in ctx.named if t.qualified != table), None)
    return rows is None or any(
        e.child == rows.qualified and e.parent == table and not e.inferred
        for e in ctx.graph.edges_of(rows.qualified)
    )


def is_participle(word: str) -> bool:
    """A past participle, regular or not ("operated", "flown"): "not flown by United" is
    read as "not operated by" is, and held to the same test of one value per row."""
    return _PARTICIPLE.fullmatch(word) is not None or word in IRREGULAR_PARTICIPLES
