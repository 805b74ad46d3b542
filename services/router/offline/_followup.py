"""Follow-up resolution: a question asked inside a conversation becomes a standalone one.

The offline implementation of the RESOLVE_FOLLOW_UP role and the router's check on a
model's rewrite (Gemini's fast tier proposes one; these rules bound what it may do).

People ask in turns ("How many open Security Suite deals are there?" → "and in 2024?" →
"only the healthcare ones" → "what do their call notes say about pricing?"). The planner
and the SQL service only understand standalone questions, so before planning the router
rewrites a follow-up against the previous turn: its resolved question (what was really
answered), the set it described, and its result members.

These are offline rules over the question's shape; they never consult a schema (the SQL
service is the one schema linker) and never invent a referent: a reference with nothing
to point at (``the second one`` after an answer with one member) resolves to UNRESOLVED
with the reason, and the router says so instead of guessing. A question that is not
shaped like a follow-up stands alone, even inside a conversation (a topic change).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.common.llm import FollowUpKind, PriorTurn


@dataclass(frozen=True)
class Resolution:
    """The standalone question to answer, and how it was obtained."""

    kind: FollowUpKind
    question: str
    reason: str = ""

    @property
    def resolved(self) -> bool:
        return self.kind is not FollowUpKind.UNRESOLVED


# Members named in one rewritten question: enough for "their call notes" over a short
# list, short enough that the question still reads as one.
MAX_NAMED_MEMBERS = 8

_ORDINALS = {
    "first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3,
    "fifth": 4, "5th": 4, "sixth": 5, "6th": 5, "seventh": 6, "7th": 6, "eighth": 7, "8th": 7,
    "ninth": 8, "9th": 8, "tenth": 9, "10th": 9, "last": -1,
}  # fmt: skip
# An ordinal points into an earlier answer only as a referent of its own: "the second
# one", "the third company", "the last?", "the first of them", "number 3". "The first
# person in space" is an adjective inside a standalone question, not a reference.
_ORDINAL = re.compile(
    r"\bthe (?P<n>" + "|".join(_ORDINALS) + r")(?:(?: (?:one|company|account|deal|opportunity"
    r"|item|result|row|entry)\b)|(?=\s*(?:[?.!,;]|$|of (?:them|those|these|the list)\b"
    r"|(?:have|has|had|do|does|did|is|was|are|were)\b)))"
    r"|\b(?:number|no\.|#) ?(?P<k>\d{1,2})\b",
    re.IGNORECASE,
)
_LEAD = r"^(?:and|but|ok(?:ay)?|so|then|also|now)?[, ]*"
_ABOUT = r"(?:what about|how about|and|what of|same for|and what about|now)"
_TIME_VALUE = (
    r"(?:(?:in|for|during|since|from) )?(?:the )?"
    r"(?:(?:19|20)\d\d|q[1-4](?: (?:19|20)\d\d)?|(?:last|this|next|previous|past) "
    r"(?:year|quarter|month|week|\d+ (?:days|weeks|months|years))|(?:19|20)\d\d-\d\d"
    r"|ytd|year to date)"
)
_TIME_ONLY = re.compile(rf"^{_LEAD}(?:{_ABOUT} )?(?P<time>{_TIME_VALUE})\s*\??\s*$", re.IGNORECASE)
_TIME_IN_QUESTION = re.compile(rf"\b{_TIME_VALUE}\b", re.IGNORECASE)
_BREAKDOWN = re.compile(
    rf"^{_LEAD}(?:(?:can you |could you |please )?(?:break|split) (?:it|that|this|them|those"
    r"|these)? ?(?:down|up|out)? ?(?:by|per|across)|(?:group(?:ed)?|broken down|split) "
    r"(?:it |that |them )?by|(?:and )?(?:by|per|for each))"
    r" (?P<dim>[\w -]+?)\s*\??\s*$",
    re.IGNORECASE,
)
_FILTER = re.compile(
    rf"^{_LEAD}(?:only|just)(?: (?:show|count|keep|list))? (?:the |those |ones )?(?P<f>.+?)"
    r"(?: ones| deals| opportunities| companies| accounts)?\s*\??\s*$",
    re.IGNORECASE,
)
_SWAP = re.compile(rf"^{_LEAD}{_ABOUT} (?:(?:for|in|with|at) )?(?P<v>.+?)\s*\??\s*$", re.IGNORECASE)
# "which of them", "those deals", "these", "their", "them", "they".
_DEMONSTRATIVE = re.compile(
    r"\b(?P<det>those|these)(?: (?P<noun>deals|opportunities|companies|accounts|ones|"
    r"customers|results|rows))?\b",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"\b(?P<p>their|them|they)\b", re.IGNORECASE)
_PLURAL_BEFORE = re.compile(r"\b[a-z]{3,}(?<!ss)(?<!ou)(?<!i)s\b", re.IGNORECASE)
_NOT_PLURAL = frozenset(
    {"does", "has", "was", "is", "this", "its", "us", "notes", "says", "status", "sales"}
)
# "How many <set> are there?", "List the <set>", "Which <set> ...": the set a count or a
# listing described, so "those deals" can be named again.
_SET_PATTERNS = (
    re.compile(
        r"^how many (?P<set>.+?) (?:are there|do we have|exist|are|were|have we|did we have)"
        r"(?P<rest>.*?)\??$",
        re.IGNORECASE,
    ),
    re.compile(r"^how many (?P<set>.+?)(?P<rest>)\??$", re.IGNORECASE),
    re.compile(
        r"^(?:list|show(?: me)?|name|give me|find) (?:all |the |every )*(?P<set>.+?)(?P<rest>)"
        r"\??$",
        re.IGNORECASE,
    ),
    re.compile(r"^(?:which|what) (?P<set>.+?)(?P<rest>)\??$", re.IGNORECASE),
)
_CAPITALISED = re.compile(r"\b[A-Z][\w&'.-]*(?: (?:[A-Z][\w&'.-]*|of|and|&))*(?<! of)(?<! and)")
_PREPOSITION_VALUE = re.compile(
    r"\b(?P<prep>in|for|from|at|with) (?:the )?(?P<v>[a-z][\w-]*(?: [a-z][\w-]*)?)"
    r"(?= companies| accounts| deals| opportunities| industry| region| sector|\?|$| and )",
)

# "healthcare companies": a lowercase value in front of what it qualifies.
_ADJECTIVE_VALUE = re.compile(r"\b(?P<v>[a-z][\w-]+) (?=companies\b|accounts\b|customers\b)")
_NOT_VALUES = frozenset({"the", "all", "many", "which", "what", "our", "open", "new", "of", "top"})


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _body(question: str) -> str:
    """The question without its final punctuation."""
    return _clean(question).rstrip(" ?.!")


def _names(members: Sequence[str]) -> str:
    named = list(members[:MAX_NAMED_MEMBERS])
    if len(named) == 1:
        return named[0]
    return ", ".join(named[:-1]) + " and " + named[-1]


def _described_set(question: str) -> tuple[str, str] | None:
    """(the set a count or listing question described, the rest of its condition)."""
    body = _body(question)
    for pattern in _SET_PATTERNS:
        match = pattern.match(body)
        if match and match.group("set").strip():
            return match.group("set").strip(), match.group("rest").strip()
    return None


def _with_time(question: str, time: str) -> str:
    """``question`` asked about ``time`` instead of its own period (or with one added)."""
    time = _clean(time)
    if not re.match(r"^(?:in|for|during|since|from|last|this|next|previous|past)\b", time, re.I):
        time = f"in {time}"
    body = _body(question)
    if _TIME_IN_QUESTION.search(body):
        body = _TIME_IN_QUESTION.sub(time, body, count=1)
    else:
        body = f"{body} {time}"
    return body + "?"


def _slots(question: str) -> list[tuple[int, int, str]]:
    """Spans of a question that hold a named value: capitalised phrases past the first
    word, and lowercase values after a preposition ("in healthcare")."""
    body = _body(question)
    spans: list[tuple[int, int, str]] = []
    for match in _CAPITALISED.finditer(body):
        start, end = match.span()
        text = match.group(0)
        if start == 0:
            # The sentence's first word is capitalised anyway; keep what follows it.
            head, _, tail = text.partition(" ")
            if not tail or not tail[0].isupper():
                continue
            start += len(head) + 1
            text = tail
        spans.append((start, end, text))
    for match in _ADJECTIVE_VALUE.finditer(body):
        start, end = match.span("v")
        if match.group("v").lower() not in _NOT_VALUES:
            spans.append((start, end, match.group("v")))
    for match in _PREPOSITION_VALUE.finditer(body):
        start, end = match.span("v")
        if not any(s <= start < e for s, e, _ in spans):
            spans.append((start, end, match.group("v")))
    return sorted(spans)


def _swap(prior: PriorTurn, value: str, history: Sequence[PriorTurn]) -> str | None:
    """The prior question with one named value replaced by ``value``."""
    body = _body(prior.resolved_question)
    slots = _slots(prior.resolved_question)
    if not slots:
        return None
    known_members = {m.lower() for turn in history for m in turn.members}
    chosen: tuple[int, int, str] | None = None
    if value.lower() in known_members:
        # A name from an earlier result replaces the slot that held such a name.
        for slot in slots:
            if slot[2].lower() in known_members:
                chosen = slot
    if chosen is None:
        same_case = [s for s in slots if s[2][:1].isupper() == value[:1].isupper()]
        candidates = same_case or slots
        words = len(value.split())
        # Prefer a slot shaped like the new value (same word count), the last one on a tie:
        # the value a follow-up changes is usually the one the question ended on.
        chosen = max(candidates, key=lambda s: (len(s[2].split()) == words, s[0]))
    start, end, _ = chosen
    return f"{body[:start]}{value}{body[end:]}?"


def _reference_target(prior: PriorTurn) -> str | None:
    """How to name the prior result set: its members when it listed any, else the set
    its question described."""
    if prior.members:
        return _names(prior.members)
    described = _described_set(prior.resolved_question)
    if described is None:
        return None
    found, rest = described
    return _clean(f"the {found} {rest}") if rest else f"the {found}"


def _has_unanchored_pronoun(question: str) -> re.Match[str] | None:
    """A their/them/they with no plural noun before it in the same question (which
    would be its antecedent, as in "companies and their owners")."""
    for match in _PRONOUN.finditer(question):
        before = question[: match.start()]
        nouns = [w for w in _PLURAL_BEFORE.findall(before) if w.lower() not in _NOT_PLURAL]
        if not nouns:
            return match
    return None


def resolve(question: str, history: Sequence[PriorTurn]) -> Resolution:
    """The standalone question to answer for ``question`` after ``history`` (oldest
    first); pure and fast (a few regular expressions), so it adds well under a
    millisecond before planning."""
    asked = _clean(question)
    prior = next((t for t in reversed(history) if not t.unresolved), None)
    ordinal = _ORDINAL.search(asked)
    if prior is None:
        if ordinal:
            return Resolution(
                FollowUpKind.UNRESOLVED, asked, "there is no earlier answer to pick from"
            )
        return Resolution(FollowUpKind.STANDALONE, asked)

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
        rest = _clean(asked[: ordinal.start()] + member + asked[ordinal.end() :])
        if re.fullmatch(rf"{_LEAD}(?:{_ABOUT} )?{re.escape(member)}\s*\??", rest, re.I):
            # "and the second one?": the previous question, about that member.
            # "and the fourth one?" after "How many contacts does the second one have?":
            # the latest question, about the newly picked member.
            swapped = _swap(latest, member, history) if latest is not listed else None
            rest = swapped or f"What do we know about {member}?"
        return Resolution(FollowUpKind.ORDINAL, _finish(rest))

    if match := _TIME_ONLY.match(asked):
        return Resolution(
            FollowUpKind.TIME_SHIFT, _with_time(prior.resolved_question, match.group("time"))
        )
    if match := _BREAKDOWN.match(asked):
        dim = _clean(match.group("dim"))
        return Resolution(FollowUpKind.BREAKDOWN, f"{_body(prior.resolved_question)} by {dim}?")
    if match := _FILTER.match(asked):
        condition = _clean(match.group("f"))
        condition = re.sub(r"^(?:the|those|ones)\s+", "", condition, flags=re.I)
        if not re.match(r"^(?:in|from|with|at|for|that|which|where|whose|over|under|above|"
                        r"below|more|less|closed|created|owned)\b", condition, re.I):  # fmt: skip
            condition = f"in {condition}"
        return Resolution(FollowUpKind.FILTER, f"{_body(prior.resolved_question)} {condition}?")

    demonstrative = _DEMONSTRATIVE.search(asked)
    pronoun = _has_unanchored_pronoun(asked)
    if demonstrative or pronoun or re.search(r"\b(?:which|how many|any) of them\b", asked, re.I):
        target = _reference_target(prior)
        if target is None:
            reference = demonstrative or pronoun
            word = reference.group(0) if reference else "them"
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer named no result set for '{word}' to refer to",
            )
        return Resolution(FollowUpKind.RESULT_REFERENCE, _finish(_refer(asked, target, prior)))

    if match := _SWAP.match(asked):
        value = _clean(match.group("v"))
        # A whole new question after "and" is a topic change, not a value.
        if (
            value[:1].islower()
            and not any(s[2][:1].islower() for s in _slots(prior.resolved_question))
            and len(value.split()) <= 2
        ):
            # "what about retail?" after a question with no lowercase value: a narrowing.
            return Resolution(
                FollowUpKind.VALUE_SWAP, f"{_body(prior.resolved_question)} in {value}?"
            )
        if len(value.split()) <= 4 and not re.match(
            r"^(?:how|what|which|who|when|where|why|is|are|do|does|list|show)\b", value, re.I
        ):
            swapped = _swap(prior, value, history)
            if swapped is not None:
                return Resolution(FollowUpKind.VALUE_SWAP, swapped)
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous question names nothing that '{value}' could replace",
            )
    return Resolution(FollowUpKind.STANDALONE, asked)


def _refer(asked: str, target: str, prior: PriorTurn) -> str:
    """``asked`` with its reference to the previous result set spelled out."""
    named = bool(prior.members)
    text = asked
    which = re.search(r"\b(which|how many|any) of them\b", text, re.I)
    if which:
        condition = re.sub(r"^\s*(?:are|were|is|have|had)\b\s*", "", text[which.end() :])
        if not named and condition.strip(" ?"):
            # "how many of them are in healthcare?" after a count: the count, narrowed.
            return f"{_body(prior.resolved_question)} {condition.strip(' ?')}?"
        return text[: which.start()] + f"{which.group(1)} of {target}" + text[which.end() :]
    demonstrative = _DEMONSTRATIVE.search(text)
    if demonstrative:
        return text[: demonstrative.start()] + target + text[demonstrative.end() :]
    pronoun = _has_unanchored_pronoun(text)
    assert pronoun is not None
    word = pronoun.group("p").lower()
    after = text[pronoun.end() :]
    if word == "their":
        # "their call notes say about pricing" → "the call notes of A and B say …": the
        # possessed noun phrase runs to the next verb-ish word.
        noun = re.match(r"^\s+((?:[\w-]+\s){0,2}?[\w-]+?)(?=\s+(?:say|said|mention|talk|"
                        r"show|have|has|are|is|were|contain)\b|\s*\?|$)", after)  # fmt: skip
        if noun:
            return (
                text[: pronoun.start()] + f"the {noun.group(1)} of {target}"
                + after[noun.end() :]
            )  # fmt: skip
        return text[: pronoun.start()] + f"{target}'s" + after
    return text[: pronoun.start()] + target + after


def _finish(text: str) -> str:
    text = _clean(text)
    text = re.sub(rf"{_LEAD}", "", text, count=1, flags=re.I) or text
    text = text[:1].upper() + text[1:]
    return text if text.endswith("?") else text.rstrip(".!") + "?"
