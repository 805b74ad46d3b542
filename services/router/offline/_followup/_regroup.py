"""Another grouping: "by region instead", "split it by state", "per month too". The previous
question grouped by the dimension said, in place of its own grouping or beside it.
"""

from __future__ import annotations

import re

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._followup._kinds import Resolution
from services.router.offline._followup._words import GROUPING, LEAD, clean, question_body

_BREAKDOWN = re.compile(
    rf"^{LEAD}(?:(?:can you |could you |please )?(?:break|split) (?:it|that|this|them|those"
    r"|these)? ?(?:down|up|out)? ?(?:by|per|across)|(?:group(?:ed)?|broken down|split) "
    r"(?:it |that |them )?by|(?:and )?(?:by|per|for each))"
    r" (?P<dim>[\w -]+?)\s*\??\s*$",
    re.IGNORECASE,
)
REGROUP = re.compile(
    r"^(?:(?:and|also|now|then|what about|how about)\s+)*"
    r"(?:(?:break|split|group|divide|segment|slice)\s+(?:(?:it|that|this|them|those|these|"
    r"the \w+)\s+)?(?:(?:down|up|out)\s+)?|(?:broken down|split up|split|grouped|divided)\s+"
    r"|(?:do|show|give me)\s+(?:(?:it|that|this|the same)\s+)?)?"
    r"(?P<prep>by|per|for each|for every|in each|across)\s+(?:the\s+|each\s+)?"
    r"(?P<dim>[\w'-]+(?:\s+[\w'-]+){0,2}?)"
    r"(?P<instead>\s+(?:instead(?:\s+of\s+[\w' -]+)?|rather than\s+[\w' -]+))?"
    r"(?:\s+(?:too|as well|also|then))?$",
    re.IGNORECASE,
)


_PHRASE_BOUNDARY = r"in|on|at|from|to|for|with|during|over|since|before|after|between|by|of|and|or"
_VERB_AFTER = r"have|has|had|is|are|was|were|do|does|did"
_NEXT_NOUN = re.compile(
    rf"\s+(?P<n>(?!(?:{_PHRASE_BOUNDARY}|{_VERB_AFTER}|the|a|an|last|this|next|that|which"
    rf"|who|only|alone|instead|too)\b)[a-z][\w-]*)"
    rf"(?=\s*(?:[?.!,;]|$|\b(?P<b>{_PHRASE_BOUNDARY}|{_VERB_AFTER}|last|this|next)\b))",
    re.IGNORECASE,
)
_AUXILIARY = re.compile(r"\b(?:do|does|did|can|could|will|would)\b", re.IGNORECASE)


def _grouping_end(body: str, found: re.Match[str]) -> int:
    """Where the grouping's noun phrase ends: past a second noun ("each origin airport",
    "per product category"), which a regroup replaces with the grouping said, not only
    its first word ("each carrier airport"). The word after the grouping is a noun when
    a preposition, a verb like "have", or the question's end follows it; it is the verb
    itself where an auxiliary before the grouping waits for one ("did each carrier
    operate from EWR")."""
    end = found.end("g")
    after = _NEXT_NOUN.match(body, end)
    if after is None or " of " in found.group("g"):
        return end
    waits_for_verb = _AUXILIARY.search(body[: found.start()]) is not None
    verb_follows = (after.group("b") or "").lower() in _VERB_AFTER.split("|")
    if waits_for_verb and not verb_follows:
        return end
    return after.end("n")


def regrouped(question: str, dim: str, *, add: bool) -> str:
    """The previous question grouped by ``dim`` instead of its own grouping (or as well)."""
    body = question_body(question)
    found = [m for m in GROUPING.finditer(body) if m.group("p").lower() != "by"]
    found = found or list(GROUPING.finditer(body))
    if found and not add:
        last = found[-1]
        return f"{body[: last.start('g')]}{dim}{body[_grouping_end(body, last) :]}?"
    if found:
        return f"{body} and by {dim}?"
    return f"{body} by {dim}?"


def broken_down(asked: str, prior: PriorTurn) -> Resolution | None:
    """ "by region?", "and per state": the previous question grouped by the dimension
    said, when no statement edit read the request; None otherwise."""
    if match := _BREAKDOWN.match(asked):
        dim = clean(match.group("dim"))
        return Resolution(
            FollowUpKind.BREAKDOWN, f"{question_body(prior.resolved_question)} by {dim}?"
        )
    return None
