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

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._picked import picked_condition
from services.router.offline._rules import aggregation_score, semantic_score
from services.router.offline._text import lowered_stems, stem


class Relation(StrEnum):
    """How a follow-up uses the earlier SQL statement (the SQL service's PriorRelation)."""

    NONE = ""  # answered as the resolved question, on the SQL route
    RESULT_SET = "result_set"  # asked about the statement's rows
    ROW_LIMIT = "row_limit"  # the statement with another row count
    REGROUP = "regroup"  # the statement grouped by another column (``dimension``)
    VALUE_SWAP = "value_swap"  # the statement with another stored value (``value``)
    FILTER = "filter"  # the statement with a condition added (``condition``, ``exclude``)
    TIME_SHIFT = "time_shift"  # the statement over another period (``period``)


@dataclass(frozen=True)
class BuildsOn:
    """The earlier SQL turn a follow-up is answered on: it stays on the SQL route, and
    with a relation the SQL service works on the statement itself (``question`` is what
    the SQL service reads: the follow-up as asked for a result-set question)."""

    sql: str
    relation: Relation = Relation.NONE
    question: str = ""
    limit: int = 0
    ascending: bool = False
    dimension: str = ""
    value: str = ""
    add: bool = False
    condition: str = ""
    exclude: bool = False
    period: str = ""
    remove: bool = False  # FILTER: the statement's own condition ``condition`` names, removed


@dataclass(frozen=True)
class Resolution:
    """The standalone question to answer, and how it was obtained."""

    kind: FollowUpKind
    question: str
    reason: str = ""
    builds_on: BuildsOn | None = None

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
_ABOUT = (
    r"(?:what about|how about|and|what of|same for|and what about|now|"
    r"(?:and )?(?:the )?same (?:thing |question |again )?(?:for|in|with)?)"
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may(?= \d)|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_TIME_VALUE = (
    r"(?:(?:in|for|during|since|from|on) )?(?:the )?"
    r"(?:(?:19|20)\d\d|q[1-4](?: (?:19|20)\d\d)?|(?:last|this|next|previous|past) "
    r"(?:year|quarter|month|week|\d+ (?:days|weeks|months|years))|(?:19|20)\d\d-\d\d"
    rf"|{_MONTH}(?: \d{{1,2}}(?:st|nd|rd|th)?)?(?:,? (?:19|20)\d\d)?"
    r"|ytd|year to date)"
)
# A period said relative to the one the previous answer counted: "the year after", "the
# previous quarter", "a month earlier"; and a bound moved: "before 2009", "after 2000".
_GRAIN_WORD = r"(?:year|quarter|month|week|day)"
_MOVED = (
    rf"(?:the )?(?:previous|prior|preceding|following|subsequent) {_GRAIN_WORD}"
    rf"|the next {_GRAIN_WORD}"
    rf"|(?:the )?{_GRAIN_WORD} (?:before|after|earlier|later|prior)(?: that)?"
    rf"|(?:a|an|one|two|three|\d) {_GRAIN_WORD}s? (?:earlier|later|before|after)"
)
_BOUND = r"(?:before|after|until|till|prior to|earlier than|later than|up to|through)"
_PERIOD = rf"(?:{_MOVED}|(?:{_BOUND} )?{_TIME_VALUE})"
_TIME_ONLY = re.compile(rf"^{_LEAD}(?:{_ABOUT} )?(?P<time>{_PERIOD})\s*\??\s*$", re.IGNORECASE)
_TIME_IN_QUESTION = re.compile(rf"\b(?:{_BOUND} )?{_TIME_VALUE}\b", re.IGNORECASE)
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
_SWAP = re.compile(
    rf"^{_LEAD}{_ABOUT} (?:(?P<prep>for|in|with|at|from|to|of|on|by) )?(?P<v>.+?)\s*\??\s*$",
    re.IGNORECASE,
)
# "Turton Urban District instead", "the United States ones instead", "template 11 then":
# a value said in place of the previous question's, with nothing but "instead" around it.
_INSTEAD = re.compile(
    rf"^{_LEAD}(?:(?:the|those|these)\s+)?(?P<v>[^?]+?)(?:\s+ones?)?\s+(?:instead|then)"
    r"\s*[?.!]*$",
    re.IGNORECASE,
)
# "swap Science for Music", "replace 2014 with 2015", "Music instead of Science": the value
# to take out is said, so it is the one replaced.
_CHANGE = re.compile(
    rf"^{_LEAD}(?:swap|replace|switch|change|exchange)\s+(?P<old>[^?]+?)\s+(?:for|with|to)\s+"
    r"(?P<new>[^?]+?)\s*[?.!]*$"
    rf"|^{_LEAD}(?P<new2>[^?]+?)\s+(?:instead of|rather than|in place of)\s+(?P<old2>[^?]+?)"
    r"\s*[?.!]*$",
    re.IGNORECASE,
)
# "switch to Delta", "change to 2 engines", "move over to Boston": the new value said with
# a verb of changing and no old one, which is the value "what about ..." would say.
_SWITCH_TO = re.compile(
    rf"^{_LEAD}(?:switch|change|swap|move)(?: over)? to (?P<v>[^?]+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_QUESTION_HEAD = re.compile(
    r"^(?:how|what|which|who|whom|whose|when|where|why|is|are|was|were|do|does|did|list|show"
    r"|give|find|count|name)\b",
    re.IGNORECASE,
)
# One earlier row pointed at: "he", "she", "his age", "that singer", "this person". Said
# after an auxiliary or a preposition ("which museums did he visit?", "how old is that
# teacher?", "for her"), never as a relative "that" after a noun ("singers that sing").
_ONE_REFERENCE = re.compile(
    r"\b(?:is|was|are|were|do|does|did|has|have|had|can|could|will|would|of|for|in|at|by|"
    r"with|to|from|about|on)\s+(?P<p>he|she|him|her|his|(?:that|this)\s+(?!(?:is|was|are|"
    r"were|has|have|had|does|did|do|means?|year|quarter|month|week|weekend|day|hour|time|"
    r"period|date|season|semester|morning|evening|night|case|point|moment|way|much|many|far|"
    r"long|list|table|result|set|group|answer|query|data|chart|report|one's)\b)"
    r"[a-z]{3,})\b",
    re.IGNORECASE,
)
# One earlier row pointed at by a demonstrative that ends the question ("what type of
# ticker is that?", "who made this?"): a pronoun, not a determiner, as nothing follows it.
_POINTED_LAST = re.compile(
    r"\b(?:is|was|are|were|[a-z]{3,}s|did|made|bought)\s+(?P<p>that|this)\W*$", re.IGNORECASE
)
# "it" ending a question ("who manufactures it?", "when was it sold?" is not): the object
# of its verb, which only an earlier clause or answer can name.
_LAST_IT = re.compile(r"\b(?P<p>it)\W*$", re.IGNORECASE)
# "what's that user's email?": the contracted "is" before the pointer.
_CONTRACTED_POINTER = re.compile(r"'s\s+(?P<p>(?:that|this)\s+[a-z]{3,})\b", re.IGNORECASE)
# "which of them", "those deals", "these", "their", "them", "they".
# "those", "these documents", "those people": a plural noun after the demonstrative is
# what it names.
# "those five", "these 3 teachers": a count between them says how many rows are meant.
_DEMONSTRATIVE = re.compile(
    r"\b(?P<det>those|these)(?: (?P<count>\d{1,3}|two|three|four|five|six|seven|eight|nine|ten)"
    r"\b)?(?: (?!(?:was|is|has|does|its|us)\b)(?P<noun>[a-z]{2,}s|people))?\b",
    re.IGNORECASE,
)
# "that group", "this list": a collective noun after a singular demonstrative points at
# the earlier rows together, as "those" does (not "this list of …", "that group by …",
# which say what they name).
_COLLECTIVE = re.compile(
    r"\b(?P<det>that|this)(?P<count>) (?:group|set|list|bunch|lot|batch)(?P<noun>)\b"
    r"(?! (?:of|by)\b)",
    re.IGNORECASE,
)
_PART_OF = re.compile(r"\b(which|how many|any|each|all|none|some) of (?:them|those|these)\b", re.I)
_PRONOUN = re.compile(r"\b(?P<p>their|them|they)\b", re.IGNORECASE)
_SINGULAR = re.compile(r"\b(?P<p>its|it)\b", re.IGNORECASE)
# "its" as a possessive ("which destinations did its flights fly to?"): the owner is
# something named before, in this question or an earlier answer.
_POSSESSIVE_ITS = re.compile(r"\b(?P<p>its)\s+[a-z]", re.IGNORECASE)
# Before an "its", what could own it in the question itself: a clause of its own
# ("the airline with the most flights and its name") or a noun phrase a determiner opens
# ("the carrier with the largest fleet ... its hub").
_OWNER_BEFORE = re.compile(r"\b(?:the|a|an|this|that|each|every|one)\b", re.IGNORECASE)
# "spend there", "who works there": the place an earlier answer named, never the "there"
# of "are there", "there were", "is there any", "there's".
_PLACE = re.compile(
    r"(?<!\bare )(?<!\bis )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )(?<!'s )\bthere\b"
    r"(?!\s+(?:is|are|was|were|be|been|will|has|have|had|exists?|remains?)\b)(?!')",
    re.IGNORECASE,
)
_AUXILIARY_BEFORE = re.compile(
    r"\b(?:are|were|is|was|do|did|does|have|has|had|can|could|will|would)\s*$", re.IGNORECASE
)
_CLAUSE_BOUNDARY = re.compile(
    r"[,;]|\b(?:and|or|but|that|which|who|whom|whose|where|when|while)\b", re.IGNORECASE
)
# A plural noun: "users", not "business", "famous" or "analysis" (the letter before the
# final "s" is looked at before it is consumed, so "ss" is "(?<!s)s").
_PLURAL_END = r"(?<!s)(?<!ou)(?<!i)s"
_PLURAL_NOUN = rf"[\w'-]+{_PLURAL_END}"
_PLURAL_BEFORE = re.compile(rf"\b[a-z]{{3,}}{_PLURAL_END}\b", re.IGNORECASE)
_PLURAL_WORD = re.compile(rf"\b{_PLURAL_NOUN}\b", re.IGNORECASE)
_NOT_PLURAL = frozenset(
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
_CAPITALISED = re.compile(r"\b[A-Z][\w&'.-]*(?: (?:[A-Z][\w&'.-]*|of|and|&))*(?<! of)(?<! and)")
_PREPOSITION_VALUE = re.compile(
    r"\b(?P<prep>in|for|from|at|with) (?:the )?(?P<v>[a-z][\w-]*(?: [a-z][\w-]*)?)"
    r"(?= companies| accounts| deals| opportunities| industry| region| sector|\?|$| and )",
)

# "healthcare companies": a lowercase value in front of what it qualifies.
# "healthcare companies", "buy transactions", "that are active": a lowercase value in
# front of the plural noun it qualifies, or after "that are".
# ("deals does": a verb or pronoun ending in "s" is no plural noun.)
_NOT_NOUN_S = r"(?:does|says|this|thus|whats|thats|lets|heres|theres|hows|whos)\b"
_ADJECTIVE_VALUE = re.compile(
    rf"\b(?P<v>[a-z][\w-]+) (?=(?!{_NOT_NOUN_S})[a-z]{{3,}}{_PLURAL_END}\b)"
    r"|\bthat are (?P<w>[a-z][\w-]+)\b"
)
_NOT_VALUES = frozenset(
    {
        "the", "all", "many", "which", "what", "our", "open", "new", "of", "top", "how", "most",
        "least", "more", "less", "few", "fewer", "highest", "lowest", "largest", "smallest",
        "total", "average", "distinct", "unique", "different", "each", "every", "any", "some",
        "their", "those", "these", "its", "my", "your", "and", "or", "are", "were", "is", "was",
        "do", "did", "does", "have", "has", "had", "with", "without", "for", "from", "in", "on",
        "at", "by", "per", "to", "than", "other", "same", "first", "last", "best", "worst",
    }
)  # fmt: skip


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
    for noun in _PLURAL_WORD.finditer(words):
        if noun.group(0).lower() in _NOT_PLURAL:
            continue
        rest = words[noun.end() :].strip()
        if not rest or _PREPOSITION_HEAD.match(rest):
            break  # the noun phrase goes on ("cars of each maker"): kept whole
        if re.match(r"^(?:that|who|which|whose|where)\b", rest, re.I):
            return words[: noun.end()], rest
        return words[: noun.end()], f"that {_DO_HEAD.sub('', rest, count=1)}"
    return words, ""


_STEPS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}
_MOVE = re.compile(
    r"^(?:the )?(?:(?P<pre>previous|prior|preceding|following|subsequent|next) "
    rf"(?P<g1>{_GRAIN_WORD})"
    rf"|(?:(?P<n>a|an|one|two|three|\d) )?(?P<g2>{_GRAIN_WORD})s? (?P<post>before|after|earlier"
    r"|later|prior)(?: that)?)$",
    re.IGNORECASE,
)


def _moved(question: str, period: str) -> str | None:
    """The previous question's year, quarter or month moved as ``period`` says ("the
    year after" 2014 is 2015), when the question says one of that grain."""
    move = _MOVE.match(_clean(period))
    if move is None:
        return None
    grain = (move.group("g1") or move.group("g2")).lower()
    word = (move.group("pre") or move.group("post")).lower()
    steps = _STEPS.get((move.group("n") or "one").lower()) or int(move.group("n"))
    steps = -steps if word in ("previous", "prior", "preceding", "before", "earlier") else steps
    body = _body(question)
    if grain == "year" and len(set(re.findall(r"\b(?:19|20)\d\d\b", body))) == 1:
        year = re.search(r"\b(?:19|20)\d\d\b", body)
        assert year is not None
        return f"{body[: year.start()]}{int(year.group(0)) + steps}{body[year.end() :]}?"
    if grain in ("month", "quarter"):
        unit = 1 if grain == "month" else 3
        said = re.search(rf"\b(?P<m>{_MONTH})\w*,? (?P<y>(?:19|20)\d\d)\b", body, re.I)
        quarter = re.search(r"\bq(?P<q>[1-4]) (?P<y>(?:19|20)\d\d)\b", body, re.I)
        if grain == "quarter" and quarter:
            index = int(quarter.group("y")) * 4 + int(quarter.group("q")) - 1 + steps
            return f"{body[: quarter.start()]}Q{index % 4 + 1} {index // 4}{body[quarter.end() :]}?"
        if said:
            month = [m.lower()[:3] for m in calendar.month_abbr[1:]].index(
                said.group("m")[:3].lower()
            )
            index = int(said.group("y")) * 12 + month + steps * unit
            text = f"{calendar.month_name[index % 12 + 1]} {index // 12}"
            return f"{body[: said.start()]}{text}{body[said.end() :]}?"
    return None


def _with_time(question: str, time: str) -> str:
    """``question`` asked about ``time`` instead of its own period (or with one added)."""
    time = _clean(time)
    if (moved := _moved(question, time)) is not None:
        return moved
    if not re.match(
        rf"^(?:in|for|during|since|from|on|last|this|next|previous|past|the|{_BOUND})\b", time, re.I
    ):
        time = f"in {time}"
    body = _body(question)
    if old := _TIME_IN_QUESTION.search(body):
        year = re.search(r"\b(?:19|20)\d\d\b", old.group(0))
        if year and re.search(_MONTH, time, re.I) and not re.search(r"\b(?:19|20)\d\d\b", time):
            time = f"{time} {year.group(0)}"  # "and february?" after "in January 2023"
        body = body[: old.start()] + time + body[old.end() :]
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
        group = "v" if match.group("v") else "w"
        start, end = match.span(group)
        word = match.group(group)
        if word.lower() not in _NOT_VALUES and not any(s <= start < e for s, e, _ in spans):
            spans.append((start, end, word))
    for match in _PREPOSITION_VALUE.finditer(body):
        start, end = match.span("v")
        if not any(s <= start < e for s, e, _ in spans):
            spans.append((start, end, match.group("v")))
    return sorted(spans)


_LITERAL = re.compile(r"'((?:[^']|'')+)'|\b(\d+(?:\.\d+)?)\b")


def _statement_slots(prior: PriorTurn) -> list[tuple[int, int, str]]:
    """Spans of the prior question that hold a value its statement compared: the
    previous plan says which words were values, whatever their case or shape."""
    if not prior.sql:
        return []
    body = _body(prior.resolved_question)
    spans: list[tuple[int, int, str]] = []
    for match in _LITERAL.finditer(prior.sql):
        literal = (match.group(1) or match.group(2)).replace("''", "'").strip()
        if not literal or (match.group(2) and re.fullmatch(r"(?:19|20)\d\d", literal)):
            continue  # a year is a period: time shifts handle it
        # the value as said, plural too ("dogs" for 'dog')
        found = re.search(rf"(?<![\w-]){re.escape(literal)}(?:e?s)?(?![\w-])", body, re.I)
        if found and not any(a <= found.start() < b for a, b, _ in spans):
            spans.append((found.start(), found.end(), found.group(0)))
    return sorted(spans)


def _literals(sql: str, *, numeric: bool) -> int:
    """How many values (strings, or numbers that are no year) a statement compares: one
    said in the question is the one a swap replaces only when it is the only one; a name
    said otherwise ("United" for 'United Air Lines Inc.') is another the question holds."""
    found = {
        (m.group(1) or m.group(2)).lower()
        for m in _LITERAL.finditer(sql)
        if bool(m.group(2)) == numeric
        and not (m.group(2) and re.fullmatch(r"(?:19|20)\d\d", m.group(2)))
    }
    return len(found)


def _trimmed_value(value: str, body: str, end: int) -> str:
    """``value`` without the words the question already says after the slot ("topical
    drugs" for "a biologic drug" → "topical") or that only point back ("failed ones")."""
    words = re.sub(r"\s+(?:ones?|too|instead|as well)$", "", value, flags=re.I).split()
    following = [w.lower() for w in re.findall(r"[\w-]+", body[end:])[:2]]
    while (
        len(words) > 1
        and following
        and words[-1].lower().rstrip("s") in {f.rstrip("s") for f in following}
    ):
        words = words[:-1]
    return " ".join(words) or value


def _without_said_context(value: str, body: str, slots: Sequence[tuple[int, int, str]]) -> str:
    """ "grade 12" after "… in grade 9": the words the earlier question says just before
    a compared value ("grade") name its column again; the new value is what follows."""
    words = value.split()
    for start, _, _ in slots:
        before = re.findall(r"[\w'-]+", body[:start])
        for size in range(min(len(words) - 1, len(before)), 0, -1):
            if [w.lower() for w in words[:size]] == [w.lower() for w in before[-size:]]:
                return " ".join(words[size:])
    return value


def _swap(prior: PriorTurn, value: str, history: Sequence[PriorTurn], prep: str = "") -> str | None:
    """The prior question with one named value replaced by ``value``: the value its
    statement compared when one fits (a number for a number), else a slot read from the
    question's shape."""
    body = _body(prior.resolved_question)
    value = _without_said_context(value, body, _statement_slots(prior))
    numeric = bool(re.fullmatch(r"\d+(?:\.\d+)?", value))
    compared = [s for s in _statement_slots(prior) if s[2].replace(".", "").isdigit() == numeric]
    if len(compared) == 1 and _literals(prior.sql, numeric=numeric) <= 1:
        start, end, _ = compared[0]
        return f"{body[:start]}{_trimmed_value(value, body, end)}{body[end:]}?"
    slots = _slots(prior.resolved_question)
    if numeric:
        slots = [
            (m.start(), m.end(), m.group(0))
            for m in re.finditer(r"\b\d+(?:\.\d+)?\b", body)
            if not re.fullmatch(r"(?:19|20)\d\d", m.group(0))
        ]
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
        slots = _fitting_slots(slots, value, prep, body)
        same_case = [s for s in slots if s[2][:1].isupper() == value[:1].isupper()]
        candidates = same_case or slots
        words = len(value.split())
        # Prefer a slot shaped like the new value (same word count), the last one on a tie:
        # the value a follow-up changes is usually the one the question ended on.
        chosen = max(candidates, key=lambda s: (len(s[2].split()) == words, s[0]))
    start, end, _ = chosen
    return f"{body[:start]}{_trimmed_value(value, body, end)}{body[end:]}?"


_PERIOD_SLOT = re.compile(rf"^(?:{_MONTH}|(?:19|20)\d\d|q[1-4])\b", re.IGNORECASE)
_CODE = re.compile(r"^[A-Z0-9]{2,5}$")


def _fitting_slots(
    slots: list[tuple[int, int, str]], value: str, prep: str, body: str
) -> list[tuple[int, int, str]]:
    """The slots a new value can stand in for, read from the question's shape when no
    statement says which value was compared: the one slot the same preposition opens
    ("and at LGA?" replaces "at EWR", not "in July"); never a period for a value that is
    none (a month is moved by a time shift); a code for a code ("JFK", "UA") and a name
    for a name ("Delta" replaces "American Airlines Inc.", not "LGA"). Each narrowing
    applies only where it leaves some slot."""
    if prep:
        opened = [
            s
            for s in slots
            if re.search(rf"\b{re.escape(prep)}\s+(?:the\s+)?$", body[: s[0]], re.I)
        ]
        if len(opened) == 1:
            return opened
    if not _PERIOD_SLOT.match(value):
        timeless = [s for s in slots if not _PERIOD_SLOT.match(s[2])]
        slots = timeless or slots
    # "from LGA" is a code said with its preposition
    bare = re.sub(r"^(?:from|to|at|in|for|of|by|on|with)\s+", "", value, flags=re.I)
    shaped = [s for s in slots if bool(_CODE.match(s[2])) == bool(_CODE.match(bare))]
    return shaped or slots


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


def _unowned_its(question: str) -> re.Match[str] | None:
    """A possessive "its" nothing in the question before it can own: no clause before
    it and no noun phrase a determiner opens ("which destinations did its flights fly
    to?"). Whatever owns it was named by an earlier turn."""
    match = _POSSESSIVE_ITS.search(question)
    if match is None:
        return None
    # (the question's own opening "which"/"where" opens no earlier clause)
    before = re.sub(
        r"^\W*(?:which|who|whose|where|when)\b", "", question[: match.start()], flags=re.I
    )
    if _CLAUSE_BOUNDARY.search(before) or _OWNER_BEFORE.search(before):
        return None
    return match


def _one_row_pointer(question: str) -> re.Match[str] | None:
    """A pointer at one earlier row: "he", "that singer" after a verb or preposition, "that
    user's" after a contracted "is", or a demonstrative ending the question."""
    return (
        _ONE_REFERENCE.search(question)
        or _CONTRACTED_POINTER.search(question)
        or _POINTED_LAST.search(question)
    )


def _unowned_singular(question: str) -> re.Match[str] | None:
    """An "its", or an "it" ending the question, that nothing before it in the question
    can own (no clause, no noun phrase a determiner opens): an earlier answer's row."""
    return _unowned_its(question) or _unowned_last_it(question)


def _unowned_last_it(question: str) -> re.Match[str] | None:
    """An "it" ending the question ("who manufactures it?") with no owner before it."""
    match = _LAST_IT.search(question)
    if match is None:
        return None
    before = re.sub(
        r"^\W*(?:which|who|whose|where|when|what)\b", "", question[: match.start()], flags=re.I
    )
    if _CLAUSE_BOUNDARY.search(before) or _OWNER_BEFORE.search(before):
        return None
    return match


def _has_unanchored_pronoun(question: str) -> re.Match[str] | None:
    """A their/them/they with no plural noun before it in the same question (which
    would be its antecedent, as in "companies and their owners")."""
    for match in _PRONOUN.finditer(question):
        before = question[: match.start()]
        if match.group("p").lower() != "their" and _AUXILIARY_BEFORE.search(before):
            # "what categories are they in?", "how many cars did they buy?": the subject
            # of an inverted question, not the noun asked about.
            return match
        if match.group("p").lower() == "them":
            # An object pronoun never means a noun of its own clause ("flights" in "how
            # many flights went to them?": that would be "themselves"); only a noun of an
            # earlier clause can be its antecedent ("list the products and who bought them").
            starts = [b.start() for b in _CLAUSE_BOUNDARY.finditer(before)]
            before = before[: starts[-1]] if starts else ""
        nouns = [
            m.group(0)
            for m in _PLURAL_BEFORE.finditer(before)
            if m.group(0).lower() not in _NOT_PLURAL
            # "who makes them": the word after a subject "who" is its verb, no noun
            and not re.search(r"\bwho\s+$", before[: m.start()], re.I)
        ]
        if not nouns:
            return match
    return None


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
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "twelve": 12, "fifteen": 15, "twenty": 20, "a single": 1,
}  # fmt: skip
# "best" and "worst" say no direction: the worst months of delays are those with the most
# delays, the worst sellers those with the fewest sales; which end is bad is the measure's
# meaning, which no words of the request tell, so neither reads as a limit's end.
_LOWEST = ("bottom", "lowest", "smallest", "least", "fewest", "last")
# "only the top 2", "just 3", "show me the first 10 instead", "bottom 5", "top three only".
_LIMIT = re.compile(
    r"^(?:(?P<verb>(?:limit|cut|trim|reduce|shorten|extend|widen|expand|increase|bring|change)"
    r"(?:\s+(?:it|that|this|the list))?(?:\s+(?:down|up|back))?\s+to\s+)"
    r"|make (?:it|that|this)\s+(?:(?:a|an)\s+)?"
    r"|(?P<fewer>fewer|less|more)\s*[-\u2013\u2014:,]?\s*)?(?:(?:only|just)\s+)?"
    r"(?:(?:show|give|list|keep|return)(?:\s+me)?\s+)?(?:(?:only|just)\s+)?(?:the\s+)?"
    r"(?P<dir>top|first|highest|largest|biggest|most|leading|" + "|".join(_LOWEST) + r")?\s*"
    r"(?P<n>\d{1,4}|" + "|".join(_NUMBER_WORDS) + r")"
    r"(?:\s+(?:ones?|results?|rows?|items?|entries|records|of (?:them|those|these)))?"
    r"(?P<tail>(?:\s+(?:only|instead|then|(?:is|are) (?:enough|fine|plenty)|(?:will|would|"
    r"should) do))*)$",
    re.IGNORECASE,
)
# "split that by region", "by category instead", "break it down by state", "now per month".
_LIMIT_CUE = re.compile(r"^(?:only|just|show|give|keep|list|limit|cut|make)\b", re.I)
_REGROUP = re.compile(
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
# "only those in California", "just the ones from 2023", "only the active ones".
_NARROW = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:only|just)\s+)(?:(?:show|count|keep|list|include|"
    r"consider)\s+)?(?:(?:me|the|those|these|ones|them)\s+)*(?P<f>.+?)"
    r"(?:\s+(?:ones?|only))?$",
    re.IGNORECASE,
)
# "keep only the stocks", "show only the ETFs", "restrict it to CA", "filter to 2023".
_NARROW_VERB = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:keep|show|list|count|include)\s+only"
    r"|(?:restrict|filter|narrow|limit)(?:ed)?(?:\s+(?:it|that|this|them|those|these))?"
    r"(?:\s+down)?\s+to)"
    r"\s+(?:(?:me|the|those|these|ones|them)\s+)*(?P<f>.+?)(?:\s+(?:ones?|only))?$",
    re.IGNORECASE,
)
# "keep the ones with more than 2 transactions", "keep those over 50000", "keep the
# vendors we paid more than 10000", "keep the ones using a Book template" ("using" and
# "having" qualify as "with" does): the rows to keep, said with what qualifies them (a
# row count, "keep the top 3", is read before).
_KEEP = re.compile(
    r"^(?:(?:and|but|now)\s+)*keep\s+(?:only\s+)?(?P<f>(?:the ones|those|ones|the\s+[a-z][\w'-]*s)"
    r"\s+(?:with|without|that|which|who|where|whose|in|from|over|under|above|below|more|less"
    r"|fewer|older|younger|after|before|since|we|they|you|using|having)\b.+)$",
    re.IGNORECASE,
)
_NARROW_AFTER = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:those|the ones|ones|them)\s+(?P<f>.+?)(?:\s+only)?$",
    re.IGNORECASE,
)
# "among them, the ones with private insurance", "of those, only the active ones".
_AMONG = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:among|of|from|out of|within)\s+(?:them|those|these|the results?"
    r"|that)\s*,?\s*(?:(?:only|just)\s+)?(?:(?:the ones|those|ones|the)\s+)?(?P<f>.+?)"
    r"(?:\s+(?:ones?|only))?$",
    re.IGNORECASE,
)
# "female only", "the 2023 ones only": a condition the request ends on "only".
_NARROW_TAIL = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:the|those)\s+)?(?P<f>[\w'.&-]+(?:\s+[\w'.&-]+){0,3}?)"
    r"(?:\s+ones?)?\s+only$",
    re.IGNORECASE,
)
# "unread ones", "the 2023 ones": a qualifier said of "ones", the earlier rows' stand-in,
# and nothing else (not a word that only points: "those ones", "the other ones"; no
# determiner inside: "list the europe ones" is a request, its verb no qualifier). Read as
# a narrowing only after a statement that compares nothing (see ``_qualified_ones``):
# after one that does, "the Asian ones" may be another value.
_QUALIFIED_ONES = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:the|those|these)\s+)?"
    r"(?P<f>(?!(?:the|those|these|other|same|all|any|some|both|which|what|such)\b)"
    r"[\w'.&-]+(?:\s+(?!(?:the|those|these|a|an)\b)[\w'.&-]+){0,2}?)\s+ones$",
    re.IGNORECASE,
)
_WHERE = re.compile(r"\bWHERE\b", re.IGNORECASE)


def _qualified_ones(text: str, prior: PriorTurn) -> re.Match[str] | None:
    """ "unread ones" after notifications per type: the earlier rows that are unread. Only
    where the previous statement compares nothing, so the qualifier can be no value put in
    place of one it compares (that stays a value swap, read with the stored values); a
    qualifier no column holds is refused by the SQL service, which reads every word."""
    if _WHERE.search(prior.sql):
        return None
    return _QUALIFIED_ONES.match(text)


# "where the price is under 100", "with more than 5 rooms", "whose age is over 40": a
# clause that qualifies the previous answer's rows, said on its own.
_CLAUSE = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:the ones|those|ones)\s+)?(?P<f>(?:where|whose|with|having|"
    r"that|which|who)\s+.+)$",
    re.IGNORECASE,
)
# "what about older than 40?", "and under 100?": a comparison put in place of the previous
# one (comparatives: "-er than", more / less / fewer than, over / under a number).
_COMPARISON = re.compile(
    r"^(?:[a-z]+er|more|less|fewer|greater|over|under|above|below|at least|at most)\b"
    r"(?:\s+than)?\s+\$?\d",
    re.IGNORECASE,
)
# "exclude placebo treatments", "without the cancelled ones"; the verb's particle may
# follow its object: "leave the placebo treatments out", "take the refunds out".
_EXCLUDE = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?P<verb>exclude|excluding|without|except(?: for)?|leave out|"
    r"take out|filter out|remove|drop|ignore|not counting|minus|not)\s+(?:the\s+)?"
    r"(?P<f>.+?)(?:\s+ones)?"
    r"|(?:leave|take|filter|keep)\s+(?:the\s+)?(?P<g>(?!(?:it|that|this|them)\b).+?)"
    r"(?:\s+ones)?\s+out)$",
    re.IGNORECASE,
)
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
    text = _plain(question)
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
        quoted = re.search(rf"'{re.escape(value)}'", conditions, re.I)
        number = re.fullmatch(r"\d+(?:\.\d+)?", value) and re.search(
            rf"(?<![\w.']){re.escape(value)}(?![\w.'])", conditions
        )
        if quoted or number:
            return value
    return None


# "drop the suspended ones", "remove those that failed": a verb of removing whose object
# is part of the previous rows, said by a qualifier on "ones" or "those"; after an answer
# of several rows it hides some of them. "drop them", "delete the cancelled orders" name
# no part of the answer (or name data): requests to change data, declined.
_HIDES_PART = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:drop|remove)\s+(?:(?:the\s+)?\S.*\s+ones|(?:the ones|those)"
    r"\s+(?:that|which|who|with|without|in|from|where|whose)\s+\S.*)$",
    re.IGNORECASE,
)
# "only", "just", "top": the words that make "the first one" a row count, not a pick.
_RESTRICTIVE = re.compile(r"\b(?:only|just|top)\b", re.IGNORECASE)
# What a follow-up may end on without changing its meaning: "in 2023 alone".
_QUALIFIER_TAIL = re.compile(r"\s+(?:alone|only|instead|too|as well|then)$", re.IGNORECASE)
_CONDITION_HEAD = re.compile(
    r"^(?:in|from|with|without|at|for|that|which|who|where|whose|over|under|above|below|"
    r"older|younger|more|less|greater|fewer|before|after|between|since|during|born|made|"
    r"created|having|using|not)\b",
    re.IGNORECASE,
)
_GROUPING = re.compile(
    r"\b(?P<p>for each|for every|in each|of each|per|each|by)\s+(?P<g>[a-z][\w-]*"
    r"(?:\s+of\s+[a-z][\w-]*)?)",
    re.IGNORECASE,
)


def _plain(question: str) -> str:
    """The request without politeness, filler and final punctuation."""
    body = _POLITE_TAIL.sub("", _clean(question))
    return _POLITE_HEAD.sub("", body, count=1).strip(" ,")


# "show just the first", "only the top": the one row a ranking puts first, said with no
# count ("only the first one" has its count).
_FIRST_ALONE = re.compile(
    r"(?:(?:show|give|list|keep)(?:\s+me)?\s+)?(?:only|just)\s+the\s+(?:first|top)(?:\s+only)?",
    re.IGNORECASE,
)


def _limit(text: str) -> tuple[int, bool] | None:
    """(rows, lowest first) for a row-count change; a year is a period, not a count."""
    if _FIRST_ALONE.fullmatch(text):
        return 1, False
    if (first := _COUNT_FIRST.match(text)) is not None:
        number = first.group("n").lower()
        rows = _NUMBER_WORDS.get(number) or int(number)
        return (rows, first.group("dir").lower() in _LOWEST) if rows >= 1 else None
    match = _LIMIT.match(text)
    if match is None:
        return None
    number = match.group("n").lower()
    rows = _NUMBER_WORDS.get(number) or int(number)
    cue = (
        match.group("dir")
        or match.group("tail")
        or match.group("fewer")
        or match.group("verb")
        or _LIMIT_CUE.match(text)
    )
    if not cue or rows < 1 or (len(number) == 4 and 1900 <= rows <= 2100):
        return None
    return rows, (match.group("dir") or "").lower() in _LOWEST


# "only the oldest 2" after "Who are the 3 oldest teachers?": the ranking the previous
# question said (its own superlative), cut to another number of rows.
# "the 5 lowest", "3 highest ones": a row count with the end of the ranking it keeps.
_COUNT_FIRST = re.compile(
    r"^(?:(?:only|just)\s+)?(?:the\s+)?(?P<n>\d{1,4}|" + "|".join(_NUMBER_WORDS) + r")\s+"
    r"(?P<dir>top|highest|largest|biggest|most|" + "|".join(_LOWEST) + r")"
    r"(?:\s+(?:ones?|results?|rows?))?(?:\s+(?:only|instead))?$",
    re.IGNORECASE,
)
_RANKED_LIMIT = re.compile(
    r"^(?:(?:only|just)\s+)?(?:(?:show|give|list|keep)(?:\s+me)?\s+)?(?:the\s+)?"
    r"(?P<rank>[a-z]{3,}est|most \w+)\s+(?P<n>\d{1,4}|" + "|".join(_NUMBER_WORDS) + r")"
    r"(?:\s+(?:ones?|results?|rows?|of (?:them|those|these)))?(?:\s+(?:only|instead))?$",
    re.IGNORECASE,
)


def _same_ranking_limit(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
    """(rows, False) when the request cuts the previous question's own ranking, named by
    the superlative that question used; another superlative is another ranking."""
    match = _RANKED_LIMIT.match(text)
    if match is None or not re.search(
        rf"\b{re.escape(match.group('rank'))}\b", prior.resolved_question, re.I
    ):
        return None
    number = match.group("n").lower()
    rows = _NUMBER_WORDS.get(number) or int(number)
    return (rows, False) if rows >= 1 else None


def _bare_count(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
    """ "5" (or "5 please") after a ranking cut by a LIMIT: that many rows of it."""
    number = _NUMBER_WORDS.get(text.lower()) or (int(text) if re.fullmatch(r"\d{1,3}", text) else 0)
    if number < 1 or not re.search(r"\bLIMIT\s+\d+\s*;?\s*$", prior.sql, re.I):
        return None
    return number, False


def _limit_of_named_rows(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
    """ "just the top 3 airlines" after "… by airline": a row count that names the rows
    in a word of the previous question."""
    head, _, last = text.rstrip(" ?.!").rpartition(" ")
    if not head or stem(last) not in {s for _, s in lowered_stems(prior.resolved_question)}:
        return None
    return _limit(head)


# A superlative of size, which ranks by the earlier answer's own measure ("the most",
# "the biggest buyer"); "the oldest" or "the cheapest" ranks by another column.
_MAGNITUDE = r"(?P<sup>most|highest|largest|biggest|greatest|top|least|fewest|lowest|smallest)"
_LOW_MAGNITUDE = frozenset({"least", "fewest", "lowest", "smallest"})
# "which one had the most?", "which concert sold the most?", "who bought the most?": a
# question for one of the earlier groups, its measure left unsaid after the superlative
# (or said again in the earlier question's words).
_WHICH_MOST = re.compile(
    r"^(?:which|who)(?:\s+(?:one|of (?:them|those|these)|(?P<noun>[a-z]+)))?\s+[a-z]+\s+the\s+"
    + _MAGNITUDE
    + r"(?P<rest>(?:\s+[\w'-]+){0,2})$",
    re.IGNORECASE,
)
# "only the biggest buyer", "just the top spender": one row (a singular noun, no count),
# the first of a ranking by the earlier measure.
_ONLY_THE_TOP = re.compile(
    r"^(?:(?:show|give|keep|list)(?:\s+me)?\s+)?(?:only|just)\s+the\s+"
    + _MAGNITUDE
    + r"\s+(?P<noun>[a-z]+)$",
    re.IGNORECASE,
)
# "just the one with the most", "only the stadium with the highest": the same one row,
# the group named by a noun and the superlative put after "with" (its measure unsaid,
# or said again in the earlier question's words).
_THE_ONE_WITH = re.compile(
    r"^(?:(?:show|give|keep|list)(?:\s+me)?\s+)?(?:only|just)\s+the\s+(?P<noun>[a-z]+)"
    r"\s+with\s+the\s+" + _MAGNITUDE + r"(?P<rest>(?:\s+[\w'-]+){0,2})$",
    re.IGNORECASE,
)
_AGGREGATE = re.compile(r"\b(?:COUNT|SUM|AVG|MIN|MAX)\s*\(", re.IGNORECASE)


def _measured_groups(prior: PriorTurn) -> bool:
    """Whether the earlier answer is a breakdown: several groups (``GROUP BY``), one
    measure (one aggregate), in no order of its own and uncut (no ``ORDER BY``, no
    ``LIMIT``), so its top row is the one its measure ranks first."""
    return (
        prior.row_count > 1
        and re.search(r"\bGROUP\s+BY\b", prior.sql, re.I) is not None
        and len(_AGGREGATE.findall(prior.sql)) == 1
        and re.search(r"\b(?:ORDER\s+BY|LIMIT)\b", prior.sql, re.I) is None
    )


def _names_groups(noun: str, prior: PriorTurn) -> bool:
    """Whether ``noun`` names the earlier breakdown's groups: the word its question
    grouped by ("concert" after "… in each concert"), or the agent of its verb ("buyer"
    after "… did each visitor buy"). "Which singer had the most concerts?" after singers
    per concert names other rows and asks anew."""
    grouped = {
        stem(m.group("g").split()[-1].lower()) for m in _GROUPING.finditer(prior.resolved_question)
    }
    word = stem(noun.lower())
    if word in grouped:
        return True
    said = {s for _, s in lowered_stems(prior.resolved_question)}
    agent = re.sub(r"(?:er|or)$", "", word)
    return agent != word and (agent in said or f"{agent}e" in said)


def _top_of_groups(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
    """(1, lowest first) for a request for the one group the earlier breakdown's measure
    ranks first: "which one had the most?" after "How many singers performed in each
    concert?", "only the biggest buyer" after "How many tickets did each visitor buy?".
    A noun it says must name the groups, and what follows the superlative must be the
    measure said again in the earlier question's words: "which museum had the most?" or
    "which one had the most awards?" after tickets per visitor asks about something else."""
    if not _measured_groups(prior):
        return None
    match = _WHICH_MOST.match(text) or _THE_ONE_WITH.match(text)
    if match is not None:
        noun, rest = match.group("noun"), match.group("rest")
        said = {s for _, s in lowered_stems(prior.resolved_question)}
        if noun and noun.lower() != "one" and not _names_groups(noun, prior):
            return None
        if not re.fullmatch(r"\s*(?:of (?:them|those|these))?", rest) and any(
            stem(w) not in said for w in re.findall(r"[a-z][\w'-]*", rest.lower())
        ):
            return None
    else:
        match = _ONLY_THE_TOP.match(text)
        if match is None or _PLURAL_WORD.fullmatch(match.group("noun")):
            return None
        if match.group("noun").lower() != "one" and not _names_groups(match.group("noun"), prior):
            return None
    return 1, match.group("sup").lower() in _LOW_MAGNITUDE


def _with_limit(question: str, rows: int, lowest: bool) -> str:
    """The previous question asking for ``rows`` rows (for reading; the SQL service
    changes the statement itself)."""
    body = _body(question)
    ranked = re.search(r"\b(top|first|bottom|last)\s+(\d+)\b", body, re.I) or re.search(
        r"\b(which|what|the)\s+(\d+)\b", body, re.I
    )
    if ranked:
        body = f"{body[: ranked.start(2)]}{rows}{body[ranked.end(2) :]}"
        if lowest:
            # the other end of a ranking from the highest: its opposite word
            body = _HIGHEST.sub(lambda m: _OPPOSITE[m.group(0).lower()], body, count=1)
        return f"{body}?"
    return f"{body}, {'bottom' if lowest else 'top'} {rows} only?"


_HIGHEST = re.compile(r"\b(?:most|highest|largest|biggest|best|top)\b", re.IGNORECASE)
_OPPOSITE = {"most": "least", "highest": "lowest", "largest": "smallest", "biggest": "smallest",
             "best": "worst", "top": "bottom"}  # fmt: skip


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


def _regrouped(question: str, dim: str, *, add: bool) -> str:
    """The previous question grouped by ``dim`` instead of its own grouping (or as well)."""
    body = _body(question)
    found = [m for m in _GROUPING.finditer(body) if m.group("p").lower() != "by"]
    found = found or list(_GROUPING.finditer(body))
    if found and not add:
        last = found[-1]
        return f"{body[: last.start('g')]}{dim}{body[_grouping_end(body, last) :]}?"
    if found:
        return f"{body} and by {dim}?"
    return f"{body} by {dim}?"


def _narrowed(question: str, condition: str) -> Resolution:
    """The previous question with a condition added."""
    condition = re.sub(
        r"^(?:ones\s+|that are\s+|who are\s+|which are\s+)", "", condition, flags=re.I
    )
    if _TIME_IN_QUESTION.fullmatch(condition) or re.fullmatch(
        r"(?:in|from|during|for)\s+(?:19|20)\d\d", condition, re.I
    ):
        time = re.sub(r"^from\s+", "in ", condition, flags=re.I)
        return Resolution(
            FollowUpKind.FILTER,
            _with_time(question, time),
            builds_on=BuildsOn("", Relation.TIME_SHIFT, period=time),
        )
    if re.match(r"^\d+(?:\.\d+)?\s+[a-z]", condition, re.I):
        condition = f"with {condition}"  # "only the 6 cylinder ones"
    words = condition.split()
    # The SQL service reads every word: "grades above 10" names the column it compares.
    said = condition
    head = next((i for i, w in enumerate(words[:4]) if _CONDITION_HEAD.match(w)), None)
    if head:
        # "cars that cost more than 30k": the condition is what follows the noun.
        condition = " ".join(words[head:])
    elif head is None:
        body = _body(question).lower()
        if len(words) > 1 and re.search(rf"\b{re.escape(words[-1].lower())}\b", body):
            words = words[:-1]  # "female patients" after a question about patients
        said = " ".join(words)
        condition = f"that are {said}"
    built = BuildsOn("", Relation.FILTER, condition=_condition_words(said))
    return Resolution(
        FollowUpKind.FILTER, _after_subject(_body(question), condition) + "?", builds_on=built
    )


def _relative_after_those(text: str, match: re.Match[str]) -> bool:
    """Whether a narrowing's "who"/"which" opens a relative clause on the rows, not a
    question: said right after "those" or "the ones" ("just those who performed in 2015",
    "only the ones which sold out") it says which of the rows are kept, as "those that …"
    does; "only which ones …?" and "just who …?" still ask."""
    before = text[: match.start("f")]
    return (
        re.match(r"^(?:who|which)\s+\S", match.group("f"), re.I) is not None
        and re.search(r"\b(?:those|the ones)\s+$", before, re.I) is not None
    )


_LISTED = re.compile(
    rf"^(?P<head>(?:which|what)\s+(?:[\w'-]+\s+){{0,2}}?{_PLURAL_NOUN})\s+(?P<rest>\S.*)$", re.I
)


_NOT_NOUNS = frozenset({"is", "was", "has", "does", "this", "its", "his", "as", "us"})


_COUNTED = re.compile(
    r"^(?P<head>(?:list|show(?: me)?|give me|name|find|how many)\s+(?:(?:all|the|every)\s+)?"
    rf"(?:[\w'-]+\s+){{0,2}}?{_PLURAL_NOUN})\s+(?P<rest>\S.*)$",
    re.I,
)


def _after_subject(body: str, condition: str) -> str:
    """The condition where it qualifies the rows listed: right after the plural noun a
    "which …", "list the …" or "how many …" question opens with ("Which teachers older
    than 30 teach Math", "List the customers in CA who joined in 2020"), else at the end;
    at the end it would read as part of the last phrase ("teach Math older than 30",
    "joined in 2020 in CA")."""
    listed = _LISTED.match(body) or _COUNTED.match(body)
    noun = listed.group("head").split()[-1].lower() if listed else ""
    if (
        listed is None
        or noun in _NOT_NOUNS
        or listed.group("rest").lower().startswith(("of ", "and ", "or "))
    ):
        return f"{body} {condition}"
    return f"{listed.group('head')} {condition} {listed.group('rest')}"


def _document_question(question: str) -> bool:
    """A follow-up that names document content ("what do their notes say …") leaves the
    SQL route; anything countable or listable stays."""
    return semantic_score(question) > aggregation_score(question)[0]


# A noun naming a kind of record, said before the one meant ("in the document Customer
# reviews", "the sheet Budget"): it says where a value is, not what any text says.
_RECORD_NOUN = re.compile(r"\b(?:the |a |an )?(?:document|sheet|article|wiki)s?\b", re.I)

# How a follow-up edits the earlier statement: another condition, value, period, row
# count or grouping (not a question about its rows, which may ask what their text says).
_EDITS = frozenset({Relation.FILTER, Relation.VALUE_SWAP, Relation.TIME_SHIFT,
                    Relation.ROW_LIMIT, Relation.REGROUP})  # fmt: skip


def _leaves_sql(question: str, resolution: Resolution) -> bool:
    """Whether a follow-up to a SQL answer leaves its statement for the documents. One
    that edits the statement (narrows it to a value, swaps one) stays on it unless it
    asks about content with more than a record's kind: "only in the document Customer
    reviews" after "How many paragraphs are there?" narrows the count to a value the
    schema may store (the SQL service reads it there, or refuses), where "only those
    whose notes mention pricing" asks what text says."""
    built = resolution.builds_on
    if built is None or built.relation not in _EDITS:
        return _document_question(question)
    if built.value:
        # the value swapped in is data, not a cue: a title reads "How to write a CV"
        question = re.sub(re.escape(built.value), " ", question, flags=re.I)
    if built.relation is Relation.FILTER and (one := _HAVING_ONE.match(built.condition)):
        # "just those with a feature": a kind of related row the earlier rows have (the
        # SQL service reads it as their having one, or refuses), not what text says
        question = re.sub(rf"\b{re.escape(one.group('noun'))}\b", " ", question, flags=re.I)
    return _document_question(_RECORD_NOUN.sub(" ", question))


# A filter that says only that a related row exists ("with a feature", "that have at
# least one visit"), and its noun: no value, no text, just the having of one.
_HAVING_ONE = re.compile(
    r"^(?:(?:that|which|who)\s+)?(?:have|has|had|having|with)\s+"
    r"(?:at\s+least\s+one|one\s+or\s+more|a|an|any|some)\s+(?P<noun>[a-z][a-z ]*?)\s*[?.!]*$",
    re.IGNORECASE,
)


# "same but by state", "same thing, but from LGA": the previous request with what follows
# "but" changed; "but" alone leads many a new question, "same … but" none.
_SAME_BUT = re.compile(
    r"^\s*(?:(?:do|give me|show me)\s+)?(?:the\s+)?same(?:\s+(?:thing|again|query|question|"
    r"list|one))?\s*[,:;-]?\s*but\s+(?=\S)",
    re.IGNORECASE,
)


def resolve(question: str, history: Sequence[PriorTurn]) -> Resolution:
    """The standalone question to answer for ``question`` after ``history`` (oldest
    first); pure and fast (a few regular expressions), so it adds well under a
    millisecond before planning. A follow-up to a SQL answer stays on the SQL route and,
    where its meaning is structural (another row count, another grouping, a question
    about the rows), says which statement it builds on. "Same but X" is read as X said
    after the previous answer ("by state", "only buys", "top 3"); an X that alone reads
    as a new question ("from LGA") stays one, as "same but" alone says no value swap."""
    same = _SAME_BUT.match(question)
    if same and history:
        changed = resolve(question[same.end() :], history)
        if changed.kind not in (FollowUpKind.STANDALONE, FollowUpKind.UNRESOLVED):
            return changed
        # "same but from lga": the change is a value of the previous request said with
        # its preposition, as "what about from lga?" says it ("same but" asks for the
        # previous request changed, never a new one); only a value swap is taken.
        about = resolve(f"what about {question[same.end() :]}", history)
        if about.kind is FollowUpKind.VALUE_SWAP:
            return about
    resolution = _resolve(question, history)
    prior = next((t for t in reversed(history) if not t.unresolved), None)
    if (
        prior is None
        or not prior.sql
        or resolution.kind in (FollowUpKind.STANDALONE, FollowUpKind.UNRESOLVED,
                               FollowUpKind.ORDINAL)
        or _leaves_sql(question, resolution)
    ):  # fmt: skip
        if resolution.builds_on is not None and (prior is None or not prior.sql):
            return replace(resolution, builds_on=None)
        return resolution
    built = resolution.builds_on
    return replace(
        resolution,
        builds_on=replace(built, sql=prior.sql) if built is not None else BuildsOn(prior.sql),
    )


def changes_row_count(question: str, history: Sequence[PriorTurn]) -> bool:
    """Whether a request worded like a change of data ("reduce that to 1", "cut it down
    to 2") changes how many rows the previous answer shows: its verb's object is the
    answer itself ("that", "it", "the list", or none), what it goes to is a row count,
    and the previous answer listed several rows of a statement. A change of data names
    what it changes ("reduce the price of car 5 to 100"), and after an answer of one row
    "change it to 5" still asks to change that value."""
    prior = next((t for t in reversed(history) if not t.unresolved), None)
    if prior is None or not prior.sql or prior.row_count < 2:
        return False
    match = _LIMIT.match(_plain(question))
    return match is not None and bool(match.group("verb")) and _limit(_plain(question)) is not None


def hides_rows(question: str, history: Sequence[PriorTurn]) -> bool:
    """Whether a request worded like a change of data ("drop the suspended ones", "remove
    those that failed") hides part of the previous answer's rows: its object is a
    qualified part of them ("the … ones", "those that …") and the previous answer listed
    several rows of a statement. "Drop them" or "delete the cancelled orders" name no
    part of the answer, and stay requests to change data."""
    prior = next((t for t in reversed(history) if not t.unresolved), None)
    if prior is None or not prior.sql or prior.row_count < 2:
        return False
    return _HIDES_PART.match(_plain(question)) is not None


def _structural(asked: str, prior: PriorTurn) -> Resolution | None:
    """Row-count changes, regroupings and narrowings, read from the request's shape
    whatever its politeness or case."""
    text = _plain(asked)
    if not text:
        return None
    if (
        limit := _limit(text)
        or _same_ranking_limit(text, prior)
        or _limit_of_named_rows(text, prior)
        or _top_of_groups(text, prior)
        or _bare_count(text, prior)
    ) is not None:
        rows, lowest = limit
        return Resolution(
            FollowUpKind.LIMIT,
            _with_limit(prior.resolved_question, rows, lowest),
            builds_on=BuildsOn(prior.sql, Relation.ROW_LIMIT, limit=rows, ascending=lowest),
        )
    if (match := _REGROUP.match(text)) is not None and not _TIME_IN_QUESTION.fullmatch(
        match.group("dim")
    ):
        dim = _clean(match.group("dim"))
        add = bool(re.search(r"\b(?:also|too|as well)\b", text, re.I)) and not match.group(
            "instead"
        )
        return Resolution(
            FollowUpKind.BREAKDOWN,
            _regrouped(prior.resolved_question, dim, add=add),
            builds_on=BuildsOn(prior.sql, Relation.REGROUP, dimension=dim, add=add),
        )
    if (dropped := drops_condition(asked, [prior])) is not None:
        return Resolution(
            FollowUpKind.FILTER,
            f"{_body(prior.resolved_question)} without "
            f"{'its condition' if dropped == 'filter' else f'the {dropped} condition'}?",
            builds_on=BuildsOn("", Relation.FILTER, condition=dropped, remove=True),
        )
    if (match := _EXCLUDE.match(text)) is not None:
        excluded = _condition_words(match.group("f") or match.group("g"))
        return Resolution(
            FollowUpKind.FILTER,
            f"{_body(prior.resolved_question)} excluding {excluded}?",
            builds_on=BuildsOn("", Relation.FILTER, condition=excluded, exclude=True),
        )
    if (picked := picked_condition(text, prior.sql)) is not None:
        # "which of them visited X?": the earlier rows that did, not a question about them
        return _narrowed(prior.resolved_question, picked)
    if (among := _AMONG.match(text)) is not None and (
        which := _WHICH_ARE.match(_clean(among.group("f")))
    ) is not None:
        # "of those, which are privately insured?": the ones that are
        return _narrowed(prior.resolved_question, f"that are {which.group('c')}")
    if (
        (among := _AMONG.match(text)) is not None
        and (counted := _HOW_MANY_ARE.match(_clean(among.group("f")))) is not None
        and _one_count(prior)
    ):
        # "of those, how many were Envoy Air flights?" after a count: the same count
        # of the ones that are
        return _narrowed(prior.resolved_question, f"that are {counted.group('c')}")
    match = _AMONG.match(text) or _NARROW.match(text) or _NARROW_VERB.match(text)
    match = match or _KEEP.match(text)
    match = match or _NARROW_AFTER.match(text)
    match = match or _NARROW_TAIL.match(text)
    match = match or _qualified_ones(text, prior)
    if match is not None and (
        not re.match(r"^(?:how|what|which|who|why)\b", match.group("f"), re.I)
        or _relative_after_those(text, match)
    ):
        return _narrowed(prior.resolved_question, _clean(match.group("f")))
    # "where do they live?" asks; "where the price is under 100" qualifies
    if (match := _CLAUSE.match(text)) is not None and (
        (
            re.match(r"^(?:where|whose|with|having)\b", match.group("f"), re.I)
            and not _AUXILIARY_AFTER.match(match.group("f"))
        )
        or re.match(r"^(?:the ones|those|ones)\b", text, re.I)
    ):
        return _narrowed(prior.resolved_question, _clean(match.group("f")))
    return None


# "which are privately insured", "who were born in Texas": after "of those", the rows a
# state or a qualifier picks out. Not a question about the rows themselves: "which are
# the cheapest", "who are their doctors", "which is it", a second verb ("which are
# sold by whom").
_WHICH_ARE = re.compile(
    r"^(?:which|who)\s+(?:ones\s+)?(?:are|were|is|was)\s+"
    r"(?P<c>(?!(?:the|a|an|their|its|his|her|our|my|your|them|it|most|least|more|less"
    r"|what|which|who|how|[a-z]+est)\b)[\w'.&-]+(?:\s+(?!(?:is|are|was|were|do|does|did|has|"
    r"have|had|by whom)\b)[\w'.&-]+){0,4})$",
    re.IGNORECASE,
)
# "how many were Envoy Air flights", after "of those": the rows a state picks out,
# counted, as "which were …" lists them (the same words are excluded after the verb).
_HOW_MANY_ARE = re.compile(
    _WHICH_ARE.pattern.replace(r"^(?:which|who)\s+(?:ones\s+)?", r"^how many\s+"),
    re.IGNORECASE,
)
_COUNT = re.compile(r"\bCOUNT\s*\(", re.IGNORECASE)
_GROUP_BY = re.compile(r"\bGROUP\s+BY\b", re.IGNORECASE)


def _one_count(prior: PriorTurn) -> bool:
    """Whether the previous answer was one count of rows (no groups): "how many of
    those …" then counts fewer of the same rows, not something about each row."""
    return (
        bool(prior.sql)
        and prior.row_count <= 1
        and bool(_COUNT.search(prior.sql))
        and not (_GROUP_BY.search(prior.sql))
    )


# "what about those born after 1985?", "how about the ones older than 50?": another
# condition on the rows in place of the previous one of that shape, or one added.
_ABOUT_THOSE = re.compile(
    rf"^{_LEAD}(?:what|how) about (?:those|these|the ones|ones)\s+(?P<c>\S.*?)\s*\??$",
    re.IGNORECASE,
)
_SAID_BOUND = re.compile(rf"\b{_BOUND}\s+(?:19|20)\d\d\b", re.IGNORECASE)


def _other_condition(asked: str, prior: PriorTurn) -> Resolution | None:
    """ "what about those born after 1985?" after "… born before 1985 …": the bound or
    comparison the previous question said, replaced (a value swap, read on the statement
    as another condition on the same column); where it said none of that shape, the
    condition added (a narrowing)."""
    match = _ABOUT_THOSE.match(asked)
    if match is None or not _CONDITION_HEAD.match(match.group("c")):
        return None
    said = _clean(match.group("c"))
    body = _body(prior.resolved_question)
    for shape in (_SAID_BOUND, _SAID_COMPARISON):
        new = shape.search(said)
        old = list(shape.finditer(body))
        if new is not None and len(old) == 1:
            return Resolution(
                FollowUpKind.VALUE_SWAP,
                f"{body[: old[0].start()]}{new.group(0)}{body[old[0].end() :]}?",
                builds_on=BuildsOn("", Relation.VALUE_SWAP, value=said),
            )
    return _narrowed(prior.resolved_question, said)


_AUXILIARY_AFTER = re.compile(
    r"^\w+\s+(?:do|does|did|is|are|was|were|can|could|will|would|should|has|have|had)\b", re.I
)


def _condition_words(words: str) -> str:
    """A condition as the SQL service reads it: without the words that only point at the
    previous rows ("the failed ones" → "failed")."""
    words = _clean(words)
    words = re.sub(r"^(?:(?:the ones|the|those|these|ones|them)\s+)+", "", words, flags=re.I)
    words = re.sub(r"^(?:that|who|which) (?:are|were|is|was)\s+", "", words, flags=re.I)
    words = re.sub(r"^(?:if|when) (?:they|it) (?:are|were|is|was)\s+", "", words, flags=re.I)
    return re.sub(r"\s+(?:ones?|only)$", "", words, flags=re.I) or words


def _resolve(question: str, history: Sequence[PriorTurn]) -> Resolution:
    asked = _clean(question)
    prior = next((t for t in reversed(history) if not t.unresolved), None)
    ordinal = _ORDINAL.search(asked)
    if prior is None:
        if ordinal:
            return Resolution(
                FollowUpKind.UNRESOLVED, asked, "there is no earlier answer to pick from"
            )
        return Resolution(FollowUpKind.STANDALONE, asked)

    if (
        ordinal
        and (prior.sql or not prior.members)
        and _RESTRICTIVE.search(asked)
        and _limit(_plain(asked))
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
        rest = _clean(asked[: ordinal.start()] + member + asked[ordinal.end() :])
        if re.fullmatch(rf"{_LEAD}(?:{_ABOUT} )?{re.escape(member)}\s*\??", rest, re.I):
            # "and the second one?": the previous question, about that member.
            # "and the fourth one?" after "How many contacts does the second one have?":
            # the latest question, about the newly picked member.
            swapped = _swap(latest, member, history) if latest is not listed else None
            rest = swapped or f"What do we know about {member}?"
        return Resolution(FollowUpKind.ORDINAL, _finish(rest))

    if match := _TIME_ONLY.match(asked) or _TIME_ONLY.match(_QUALIFIER_TAIL.sub("", _plain(asked))):
        period = _clean(match.group("time"))
        return Resolution(
            FollowUpKind.TIME_SHIFT,
            _with_time(prior.resolved_question, period),
            builds_on=BuildsOn("", Relation.TIME_SHIFT, period=period),
        )
    if (structural := _structural(asked, prior)) is not None:
        return structural
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

    if (other := _other_condition(asked, prior)) is not None:
        return other
    demonstrative = _DEMONSTRATIVE.search(asked) or _COLLECTIVE.search(asked)
    said_count = demonstrative.group("count") if demonstrative else None
    if said_count and prior.row_count:
        meant = _NUMBER_WORDS.get(said_count.lower()) or int(said_count)
        if meant != prior.row_count:
            # "those three" after five rows: which three is not said
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer has {prior.row_count} rows, not {meant}",
            )
    pronoun = _has_unanchored_pronoun(asked) or _PLACE.search(asked)
    if (
        not (demonstrative or pronoun)
        and not (prior.sql or prior.members or prior.row_count or prior.cited)
        and (owner := _unowned_singular(asked)) is not None
    ):
        # "which destinations did its flights fly to?" after an answer that showed and
        # cited nothing (a refusal): no earlier row or passage is there to own "its", and
        # read as a question of its own it would ask about every flight.
        return Resolution(
            FollowUpKind.UNRESOLVED,
            asked,
            f"the previous answer showed nothing for '{owner.group('p')}' to refer to",
        )
    one = _one_row_pointer(asked) or _unowned_last_it(asked)
    if one is not None and not (demonstrative or pronoun):
        word = one.group("p")
        if not (prior.sql or prior.members or prior.row_count or prior.cited):
            if (named := _pointed_at_described(asked, one, prior)) is not None:
                return Resolution(FollowUpKind.RESULT_REFERENCE, _finish(named))
            # "which museums did he visit?" after a refusal: read alone it would ask
            # about every visitor's museums.
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer showed nothing for '{word}' to refer to",
            )
        if prior.sql and prior.row_count > 1:
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer has {prior.row_count} rows, so '{word}' points at no "
                "one of them",
            )
    # "what year is it from?" after an answer of one row: "it" is that row; so is "he",
    # "that teacher".
    single = (_SINGULAR.search(asked) or one) if prior.sql and prior.row_count == 1 else None
    if (
        demonstrative
        or pronoun
        or single
        or re.search(r"\b(?:which|how many|any) of them\b", asked, re.I)
    ):
        narrows_count = (
            not prior.members
            and _PART_OF.search(asked) is not None
            and re.match(r"^how many\b", _body(prior.resolved_question), re.I) is not None
        )
        if prior.sql and not _document_question(asked) and not narrows_count:
            # The rows of the earlier statement, as a sub-query in the SQL service: never
            # a pasted list of the names it returned.
            noun = demonstrative.group("noun") if demonstrative else None
            rows = f"the previous answer's {noun or 'rows'}"
            part = _PART_OF.search(asked)
            if (
                part is not None
                and demonstrative is not None
                and noun is not None
                and (part.start() <= demonstrative.start() < part.end())
            ):
                # "which of those drugs": the demonstrative's noun is the rows' noun, said
                # once ("the previous answer's drugs", never "… drugs drugs", which the
                # linker reads as a second noun and shows the key beside the name)
                said = f"{part.group(1)} of {rows}"
                text = asked[: part.start()] + said + asked[demonstrative.end() :]
            else:
                text = _PART_OF.sub(lambda m: f"{m.group(1)} of {rows}", asked, count=1)
            if text == asked:
                text = _refer(asked, rows, replace(prior, members=()))
            return Resolution(
                FollowUpKind.RESULT_REFERENCE,
                _finish(text),
                builds_on=BuildsOn(prior.sql, Relation.RESULT_SET, question=asked),
            )
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

    change = _CHANGE.match(_plain(asked))
    if change is not None:
        said = _clean(change.group("old") or change.group("old2"))
        value = _clean(change.group("new") or change.group("new2"))
        if max(len(said.split()), len(value.split())) > 4 or _QUESTION_HEAD.match(value):
            change = None  # "which customers prefer tea rather than coffee?" asks anew
    if change is not None:
        body = _body(prior.resolved_question)
        found = list(re.finditer(rf"(?<![\w-]){re.escape(said)}(?![\w-])", body, re.I))
        if len(found) != 1:
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous question does not say '{said}' once, so nothing is replaced",
            )
        where = found[0]
        return Resolution(
            FollowUpKind.VALUE_SWAP,
            f"{body[: where.start()]}{value}{body[where.end() :]}?",
            builds_on=BuildsOn("", Relation.VALUE_SWAP, value=value),
        )
    match = _SWAP.match(asked)
    if match is None and (instead := _INSTEAD.match(_plain(asked))) is not None:
        match = _SWAP.match(f"what about {instead.group('v')}?")
    if match is None:
        match = _switched_to(asked)
    if match:
        value = _clean(match.group("v"))
        prep = (match.group("prep") or "").lower()
        if prep in ("from", "to") and not re.search(
            rf"\b{prep}\s+\S", prior.resolved_question, re.I
        ):
            # "and to ANC?" after "flights from APG": another side of the trip, which no
            # value of the previous question stands for
            value = f"{prep} {value}"
        # A whole new question after "and" is a topic change, not a value.
        if (
            value[:1].islower()
            and not any(s[2][:1].islower() for s in _slots(prior.resolved_question))
            and not _statement_slots(prior)
            and len(value.split()) <= 2
        ):
            renumbered = _renumbered(prior.resolved_question, value)
            if renumbered is not None:
                return Resolution(
                    FollowUpKind.VALUE_SWAP,
                    renumbered,
                    builds_on=BuildsOn("", Relation.VALUE_SWAP, value=value),
                )
            # "what about retail?" after a question with no lowercase value: a narrowing.
            return Resolution(
                FollowUpKind.VALUE_SWAP,
                f"{_body(prior.resolved_question)} in {value}?",
                builds_on=BuildsOn("", Relation.VALUE_SWAP, value=value),
            )
        if _COMPARISON.match(value):
            # "what about older than 40?": another comparison where the previous one was
            return Resolution(
                FollowUpKind.VALUE_SWAP,
                _with_comparison(prior.resolved_question, value),
                builds_on=BuildsOn("", Relation.VALUE_SWAP, value=value),
            )
        # A capitalised value after a preposition is a name however its words read ("and
        # in How to write a CV?": a document's title): no question follows "in" capitalised
        # mid-sentence, and a title may be longer than a value said in passing.
        titled = bool(prep) and value[:1].isupper()
        if titled or (len(value.split()) <= 4 and not re.match(
            r"^(?:how|what|which|who|when|where|why|is|are|do|does|list|show)\b", value, re.I
        )):  # fmt: skip
            if (recounted := _recounted(prior.resolved_question, value)) is not None:
                # the value as the question now says it ("4 cylinder"), which the
                # statement's condition is linked from again
                return Resolution(
                    FollowUpKind.VALUE_SWAP,
                    recounted[0],
                    builds_on=BuildsOn("", Relation.VALUE_SWAP, value=recounted[1]),
                )
            swapped = _swap(prior, value, history, prep) or _carried_swap(prior, value, history)
            if swapped is not None:
                return Resolution(
                    FollowUpKind.VALUE_SWAP,
                    swapped,
                    builds_on=BuildsOn("", Relation.VALUE_SWAP, value=value),
                )
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous question names nothing that '{value}' could replace",
            )
    if (elliptical := _elliptical_count(asked, prior)) is not None:
        # "and how many of type Other?" after "How many houses are listed?": the count
        # names no rows of its own, so they are the previous count's, with another value
        again = _resolve(f"what about {elliptical}?", history)
        if again.kind in (FollowUpKind.VALUE_SWAP, FollowUpKind.TIME_SHIFT):
            return again
    if (group := _one_group(asked, prior)) is not None:
        return Resolution(FollowUpKind.RESULT_REFERENCE, group)
    if (bare := _bare_value(asked, prior)) is not None:
        return bare
    return Resolution(FollowUpKind.STANDALONE, asked)


# "how many countries per continent": the counted noun and the grouping's noun
_COUNT_PER = re.compile(
    r"^how many (?P<noun>[a-z][\w-]*(?: [a-z][\w-]*)?)(?: are there)?"
    r" (?:per|for each|in each|by) (?P<dim>[a-z][\w-]*(?: [a-z][\w-]*)?)$",
    re.IGNORECASE,
)
# "list the europe ones": a group's value said as the kind of the rows listed
_GROUP_ONES = re.compile(
    r"^(?:(?:and|now)\s+)?(?:list|show(?:\s+me)?|which are|what are)\s+(?:the|those)\s+"
    r"(?P<v>[\w'-]+(?:\s[\w'-]+)?)\s+ones\s*[?.!]*$",
    re.IGNORECASE,
)


def _one_group(asked: str, prior: PriorTurn) -> str | None:
    """ "list the europe ones" after "how many countries per continent": "ones" stands for
    the counted rows, and the value before it names one group, so the question lists the
    counted noun's rows of that group ("list the countries whose continent is europe?"),
    asked anew. It was read alone, where "ones" names nothing, and refused. None unless
    the previous statement counts per group and its question says "how many X per Y"."""
    said = _GROUP_ONES.match(asked.strip())
    counted = _COUNT_PER.match(_body(prior.resolved_question))
    if said is None or counted is None or not prior.sql:
        return None
    if not re.search(r"\bCOUNT\(", prior.sql, re.I) or not re.search(
        r"\bGROUP BY\b", prior.sql, re.I
    ):
        return None
    return f"list the {counted.group('noun')} whose {counted.group('dim')} is {said.group('v')}?"


# A phrase said alone, as a value is ("delta?", "jetblue", "New York"): a few words with
# no question word, verb or number of their own.
_BARE = re.compile(r"^(?P<v>[A-Za-z][\w&'-]*(?: [A-Za-z][\w&'-]*){0,2})\s*[?.!]*$")
_NOT_BARE = frozenset((
    "how", "what", "which", "who", "whom", "whose", "when", "where", "why", "is", "are",
    "was", "were", "do", "does", "did", "can", "could", "list", "show", "give", "count",
    "tell", "find", "get", "yes", "no", "ok", "okay", "thanks", "thank", "hi", "hello",
    "help", "more", "again", "all", "everything", "them", "those", "these", "it", "this",
    "that", "the", "a", "an", "and", "but", "or", "not", "no", "only", "just", "except",
    "same", "top", "bottom", "first", "last", "per", "by", "from", "to", "in", "at", "on",
    "of", "for", "with", "without", "over", "under", "before", "after", "instead", "then",
    "now", "also", "ones", "one", "each", "every", "total", "average", "sum",
))  # fmt: skip
# A text value compared in the statement (``name = 'United Air Lines Inc.'``).
_COMPARED_TEXT = re.compile(r"(?:=|\bIN\s*\(|\bLIKE)\s*'", re.IGNORECASE)


def _bare_value(asked: str, prior: PriorTurn) -> Resolution | None:
    """A bare phrase after an answer whose statement compares a text value ("delta?"
    after the United flights per origin) as a value swap of that statement, said as
    asked: whether the phrase is a value of the compared column is the SQL service's to
    read from the stored values, and where it is none the phrase is read as asked, as a
    question of its own (what it was before). The router never reads a schema, so the
    swap is only offered; no question is rewritten around the phrase."""
    match = _BARE.match(asked.strip())
    if match is None or not prior.sql or not _COMPARED_TEXT.search(prior.sql):
        return None
    value = match.group("v")
    if any(w.lower() in _NOT_BARE for w in value.split()):
        return None
    return Resolution(
        FollowUpKind.VALUE_SWAP,
        asked,
        builds_on=BuildsOn("", Relation.VALUE_SWAP, value=value),
    )


# "how many" said with no noun of its own: a preposition follows it at once ("and how
# many of type Other?", "how many in 2014?"). A partitive names its rows ("how many of
# the students ..."), and "of them" points at the previous rows (read before).
_ELLIPTICAL_COUNT = re.compile(
    rf"{_LEAD}how many\s+(?P<rest>(?:of|in|from|with|at|on)\s+(?!(?:the|all|our|my|your|"
    r"their|its|his|her|them|those|these|this|that|it|each|every)\b)[^?]+?)\s*[?.!]*$",
    re.IGNORECASE,
)


def _elliptical_count(asked: str, prior: PriorTurn) -> str | None:
    """What an elliptical "how many" asks about ("of type Other") when the previous
    question was a count too; None otherwise."""
    match = _ELLIPTICAL_COUNT.match(asked)
    if match is None or len(match.group("rest").split()) > 5:
        return None
    if not re.match(r"^how many\b", _body(prior.resolved_question), re.IGNORECASE):
        return None
    return match.group("rest")


# The person or thing a personal pronoun or a demonstrative with its noun points at
# ("he", "him", "his", "that teacher"); a bare "that"/"this"/"it" can point at an event
# or an amount as well ("at which museums was that?"), so it is left out.
_PERSONAL = frozenset({"he", "she", "him", "his"})
_PLURAL_VERB = {"is": "are", "was": "were", "does": "do", "has": "have"}


def _pointed_at_described(asked: str, one: re.Match[str], prior: PriorTurn) -> str | None:
    """ "where is he from?" after "Which teachers teach grade 5?" was refused: the
    pointer names the one row the earlier question asked for, which is the set that
    question described ("Where are the teachers that teach grade 5 from?"), so it is
    asked about that set rather than refused. Only a personal pronoun or "that/this
    <noun>" after a verb or preposition, and only when the earlier question named a
    plural set it listed ("Which customer joined first?" names no set, "the customer
    joined first" reads as nothing; a count lists no row), so a question read alone
    never drops the reference. The verb the pointer was the subject of takes the
    plural ("is he" → "are the …")."""
    if one.re is not _ONE_REFERENCE:
        return None
    word = one.group("p")
    if word.lower() not in _PERSONAL and not re.match(r"^(?:that|this)\s", word, re.I):
        return None
    if re.match(r"^how (?:many|much)\b", _body(prior.resolved_question), re.I):
        return None  # a count showed one number, no row for "he" to be
    described = _described_set(prior.resolved_question)
    if described is None:
        return None
    found, rest = described
    head = found.split()[-1]
    if head.lower() in _NOT_PLURAL or not _PLURAL_WORD.fullmatch(head):
        return None
    target = _clean(f"the {found} {rest}")
    before, after = asked[: one.start("p")], asked[one.end("p") :]
    if word.lower() == "his":
        owned = _POSSESSED.match(after)
        if owned is None:
            return None
        return f"{before}the {owned.group(1)} of {target}{after[owned.end() :]}"
    verb = re.search(r"\b(\w+)\s+$", before)
    if verb is not None and (plural := _PLURAL_VERB.get(verb.group(1).lower())) is not None:
        before = f"{before[: verb.start(1)]}{plural}{before[verb.end(1) :]}"
    return f"{before}{target}{after}"


def _carried_swap(prior: PriorTurn, value: str, history: Sequence[PriorTurn]) -> str | None:
    """ "switch to SEA" after "how many flights did each of them have there?" (itself after
    "Which carriers flew to DEN?"): the previous question says no value, read about the
    earlier rows, but its statement compares one, carried from the question that said
    it. That value is the one replaced (the statement is edited where it compares it,
    ``conversation.swapped``); the question says so. Only where the statement compares
    one text value, an earlier question of the conversation said it, and the new value
    has its shape (a code for a code). None otherwise, and the swap stays unresolved."""
    said = {
        (m.group(1) or "").replace("''", "'") for m in _LITERAL.finditer(prior.sql) if m.group(1)
    }
    if len(said) != 1:
        return None
    literal = said.pop()
    if bool(_CODE.match(literal)) != bool(_CODE.match(value)) or literal.lower() == value.lower():
        return None
    named = re.compile(rf"(?<![\w-]){re.escape(literal)}(?![\w-])", re.I)
    if not any(named.search(turn.resolved_question) for turn in history):
        return None
    return f"{_body(prior.resolved_question)}, with {value} in place of {literal}?"


_NAMED_NUMBER = re.compile(
    r"^(?P<words>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+(?P<n>\d+(?:\.\d+)?)$", re.I
)


def _renumbered(question: str, value: str) -> str | None:
    """ "switch to grade 5" after "Which teachers teach grade 1?": the words before the
    new number say the earlier question's words before its number once, so they name
    the same thing and only the number is replaced. Without this, a question whose
    statement is unknown (its turn was refused) was read as narrowed "in grade 5" and
    kept grade 1 beside it. None where the words are not said once before a number."""
    named = _NAMED_NUMBER.match(value.strip())
    if named is None:
        return None
    body = _body(question)
    words = r"\s+".join(re.escape(w) for w in named.group("words").split())
    found = list(re.finditer(rf"(?<![\w-]){words}\s+(\d+(?:\.\d+)?)(?![\w.-])", body, re.I))
    if len(found) != 1:
        return None
    start, end = found[0].span(1)
    return f"{body[:start]}{named.group('n')}{body[end:]}?"


_NUMBER_NOUN = re.compile(r"^(?P<n>\d+(?:\.\d+)?)[\s-]+(?P<noun>[a-z][a-z]+?)(?:e?s)?$", re.I)


def _recounted(question: str, value: str) -> tuple[str, str] | None:
    """ "now 4 cylinders" after "… with 8 cylinder cars": a number said with its noun
    names the same measure as the earlier question's number before that noun, however
    the noun is inflected or joined ("8 cylinder", "8-cylinder", "8 cylinders"), so only
    the number is replaced. Without this the whole "4 cylinders" was put in place of
    a word of the question and the old number stayed beside it. None where the earlier
    question does not say a number before that noun exactly once; else the question and
    the new value said as the question says it ("4 cylinder")."""
    said = re.sub(r"\s+(?:ones?|too|instead|as well)$", "", value.strip(), flags=re.I)
    counted = _NUMBER_NOUN.match(said)
    if counted is None:
        return None
    body = _body(question)
    noun = re.escape(counted.group("noun"))
    said_before = rf"(?<![\w.-])(\d+(?:\.\d+)?)[\s-]+{noun}(?:e?s)?(?![\w-])"
    found = list(re.finditer(said_before, body, re.I))
    if len(found) != 1 or found[0].group(1) == counted.group("n"):
        return None
    start, end = found[0].span(1)
    said = f"{counted.group('n')}{body[end : found[0].end()]}"
    return f"{body[:start]}{counted.group('n')}{body[end:]}?", said


def _switched_to(asked: str) -> re.Match[str] | None:
    """ "switch to X" read as "what about X?": the value put in place of the previous
    question's, so it is replaced where the previous question compared it; None for any
    other form."""
    switch = _SWITCH_TO.match(_plain(asked))
    if switch is None or _QUESTION_HEAD.match(switch.group("v")):
        return None
    return _SWAP.match(f"what about {switch.group('v')}?")


_SAID_COMPARISON = re.compile(
    r"\b(?:[a-z]+er|more|less|fewer|greater|over|under|above|below|at least|at most)"
    r"(?:\s+than)?\s+\$?\d[\d,.]*",
    re.IGNORECASE,
)


def _with_comparison(question: str, comparison: str) -> str:
    """The previous question with its comparison replaced by ``comparison`` (or with it
    added)."""
    body = _body(question)
    found = list(_SAID_COMPARISON.finditer(body))
    if len(found) == 1:
        return f"{body[: found[0].start()]}{comparison}{body[found[0].end() :]}?"
    return f"{body} {comparison}?"


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
    demonstrative = _DEMONSTRATIVE.search(text) or _COLLECTIVE.search(text)
    if demonstrative:
        return text[: demonstrative.start()] + target + text[demonstrative.end() :]
    pronoun = _has_unanchored_pronoun(text)
    if pronoun is None and (one := _one_row_pointer(text)) is not None:
        said = f"{target}'s" if one.group("p").lower() in ("his", "her") else target
        if one.re is _CONTRACTED_POINTER:
            # "that user's email" → "the email of <the rows>"
            after = text[one.end("p") + 2 :]
            if owned := _POSSESSED.match(after):
                said = f"the {owned.group(1)} of {target}"
                return text[: one.start("p")] + said + after[owned.end() :]
            return text[: one.start("p")] + f"{target}'s" + after
        return text[: one.start("p")] + said + text[one.end("p") :]
    if pronoun is None and (single := _SINGULAR.search(text)) is not None:
        said = f"{target}'s" if single.group("p").lower() == "its" else target
        return text[: single.start()] + said + text[single.end() :]
    if pronoun is None:
        place = _PLACE.search(text)
        assert place is not None
        # "spend there" → "spend at the museums …"; "from there" → "from the museums …"
        at = "" if re.search(r"\b(?:at|in|from|to|near|into|inside)\s*$", text[: place.start()],
                             re.I) else "at "  # fmt: skip
        return text[: place.start()] + at + target + text[place.end() :]
    word = pronoun.group("p").lower()
    after = text[pronoun.end() :]
    if word == "their":
        # "their call notes say about pricing" → "the call notes of A and B say …": the
        # possessed noun phrase runs to the next verb-ish word.
        noun = _POSSESSED.match(after)
        if noun:
            return (
                text[: pronoun.start()] + f"the {noun.group(1)} of {target}"
                + after[noun.end() :]
            )  # fmt: skip
        return text[: pronoun.start()] + f"{target}'s" + after
    return text[: pronoun.start()] + target + after


# What "their" or "that user's" owns: a noun phrase that runs to the next verb-ish word.
_POSSESSED = re.compile(
    r"^\s+((?:[\w-]+\s){0,2}?[\w-]+?)(?=\s+(?:say|said|mention|talk|show|have|has|are|is"
    r"|were|contain)\b|\s*\?|$)"
)


def _finish(text: str) -> str:
    text = _clean(text)
    text = re.sub(rf"{_LEAD}", "", text, count=1, flags=re.I) or text
    text = text[:1].upper() + text[1:]
    return text if text.endswith("?") else text.rstrip(".!") + "?"
