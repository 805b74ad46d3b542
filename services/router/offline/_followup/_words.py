"""What every reading step reads a request with: its words cleaned of politeness and final
punctuation, numbers said in words, plural nouns, and the set a count or a listing
question described (so "those deals" can be named again).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Members named in one rewritten question: enough for "their call notes" over a short
# list, short enough that the question still reads as one.
MAX_NAMED_MEMBERS = 8
LEAD = r"^(?:and|but|ok(?:ay)?|so|then|also|now)?[, ]*"
ABOUT = (
    r"(?:what about|how about|and|what of|same for|and what about|now|"
    r"(?:and )?(?:the )?same (?:thing |question |again )?(?:for|in|with)?)"
)
QUESTION_HEAD = re.compile(
    r"^(?:how|what|which|who|whom|whose|when|where|why|is|are|was|were|do|does|did|list|show"
    r"|give|find|count|name)\b",
    re.IGNORECASE,
)
CLAUSE_BOUNDARY = re.compile(
    r"[,;]|\b(?:and|or|but|that|which|who|whom|whose|where|when|while)\b", re.IGNORECASE
)
# A plural noun: "users", not "business", "famous" or "analysis" (the letter before the
# final "s" is looked at before it is consumed, so "ss" is "(?<!s)s").
PLURAL_END = r"(?<!s)(?<!ou)(?<!i)s"
PLURAL_NOUN = rf"[\w'-]+{PLURAL_END}"
PLURAL_BEFORE = re.compile(rf"\b[a-z]{{3,}}{PLURAL_END}\b", re.IGNORECASE)
PLURAL_WORD = re.compile(rf"\b{PLURAL_NOUN}\b", re.IGNORECASE)
NOT_PLURAL = frozenset(
    {"does", "has", "was", "is", "this", "its", "us", "notes", "says", "status", "sales",
     "whats", "thats", "lets", "heres", "theres", "hows", "whos"}
)  # fmt: skip
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
    # "Who are the top 3 salespeople by revenue?": the copula's complement is the set
    re.compile(r"^who (?:are|were) (?:the )?(?P<set>.+?)(?P<rest>)\??$", re.IGNORECASE),
)


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def question_body(question: str) -> str:
    """The question without its final punctuation."""
    return clean(question).rstrip(" ?.!")


def joined_names(members: Sequence[str]) -> str:
    named = list(members[:MAX_NAMED_MEMBERS])
    if len(named) == 1:
        return named[0]
    return ", ".join(named[:-1]) + " and " + named[-1]


def described_set(question: str) -> tuple[str, str] | None:
    """(the set a count or listing question described, the rest of its condition)."""
    body = question_body(question)
    for index, pattern in enumerate(_SET_PATTERNS):
        match = pattern.match(body)
        if match and match.group("set").strip():
            found, rest = match.group("set").strip(), match.group("rest").strip()
            # "How many flights did …", "Which 3 patients weigh …": the verb follows the set
            return _as_noun_phrase(found) if index in (1, 3) else (found, rest)
    return None


_COPULA_HEAD = re.compile(r"^(?:are|is|were|was)\s+(?:the\s+)?", re.IGNORECASE)
_DO_HEAD = re.compile(r"^(?:do|does|did)\s+", re.IGNORECASE)
_PREPOSITION_HEAD = re.compile(
    r"^(?:of|in|on|at|for|from|with|without|by|to|into|above|below|over|under|near|between"
    r"|after|before|during|within|per|than|like|across|along|around|through|since)\b",
    re.IGNORECASE,
)


def _as_noun_phrase(words: str) -> tuple[str, str]:
    """What follows a question's "which"/"what" as a set named inside another question:
    the copula's complement ("are the 5 most expensive cars" → "5 most expensive cars"),
    and a verb after the plural noun as a relative clause ("3 patients weigh the most" →
    "3 patients", "that weigh the most"; "models does gm make" → "models", "that gm
    make"). Spliced in verbatim, "What engines do the are the 3 most expensive cars
    have?" is no question anyone can read."""
    words = _COPULA_HEAD.sub("", words, count=1)
    for noun in PLURAL_WORD.finditer(words):
        if noun.group(0).lower() in NOT_PLURAL:
            continue
        rest = words[noun.end() :].strip()
        if not rest or _PREPOSITION_HEAD.match(rest):
            break  # the noun phrase goes on ("cars of each maker"): kept whole
        if re.match(r"^(?:that|who|which|whose|where)\b", rest, re.I):
            return words[: noun.end()], rest
        return words[: noun.end()], f"that {_DO_HEAD.sub('', rest, count=1)}"
    return words, ""


# Politeness and filler around a follow-up: "could you split that by region please?",
# "ok, now just the top 3." Case and punctuation never matter.
_POLITE_HEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|but|then|also|now|great|thanks|thank you|cool|right|alright|"
    r"hm+|well)\b[,.!]?\s*)*(?:(?:can|could|would|will) you\s+(?:please\s+)?|please\s+"
    r"|(?:can|could|may) i (?:please\s+)?(?:see|get|have)\s+"
    # "I only need the first 2", "I'd like to see 5": what the user wants shown
    r"|i(?:'d| would)?\s+(?:(?:only|just)\s+)?(?:need|want|like)(?:\s+to\s+(?:see|get|have))?\s+)?",
    re.IGNORECASE,
)
_POLITE_TAIL = re.compile(r"(?:[,\s]+(?:please|thanks|thank you|for me))*[\s?.!]*$", re.I)
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "twelve": 12, "fifteen": 15, "twenty": 20, "a single": 1,
}  # fmt: skip
GROUPING = re.compile(
    r"\b(?P<p>for each|for every|in each|of each|per|each|by)\s+(?P<g>[a-z][\w-]*"
    r"(?:\s+of\s+[a-z][\w-]*)?)",
    re.IGNORECASE,
)


def plain(question: str) -> str:
    """The request without politeness, filler and final punctuation."""
    body = _POLITE_TAIL.sub("", clean(question))
    return _POLITE_HEAD.sub("", body, count=1).strip(" ,")


def finish(text: str) -> str:
    text = clean(text)
    text = re.sub(rf"{LEAD}", "", text, count=1, flags=re.I) or text
    text = text[:1].upper() + text[1:]
    return text if text.endswith("?") else text.rstrip(".!") + "?"


# What a follow-up may end on without changing its meaning: "in 2023 alone".
QUALIFIER_TAIL = re.compile(r"\s+(?:alone|only|instead|too|as well|then)$", re.IGNORECASE)
