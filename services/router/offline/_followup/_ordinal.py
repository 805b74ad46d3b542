"""An ordinal pointing into an earlier answer: "the second one", "number 3", "the last?".
It names one member of the latest answer that listed any, or is refused when that answer
has no such member (a referent is never invented).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._followup._kinds import Resolution
from services.router.offline._followup._limit import RESTRICTIVE, row_limit
from services.router.offline._followup._swap import swapped_question
from services.router.offline._followup._words import ABOUT, LEAD, clean, finish, plain

_ORDINALS = {
    "first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3,
    "fifth": 4, "5th": 4, "sixth": 5, "6th": 5, "seventh": 6, "7th": 6, "eighth": 7, "8th": 7,
    "ninth": 8, "9th": 8, "tenth": 9, "10th": 9, "last": -1,
}  # fmt: skip
# An ordinal points into an earlier answer only as a referent of its own: "the second
# one", "the third company", "the last?", "the first of them", "number 3". "The first
# person in space" is an adjective inside a standalone question, not a reference.
ORDINAL = re.compile(
    r"\bthe (?P<n>" + "|".join(_ORDINALS) + r")(?:(?: (?:one|company|account|deal|opportunity"
    r"|item|result|row|entry)\b)|(?=\s*(?:[?.!,;]|$|of (?:them|those|these|the list)\b"
    r"|(?:have|has|had|do|does|did|is|was|are|were)\b)))"
    r"|\b(?:number|no\.|#) ?(?P<k>\d{1,2})\b",
    re.IGNORECASE,
)


def picked_member(asked: str, prior: PriorTurn, history: Sequence[PriorTurn]) -> Resolution | None:
    """The member an ordinal picks ("the second one" → the second name listed), the
    question asked about it; None when the request says no ordinal, or says one with "only"
    or "just" as a row count ("only the first 2")."""
    ordinal = ORDINAL.search(asked)
    if (
        ordinal
        and (prior.sql or not prior.members)
        and RESTRICTIVE.search(asked)
        and row_limit(plain(asked))
    ):
        # "only the first one", "just the first 2": fewer rows, not a pick; after an answer
        # that listed nothing to pick from (a refused ranking) too
        ordinal = None
    if ordinal:
        # "the second one" points into the latest answer that listed anything.
        listed = next((t for t in reversed(history) if t.members and not t.unresolved), prior)
        members = listed.members
        latest = prior
        if ordinal.group("k"):
            index = int(ordinal.group("k")) - 1
        else:
            index = _ORDINALS[ordinal.group("n").lower()]
        if not members or index >= len(members) or index < -len(members):
            count = f"listed {len(members)}" if members else "listed no names"
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer {count}, so '{ordinal.group(0)}' points at nothing",
            )
        member = members[index]
        rest = clean(asked[: ordinal.start()] + member + asked[ordinal.end() :])
        if re.fullmatch(rf"{LEAD}(?:{ABOUT} )?{re.escape(member)}\s*\??", rest, re.I):
            # "and the second one?": the previous question, about that member.
            # "and the fourth one?" after "How many contacts does the second one have?":
            # the latest question, about the newly picked member.
            swapped = swapped_question(latest, member, history) if latest is not listed else None
            rest = swapped or f"What do we know about {member}?"
        return Resolution(FollowUpKind.ORDINAL, finish(rest))
    return None
