"""Past participles that do not end in "-ed" ("flown", "built", "made"): after one, "by"
names who did it (the passive's agent, "the distance flown by flights of Delta"), not
what to group by. Said once, for the reader that groups and the check that holds a
statement to its grouping words: apart, the reader's shorter list read "flown by flights"
as one group per flight and the check refused that (ISSUE-45, s61)."""

from __future__ import annotations

import re

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
