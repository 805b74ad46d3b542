"""Which way a reference points: two columns of one table that refer to the same table
(``flights.origin`` and ``flights.dest`` to ``airports``; a transfer's sender and
recipient) are told apart by the direction their names say, and a question says a
direction with its prepositions and verbs of motion ("from JFK", "arrived at", "the
destination airport"). General English of movement, not any schema's words: a name part
says where a row comes from or where it goes, and the question's words are read the
same way for every database."""

from __future__ import annotations

import re

from services.sql.words._words import stem

FROM = "from"
TO = "to"

# Name parts: a long stem as a prefix ("destairport", "departure_airport"), a short one
# only as a whole part ("src", "dst", "arr").
_NAME_STEMS = {
    FROM: ("origin", "source", "depart", "sender", "start"),
    TO: ("dest", "arriv", "target", "recipient", "receiver"),
}
_NAME_PARTS = {
    FROM: frozenset({"src", "from", "dep", "orig"}),
    TO: frozenset({"dst", "to", "arr"}),
}


def name_direction(column: str) -> str | None:
    """The direction a column's name says (FROM, TO), or None when it says neither or
    both."""
    parts = [p for p in re.split(r"[^a-z]+", column.lower()) if p]
    found = {
        way
        for way in (FROM, TO)
        for part in parts
        if part in _NAME_PARTS[way] or part.startswith(_NAME_STEMS[way])
    }
    return found.pop() if len(found) == 1 else None


# Words that say a direction by themselves: a verb of leaving or arriving, a noun of
# the end points.
_SAYS = {
    FROM: re.compile(r"\b(?:depart\w*|leav(?:e|es|ing)|originat\w*|origins?|sources?)\b", re.I),
    TO: re.compile(
        r"\b(?:arriv\w*|land(?:s|ed|ing)?|destinations?|reach(?:es|ed|ing)?|bound for)\b", re.I
    ),
}
# Prepositions say one only before an end point: a name, a code, a quoted value, a noun
# of the referenced table, a pronoun for one, or nothing ("the airports flights flew
# to?"); "from highest to lowest", "belong to each" say none.
_PREPOSITIONS = {
    FROM: re.compile(r"\b(?:from|out of)\b", re.I),
    TO: re.compile(r"\b(?:to|into)\b", re.I),
}
# An article or a determiner before the end point ("from each airport", "to every
# airport"): the noun after it says the end point, as after "the".
_ARTICLE = re.compile(
    r"\s*(?:(?:the|a|an|each|every|all|any|its|their|that|this|these|those)\s+)?", re.I
)
_POINTER = frozenset({"it", "them", "which", "where", "there", "here"})
# A preposition followed straight by another has no object of its own: it is stranded,
# its end point the head of the relative clause it closes ("the airports JetBlue flew
# to from JFK", "the airports flights came from in May"), as a preposition before
# nothing is. Grammar, not any schema's words.
_NEXT_PREPOSITION = frozenset(
    {
        "from", "to", "into", "in", "on", "at", "during", "by", "with", "for", "of",
        "before", "after", "since", "between", "via", "out", "through", "within",
    }
)  # fmt: skip


def question_directions(question: str, nouns: frozenset[str]) -> set[str]:
    """The directions the question says (FROM, TO); ``nouns`` are the stems of the
    words that name the referenced table (``airport``)."""
    found = {way for way, says in _SAYS.items() if says.search(question)}
    for way, preposition in _PREPOSITIONS.items():
        if way in found:
            continue
        for match in preposition.finditer(question):
            rest = question[match.end() :]
            after = rest[_ARTICLE.match(rest).end() :]  # type: ignore[union-attr]
            word = re.match(r"['\"\w/-]*", after).group(0)  # type: ignore[union-attr]
            if (
                not word
                or word[0] in "'\""
                or word[0].isupper()
                or word[0].isdigit()
                or stem(word.lower()) in nouns
                or word.lower() in _POINTER
                or word.lower() in _NEXT_PREPOSITION
            ):
                found.add(way)
                break
    return found
