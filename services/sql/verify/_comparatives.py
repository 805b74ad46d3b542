"""A comparison said is compared: "List the teachers older than Mara." answered with
the teachers called Mara (``name = 'Mara'``) lists what "than Mara" names, not the rows
it compares with Mara.

A comparative before "than" ("older than", "more than", "earlier than") compares the
rows with something, which a statement does with an ordering operator (<, >, <=, >=,
BETWEEN) somewhere, a subquery's included; one with none has read the comparison as an
equality or left it out, and is refused. "other than" and "rather than" compare
nothing (``_negation`` reads the first)."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.linker import LinkError

_COMPARATIVE = re.compile(r"\b(?!(?:other|rather)\b)(\w+er|more|less)\s+than\b")
_ORDERING = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)


def check_comparatives(text: str, tree: exp.Expr) -> None:
    """Refuse a statement that compares nothing where the question says "<comparative>
    than"."""
    said = _COMPARATIVE.search(text)
    if said is not None and tree.find(*_ORDERING) is None:
        raise LinkError(f"the statement compares nothing for {said.group(0)!r}")
