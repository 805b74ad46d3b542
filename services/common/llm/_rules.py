"""Lexical rules for routing: question class and decomposition of compound questions.

Cues are weighed, not matched first-wins: "summarize the notes for the top deal" has a
ranking word but is a reading question, so semantic cues must be able to outweigh it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.common.llm._types import QuestionClass

_NUM = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|fifty)"

# (pattern, weight); weight 2 marks cues that alone make a question countable.
_AGGREGATION_CUES: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(p), w)
    for p, w in (
        (r"\bhow many\b", 2),
        (r"\bnumber of\b", 2),
        (r"\bcount(s|ed)?\b", 2),
        (r"\b(average|avg|mean|median)\b", 2),
        (r"\b(sum|total)\b", 2),
        (rf"\btop\s+{_NUM}\b", 2),
        (rf"\b{_NUM}\s+(largest|biggest|highest|lowest|smallest|best|worst|latest|newest)\b", 2),
        (r"\btop\b", 1),
        (r"\b(highest|lowest|largest|biggest|smallest|fewest|cheapest|priciest)\b", 1),
        (r"\b(most|least)\s+(?!important|common|relevant|likely|interesting|significant)", 1),
        (r"\bmost expensive\b", 1),
        (r"\b(max|maximum|min|minimum)\b", 2),
        (r"\bper\b", 1),
        (r"\bfor each\b", 1),
        (r"\bbreak ?down\b|\bbroken down\b|\bgrouped by\b", 2),
        (r"\b(rank|ranked|ranking)\b", 1),
        (r"\b(percent|percentage|ratio|share of)\b", 1),
        (r"\b(more|less|greater|fewer) than\s+\$?\d", 2),
        (r"\b(over|above|under|below|exceeding|at least|at most)\s+\$?\d", 2),
        (r"\bbetween\s+\$?\d", 1),
        (r"\b(sorted|ordered|order) by\b", 1),
        (r"\blist (all|every)\b", 1),
        (r"\bhow much\b", 1),
        (
            r"\b(by|per)\s+(stage|status|region|industry|sector|month|quarter|year|owner|rep|"
            r"category|type|country|segment)\b",
            1,
        ),
    )
)

_SEMANTIC_CUES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"\bwhy\b",
        r"\bhow (do|does|did|can|should|could|would|is|are|to)\b",
        r"\bexplain\w*\b",
        r"\bdescrib\w*\b",
        r"\bsummar\w*\b",
        r"\btell me about\b",
        r"\bwhat (did|does|do)\b.*\b(say|said|think|mention|want|need)\b",
        r"\b(said|says|mention\w*|discuss\w*)\b",
        r"\bnotes?\b",
        r"\b(feedback|concerns?|objections?|complaints?|pain points?|challenges?)\b",
        r"\blooks? like\b",
        r"\bsimilar\b",
        r"\b(good |best |strong )?fit\b",
        r"\brecommend\w*\b",
        r"\b(polic(y|ies)|guidelines?|procedures?|process|playbook)\b",
        r"\b(strategy|approach|sentiment|risks?|competitors?|overview|brief|briefs)\b",
        r"\b(sheet|document\w*|wiki|article)\b",
        r"\b(features?|benefits?|capabilit\w+|use cases?)\b",
    )
)

_CONVERSATIONAL = re.compile(
    r"^\s*(hi|hello|hey|yo|thanks|thank you|thx|good (morning|afternoon|evening)|"
    r"what can you do|who are you|what are you|help|how do you work|how does this work)"
    r"(\s+(there|again|so much|a lot))?\s*[!.?]*\s*$",
    re.IGNORECASE,
)

_ACTION_START = (
    r"(?:describe|explain|summari[sz]e|list|show|count|tell|give|what|which|how|who|why|"
    r"find|compare|provide|outline|identify|name|include|rank)"
)

_DEPENDENT = re.compile(
    r"^(?P<first>.+?)[,;]?\s+(?:and\s+)?(?:then\s+)?for\s+the\s+(?:one|company|account|"
    r"customer|deal|opportunity|product|contact|\w+)\s+with\s+the\s+"
    r"(?P<dir>most|highest|largest|biggest|fewest|lowest|least|smallest)\s+"
    r"(?P<z>[^,]+?)\s*,\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
_DEPENDENT_TOP = re.compile(
    r"^(?P<first>.+?)[,;]?\s+(?:and\s+)?(?:then\s+)?for\s+the\s+(?:top|first|best|largest|"
    r"biggest)\s+(?:one|result|company|account|deal|opportunity|\w+)\s*,\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
_COMPARE_PREP = re.compile(
    r"^\s*(?:please\s+)?(?:compare|contrast)\s+(?P<z>.+)\s+(?:for|at|between|across)\s+"
    r"(?P<a>[^,]+?)\s+(?:and|with|vs\.?|versus|to)\s+(?P<b>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_COMPARE = re.compile(
    r"^\s*(?:please\s+)?(?:compare|contrast)\s+(?P<a>.+?)\s+(?:and|with|vs\.?|versus|to)\s+"
    r"(?P<b>.+?)(?:\s+(?:on|by|in terms of|regarding|across)\s+(?P<z>.+?))?\s*[?.!]*$",
    re.IGNORECASE,
)
_VERSUS = re.compile(
    r"^\s*(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)(?:\s+(?:on|by|in terms of|for)\s+"
    r"(?P<z>.+?))?\s*[?.!]*$",
    re.IGNORECASE,
)
_DIFFERENCE = re.compile(
    r"^\s*(?:what(?:'s| is| are)?\s+)?(?:the\s+)?differences?\s+between\s+(?P<a>.+?)\s+and\s+"
    r"(?P<b>.+?)(?:\s+(?:on|in|in terms of|regarding)\s+(?P<z>.+?))?\s*[?.!]*$",
    re.IGNORECASE,
)
_SPLIT_ACTION = re.compile(
    rf"\s*(?:,\s*and\s+(?:also\s+)?|\s+and\s+(?:also\s+)?(?:then\s+)?|,\s*then\s+|;\s*|,\s*also\s+)"
    rf"(?={_ACTION_START}\b)",
    re.IGNORECASE,
)


_BACK_REFERENCE = re.compile(r"\b(their|them|those|these|they|its|it|that one)\b", re.I)


@dataclass(frozen=True)
class SubQuestion:
    """One part of a decomposed question; ``after_previous`` binds the prior part's result."""

    text: str
    after_previous: bool = False


def is_conversational(question: str) -> bool:
    """Greetings, thanks and "what can you do": nothing to look up."""
    return bool(_CONVERSATIONAL.match(question))


def aggregation_score(question: str) -> tuple[int, bool]:
    """Weighted count of countable cues, and whether a strong one is present."""
    low = question.lower()
    total = 0
    strong = False
    for pattern, weight in _AGGREGATION_CUES:
        if pattern.search(low):
            total += weight
            strong = strong or weight >= 2
    return total, strong


def semantic_score(question: str) -> int:
    """Count of reading / meaning cues (why, describe, notes, similar, fit, …)."""
    low = question.lower()
    return sum(1 for pattern in _SEMANTIC_CUES if pattern.search(low))


def classify_simple(question: str) -> QuestionClass:
    """Aggregation vs semantic for one (already decomposed) question."""
    if is_conversational(question):
        return QuestionClass.CONVERSATIONAL
    agg, strong = aggregation_score(question)
    sem = semantic_score(question)
    if agg > sem or (agg == sem and agg > 0 and strong):
        return QuestionClass.AGGREGATION
    return QuestionClass.SEMANTIC


def classify(question: str) -> QuestionClass:
    """Conversational, compound (two or more parts), aggregation or semantic."""
    if is_conversational(question):
        return QuestionClass.CONVERSATIONAL
    if len(decompose(question)) > 1:
        return QuestionClass.COMPOUND
    return classify_simple(question)


def decompose(question: str, max_parts: int = 6) -> list[SubQuestion]:
    """Split compound and comparative questions into sub-questions, in run order."""
    text = re.sub(r"\s+", " ", question).strip()
    parts: list[SubQuestion] = []
    for index, sentence in enumerate(_sentences(text)):
        pieces = _decompose_one(sentence)
        if index > 0 and len(pieces) == 1 and not pieces[0].after_previous:
            pieces = [_follow_up(pieces[0].text)]
        parts.extend(pieces)
    return parts[:max_parts] if parts else [SubQuestion(text)]


def _sentences(text: str) -> list[str]:
    pieces = re.split(r"(?<=\?)\s+|(?<=[.!])\s+(?=[A-Z])", text)
    return [p.strip() for p in pieces if len(p.strip()) > 2]


def _decompose_one(text: str) -> list[SubQuestion]:
    match = _DEPENDENT.match(text)
    if match:
        first = _trim(match.group("first"))
        z = _trim(match.group("z"))
        head = SubQuestion(f"{first} with the {match.group('dir').lower()} {z}")
        return [head, SubQuestion(f"{_trim(match.group('rest'))} for {{{{s}}}}", True)]
    match = _DEPENDENT_TOP.match(text)
    if match:
        first = _trim(match.group("first"))
        return [
            SubQuestion(first),
            SubQuestion(f"{_trim(match.group('rest'))} for {{{{s}}}}", True),
        ]
    for pattern in (_COMPARE_PREP, _DIFFERENCE, _COMPARE, _VERSUS):
        match = pattern.match(text)
        if match:
            a, b = _trim(match.group("a")), _trim(match.group("b"))
            z = _trim(match.group("z") or "")
            if z:
                return [SubQuestion(f"{z} for {a}"), SubQuestion(f"{z} for {b}")]
            return [SubQuestion(f"Tell me about {a}"), SubQuestion(f"Tell me about {b}")]
    pieces = [p for p in _SPLIT_ACTION.split(text) if p and p.strip()]
    if len(pieces) > 1:
        return [SubQuestion(_trim(pieces[0])), *(_follow_up(p) for p in pieces[1:])]
    return [SubQuestion(_trim(text))]


def _follow_up(text: str) -> SubQuestion:
    """A later part that points back ("their notes") needs the earlier part's result."""
    trimmed = _trim(text)
    if _BACK_REFERENCE.search(trimmed):
        return SubQuestion(f"{trimmed.rstrip('?.!')} for {{{{s}}}}", True)
    return SubQuestion(trimmed)


def _trim(text: str) -> str:
    return text.strip().strip(",;:").strip()


def search_query(question: str) -> str:
    """The question without conversational lead-ins, for hybrid search."""
    cleaned = re.sub(
        r"^\s*(?:(?:hey|hi|hello|ok|okay|so)[,!]?\s+)?(?:please\s+|kindly\s+)?"
        r"(?:(?:can|could|would|will) you\s+(?:please\s+)?)?"
        r"(?:(?:tell|show|give|find|get) (?:me|us)\s+|i (?:want|need|would like) to know\s+)?",
        "",
        question,
        flags=re.IGNORECASE,
    )
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    return cleaned or question.strip()
