"""How much of a stored value of several words a question says: "which pitcher" says
one of the three words of ``'TSN Pitcher of the Year'``, a title that merely contains the
question's word; "deals won" says the distinctive half of ``'Closed Won'``.

The linker declines to read a value said in less than half of its words, and the
verifier refuses a statement that compares with one: the same rule, read in one place.
"""

from __future__ import annotations

import re

from services.sql.words._words import lemma, stem

_WORD = re.compile(r"[^\W_]+")
# The words of a name that carry no meaning of their own ("Pitcher of the Year"): the
# question need not say them. Every other word of a value counts, "year" included.
_FUNCTION_WORDS = frozenset(
    {"a", "an", "the", "of", "and", "or", "in", "on", "at", "for", "to", "by", "with"}
)


def value_words_said(value: str, low: str) -> tuple[list[str], list[str]]:
    """(the value's content words the lower-cased question says, as a word, its stem or
    its lemma; all of the value's content words)."""
    said = {stem(w) for w in _WORD.findall(low)} | {lemma(w) for w in _WORD.findall(low)}
    words = [w for w in _WORD.findall(value.lower()) if w not in _FUNCTION_WORDS]
    return [w for w in words if stem(w) in said or lemma(w) in said], words


def said_in_part(value: str, low: str) -> bool:
    """Whether a value of two content words or more is said, but in fewer than half of
    them (none said is not "in part": an abbreviation or a code spelled otherwise)."""
    heard, words = value_words_said(value, low)
    return len(words) >= 2 and bool(heard) and 2 * len(heard) < len(words)
