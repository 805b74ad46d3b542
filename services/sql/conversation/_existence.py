"""A follow-up that keeps the earlier rows having any related row at all, no value said:
"only those with a car maker" after countries, "just the ones with a visit" after
museums, "only the ones that have at least one concert", "those used by at least one
document".

The linker reads such words over the earlier rows' table joined to the table they name,
either as a plain join listed once per row (``SELECT DISTINCT … JOIN visit``) or as a
count of the related rows of at least one (``GROUP BY … HAVING COUNT(…) >= 1``). Neither
has a condition to move onto the earlier statement, so the filter was refused; both mean
the earlier row *has* such a row, which ``_semijoin`` writes as ``EXISTS`` over the
referencing table (each earlier row kept once or not at all, its measure and order as
they were). The words must say nothing but that: a grammar of having one ("with a",
"that have at least one", "used by any") and a noun that names the related tables. A
value the linker did not place ("only those with a Pool", where no table is called
pool) is no existence, and stays refused.
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import TableInfo
from services.sql.words import stem

# "with a visit", "that have at least one concert", "having any", "which are used by a
# document", "who own one or more cars": the having of one related row, and its noun.
_HAVING_ONE = re.compile(
    r"^(?:(?:that|which|who)\s+)?"
    r"(?:(?:have|has|had|having|with|own|owns)\s+|(?:(?:are|is|were|was)\s+)?[a-z]+(?:ed|en)\s+by\s+)"
    r"(?:at\s+least\s+one|one\s+or\s+more|a|an|any|some)\s+(?P<noun>[a-z][a-z ]*?)\s*[?.!]*$",
    re.IGNORECASE,
)
_QUANTIFIERS = frozenset({"any", "some", "a", "an", "one", "least", "more", "or"})


def existence_words(condition: str) -> tuple[str, ...] | None:
    """The stems of the noun a having-one condition names ("with a car maker" → car,
    maker); None when the words say more than that a related row exists."""
    match = _HAVING_ONE.match(condition.strip())
    if match is None:
        return None
    words = [w for w in match.group("noun").lower().split() if w not in _QUANTIFIERS]
    return tuple(stem(w) for w in words) or None


def names_tables(words: tuple[str, ...], tables: list[TableInfo]) -> bool:
    """Whether the noun's every word names one of ``tables`` and each table is named by
    one of its words ("course arrangement" names ``course_arrange``; "pool" names no
    table of features, so it is a value, not the table)."""
    stems = {
        table.qualified: {stem(w) for w in re.split(r"[^a-z0-9]+", table.name.lower()) if w}
        for table in tables
    }

    def meets(word: str, name: str) -> bool:
        short, long = sorted((word, name), key=len)
        return word == name or (len(short) >= 5 and long.startswith(short))

    every = {s for names in stems.values() for s in names}
    return (
        bool(tables)
        and all(any(meets(w, n) for n in every) for w in words)
        and all(any(meets(w, n) for w in words for n in names) for names in stems.values())
    )


def at_least_one(linked: exp.Select) -> bool:
    """Whether the linked statement's only HAVING is a count of at least one (``>= 1``,
    ``> 0``), which over an inner join every group meets: the having of one row."""
    having = linked.args.get("having")
    if having is None or linked.args.get("where") is not None:
        return False
    test = having.this
    while isinstance(test, exp.Paren):
        test = test.this
    if not isinstance(test, (exp.GTE, exp.GT)) or not isinstance(test.this, exp.Count):
        return False
    bound = test.expression
    if not isinstance(bound, exp.Literal) or bound.is_string:
        return False
    return (isinstance(test, exp.GTE) and bound.this == "1") or (
        isinstance(test, exp.GT) and bound.this == "0"
    )
