"""Past participles that do not end in "-ed" ("flown", "built", "made"): after one, "by"
names who did it (the passive's agent, "the distance flown by flights of Delta"), not
what to group by. Said once, for the reader that groups and the check that holds a
statement to its grouping words: apart, the reader's shorter list read "flown by flights"
as one group per flight and the check refused that (ISSUE-45, s61)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.sql.words._words import stem

IRREGULAR_PARTICIPLES = frozenset(
    [
        "flown",
        "made",
        "sold",
        "paid",
        "held",
        "built",
        "bought",
        "run",
        "won",
        "led",
        "sent",
        "spent",
        "kept",
        "taught",
        "caught",
        "brought",
        "done",
        "written",
        "driven",
        "given",
        "taken",
        "chosen",
        "eaten",
        "spoken",
        "seen",
        "shown",
        "known",
        "drawn",
        "grown",
        "thrown",
        "worn",
        "born",
        "borne",
        "begun",
        "sung",
        "told",
        "found",
        "lost",
        "met",
        "hit",
        "set",
        "put",
        "read",
        "left",
    ]
)


def names_agent(word: str) -> bool:
    """Whether "by" after ``word`` names a passive's agent ("made by Boeing", "operated by
    Delta", "ordered by age"): a past participle, irregular or in "-ed". After any other
    word ("companies by region", "how many flights are there by airline") "by" in a
    measured question names what to group by. Said once for the readers that group and
    the check that holds a statement to its grouping words (ISSUE-45, s62)."""
    return word in IRREGULAR_PARTICIPLES or re.fullmatch(r"[a-z]{3,}ed", word) is not None


_DETERMINERS = frozenset({"the", "a", "an", "each", "every", "any", "some", "one", "its", "their"})


def bare_agent(words: Sequence[str]) -> bool:
    """Whether the words after a passive's "by" (as written, up to the end of the clause)
    are a bare singular common noun: lower case, no determiner, the last word its own
    singular ("operated by airline", "made by salesperson"). One agent is said with a
    determiner or a name ("operated by the airline", "made by Ford", "owned by
    students"); a bare singular names no one of them, so the "by" groups, as "per" does
    (ISSUE-45, s63). Grammar only: which table the noun names is the reader's."""
    if not words or len(words) > 3 or words[0].lower() in _DETERMINERS:
        return False
    if any(not w.isalpha() or w != w.lower() for w in words):
        return False
    return stem(words[-1]) == words[-1]


# participles whose "by" says an order, never an agent: "ordered by region"
_ORDERING = re.compile(r"(?:order|sort|rank|arrang|list)ed")


def bare_agent_said(question: str, participle: str = "") -> list[str]:
    """The words of a passive's bare agent in ``question`` as the user wrote it ("How
    many flights were operated by airline?" -> ["airline"]): after ``participle``, or
    any past participle (``names_agent``), up to the end of the question or its clause;
    empty where every agent said is a determiner's, a name's or a plural's."""
    verb = re.escape(participle) if participle else "[A-Za-z]+"
    for said in re.finditer(
        rf"\b({verb}) by\s+([A-Za-z]+(?:\s+[A-Za-z]+)*)\s*(?:[,?.!;]|$)",
        question,
        re.IGNORECASE,
    ):
        words, verb = said.group(2).split(), said.group(1).lower()
        if names_agent(verb) and not _ORDERING.fullmatch(verb) and bare_agent(words):
            return words
    return []
