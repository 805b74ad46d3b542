"""A negation ("not", "never", "without", "no", "except") negates something in the
statement: "singers not from France" reads the same column as "singers from France"."""

from __future__ import annotations

import re

from services.sql.linker import LinkError
from services.sql.verify._facts import StatementFacts

_NEGATION = re.compile(
    r"\b(?:not|no|never|without|none|nobody|nothing|neither|nor|except|excluding)\b|n't\b"
    r"|\b(?:other than|apart from|aside from)\b"
)
# "the last 8 weeks excluding the current week": the date window's, not a negation
_WINDOW_EXCLUSION = re.compile(
    r"\b(?:not including|excluding|exclusive of)\s+(?:the\s+)?(?:current|this|today)"
)


def check_negation(text: str, facts: StatementFacts) -> None:
    """A negation of the question (a date window's "excluding the current week" aside)
    needs a NOT, a ``<>`` or an ``IS NULL`` in the statement."""
    negation = _NEGATION.search(_WINDOW_EXCLUSION.sub(" ", text))
    if negation and not facts.negated:
        raise LinkError(f"the statement does not apply {negation.group(0).strip()!r}")
