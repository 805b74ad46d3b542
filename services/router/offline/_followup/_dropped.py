"""A condition removed: "drop the delay filter", "forget the method", "all of them, not
just JFK". Read only after a statement with a condition, so that "drop the orders table"
stays a request to change data; the SQL service removes the condition the words name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.common.llm import PriorTurn
from services.router.offline._followup._words import plain

# "drop the delay filter", "remove the 2023 filter", "without the date condition", "no
# filter on status", "lift the restriction": a verb of removing whose object is a condition
# (by the noun "filter", "condition" …, with the words that say which before it or after
# "on"); "all of them, not just JFK": the value the previous statement kept its rows to.
_CONDITION_NOUN = r"(?:filters?|conditions?|restrictions?|constraints?|criteria|criterion)"
_DROPS_CONDITION = re.compile(
    r"^(?:(?:and|but|now|ok|okay|so|then|just|please)[,]?\s+)*"
    r"(?:drop|remove|lose|ignore|forget|clear|skip|lift|undo|get rid of|take off|take away|"
    r"without|no|with no|not)\s+"
    r"(?:(?:the|that|this|those|these|any|its|their|your)\s+)?"
    rf"(?P<before>(?:[\w'.-]+\s+){{0,3}}?){_CONDITION_NOUN}"
    r"(?:\s+(?:on|for|of|by)\s+(?:the\s+)?(?P<after>[\w'.-]+(?:\s+[\w'.-]+){0,2}))?"
    r"(?:\s+(?:please|now|too|as well))?$",
    re.IGNORECASE,
)
# "forget the method, count them all", "ignore the status": a verb of removing whose
# object is the name of a column the previous statement's condition compares (no noun
# "filter" said); the request may end by asking for the rows again, all of them.
_DROPS_COLUMN = re.compile(
    r"^(?:(?:and|but|now|ok|okay|so|then|just|please)[,]?\s+)*"
    r"(?:drop|remove|ignore|forget|skip|lift|undo|forget about|never mind)\s+"
    r"(?:(?:the|that|its|their)\s+)?(?P<col>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)"
    r"(?:\s*,?\s*(?:and\s+)?(?:count|show|list|give me)\s+(?:them|it|those|these|everything)"
    r"(?:\s+all)?|\s*,?\s*all of them)?$",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"'(?:[^']|'')*'|(?P<name>[a-z_][\w.]*)", re.IGNORECASE)


def _compared_name_words(conditions: str) -> set[str]:
    """The words of the names (tables, columns) a WHERE clause's text says, split on
    "_" and "."; its quoted values are no names."""
    names = (m.group("name") for m in _IDENTIFIER.finditer(conditions) if m.group("name"))
    return {w for n in names for w in re.split(r"[_.]", n.lower()) if len(w) > 2}


_ALL_NOT_JUST = re.compile(
    r"^(?:(?:and|but|now|ok|okay|so)[,]?\s+)*all\s+(?:of\s+)?(?:them|(?:the\s+)?[\w-]+)"
    r"\s*,?\s+not\s+(?:just|only)\s+(?:the\s+)?(?P<value>[\w'.&-]+(?:\s+[\w'.&-]+){0,3})$",
    re.IGNORECASE,
)


def drops_condition(question: str, history: Sequence[PriorTurn]) -> str | None:
    """The words naming the previous statement's condition a follow-up removes ("delay"
    for "drop the delay filter", "filter" for "drop the filter"), or None. Only after an
    answer of a statement with a condition: "drop the orders table" or "remove the
    cancelled orders" name no condition (data), and stay requests to change data; the SQL
    service removes the condition the words name, through the statement's parts, or
    refuses naming its conditions."""
    prior = next((t for t in reversed(history) if not t.unresolved), None)
    where = re.search(r"\bWHERE\b", prior.sql, re.I) if prior is not None else None
    if prior is None or where is None:
        return None
    text = plain(question)
    if (match := _DROPS_CONDITION.match(text)) is not None:
        said = " ".join(f"{match.group('before') or ''} {match.group('after') or ''}".split())
        return said or "filter"
    if (match := _DROPS_COLUMN.match(text)) is not None:
        # "forget the method": every word a word of a name the conditions compare
        # ("payment_method"), so the object is a condition, not data ("drop the orders")
        words = match.group("col").lower().split()
        if set(words) <= _compared_name_words(prior.sql[where.end() :]):
            return " ".join(words)
    if (match := _ALL_NOT_JUST.match(text)) is not None:
        # the value as a literal the statement compares with: a quoted string or a number
        value, conditions = match.group("value"), prior.sql[where.end() :]
        if (literal := _compared_literal(value, conditions)) is not None:
            return literal
        number = re.fullmatch(r"\d+(?:\.\d+)?", value) and re.search(
            rf"(?<![\w.']){re.escape(value)}(?![\w.'])", conditions
        )
        if number:
            return value
    return None


def _singulars(word: str) -> list[str]:
    """``word`` and the singular forms its English plural ending may stand for ("buys" →
    buy, "boxes" → box, "categories" → category): rows are counted in the plural of the
    value that marks them ("number of buys" for ``type = 'buy'``). Grammar of the
    language, no word of a schema."""
    forms = [word]
    lowered = word.lower()
    if lowered.endswith("ies") and len(word) > 4:
        forms.append(f"{word[:-3]}y")
    if lowered.endswith("es") and len(word) > 3:
        forms.append(word[:-2])
    if lowered.endswith("s") and not lowered.endswith("ss") and len(word) > 2:
        forms.append(word[:-1])
    return forms


def _compared_literal(value: str, conditions: str) -> str | None:
    """The quoted literal of ``conditions`` the said value is, exactly or as its plural
    ("not just buys" for ``sbtxtype = 'buy'``), as the statement spells it (the SQL
    service finds the condition by that literal); None when it compares none. The exact
    form is tried first, so a stored plural ("Sales") is never read as another value."""
    for form in _singulars(value):
        if (found := re.search(rf"'({re.escape(form)})'", conditions, re.I)) is not None:
            return found.group(1) if form != value else value
    return None
