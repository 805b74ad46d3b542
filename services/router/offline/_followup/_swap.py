"""A value replaced: "what about Delta?", "swap Science for Music", "switch to grade 5",
"Turton instead", a bare "delta?". The value the earlier statement compared is the one
replaced where one fits; otherwise a slot read from the earlier question's shape.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._followup._kinds import Resolution, value_swap
from services.router.offline._followup._period import MONTH
from services.router.offline._followup._words import (
    ABOUT,
    LEAD,
    PLURAL_END,
    QUESTION_HEAD,
    clean,
    plain,
    question_body,
)

_SWAP = re.compile(
    rf"^{LEAD}{ABOUT} (?:(?P<prep>for|in|with|at|from|to|of|on|by) )?(?P<v>.+?)\s*\??\s*$",
    re.IGNORECASE,
)
# "Turton Urban District instead", "the United States ones instead", "template 11 then":
# a value said in place of the previous question's, with nothing but "instead" around it.
_INSTEAD = re.compile(
    rf"^{LEAD}(?:(?:the|those|these)\s+)?(?P<v>[^?]+?)(?:\s+ones?)?\s+(?:instead|then)"
    r"\s*[?.!]*$",
    re.IGNORECASE,
)
# "swap Science for Music", "replace 2014 with 2015", "Music instead of Science": the value
# to take out is said, so it is the one replaced.
_CHANGE = re.compile(
    rf"^{LEAD}(?:swap|replace|switch|change|exchange)\s+(?P<old>[^?]+?)\s+(?:for|with|to)\s+"
    r"(?P<new>[^?]+?)\s*[?.!]*$"
    rf"|^{LEAD}(?P<new2>[^?]+?)\s+(?:instead of|rather than|in place of)\s+(?P<old2>[^?]+?)"
    r"\s*[?.!]*$",
    re.IGNORECASE,
)
# "switch to Delta", "change to 2 engines", "move over to Boston": the new value said with
# a verb of changing and no old one, which is the value "what about ..." would say.
_SWITCH_TO = re.compile(
    rf"^{LEAD}(?:switch|change|swap|move)(?: over)? to (?P<v>[^?]+?)\s*[?.!]*$",
    re.IGNORECASE,
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
    rf"\b(?P<v>[a-z][\w-]+) (?=(?!{_NOT_NOUN_S})[a-z]{{3,}}{PLURAL_END}\b)"
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


def _slots(question: str) -> list[tuple[int, int, str]]:
    """Spans of a question that hold a named value: capitalised phrases past the first
    word, and lowercase values after a preposition ("in healthcare")."""
    body = question_body(question)
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
    body = question_body(prior.resolved_question)
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


def swapped_question(
    prior: PriorTurn, value: str, history: Sequence[PriorTurn], prep: str = ""
) -> str | None:
    """The prior question with one named value replaced by ``value``: the value its
    statement compared when one fits (a number for a number), else a slot read from the
    question's shape."""
    body = question_body(prior.resolved_question)
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


_PERIOD_SLOT = re.compile(rf"^(?:{MONTH}|(?:19|20)\d\d|q[1-4])\b", re.IGNORECASE)
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


# "what about older than 40?", "and under 100?": a comparison put in place of the previous
# one (comparatives: "-er than", more / less / fewer than, over / under a number).
_COMPARISON = re.compile(
    r"^(?:[a-z]+er|more|less|fewer|greater|over|under|above|below|at least|at most)\b"
    r"(?:\s+than)?\s+\$?\d",
    re.IGNORECASE,
)


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


def bare_value(asked: str, prior: PriorTurn) -> Resolution | None:
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
    return value_swap(asked, value)


# "how many" said with no noun of its own: a preposition follows it at once ("and how
# many of type Other?", "how many in 2014?"). A partitive names its rows ("how many of
# the students ..."), and "of them" points at the previous rows (read before).
_ELLIPTICAL_COUNT = re.compile(
    rf"{LEAD}how many\s+(?P<rest>(?:of|in|from|with|at|on)\s+(?!(?:the|all|our|my|your|"
    r"their|its|his|her|them|those|these|this|that|it|each|every)\b)[^?]+?)\s*[?.!]*$",
    re.IGNORECASE,
)


def elliptical_count(asked: str, prior: PriorTurn) -> str | None:
    """What an elliptical "how many" asks about ("of type Other") when the previous
    question was a count too; None otherwise."""
    match = _ELLIPTICAL_COUNT.match(asked)
    if match is None or len(match.group("rest").split()) > 5:
        return None
    if not re.match(r"^how many\b", question_body(prior.resolved_question), re.IGNORECASE):
        return None
    return match.group("rest")


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
    return f"{question_body(prior.resolved_question)}, with {value} in place of {literal}?"


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
    body = question_body(question)
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
    body = question_body(question)
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
    switch = _SWITCH_TO.match(plain(asked))
    if switch is None or QUESTION_HEAD.match(switch.group("v")):
        return None
    return _SWAP.match(f"what about {switch.group('v')}?")


SAID_COMPARISON = re.compile(
    r"\b(?:[a-z]+er|more|less|fewer|greater|over|under|above|below|at least|at most)"
    r"(?:\s+than)?\s+\$?\d[\d,.]*",
    re.IGNORECASE,
)


def _with_comparison(question: str, comparison: str) -> str:
    """The previous question with its comparison replaced by ``comparison`` (or with it
    added)."""
    body = question_body(question)
    found = list(SAID_COMPARISON.finditer(body))
    if len(found) == 1:
        return f"{body[: found[0].start()]}{comparison}{body[found[0].end() :]}?"
    return f"{body} {comparison}?"


def value_swapped(asked: str, prior: PriorTurn, history: Sequence[PriorTurn]) -> Resolution | None:
    """The previous question with one value replaced ("swap X for Y", "what about Y?",
    "Y instead", "switch to Y"); refused where the value to replace is not said once or
    nothing could be replaced; None when the request names no value in place of another."""
    change = _CHANGE.match(plain(asked))
    if change is not None:
        said = clean(change.group("old") or change.group("old2"))
        value = clean(change.group("new") or change.group("new2"))
        if max(len(said.split()), len(value.split())) > 4 or QUESTION_HEAD.match(value):
            change = None  # "which customers prefer tea rather than coffee?" asks anew
    if change is not None:
        body = question_body(prior.resolved_question)
        found = list(re.finditer(rf"(?<![\w-]){re.escape(said)}(?![\w-])", body, re.I))
        if len(found) != 1:
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous question does not say '{said}' once, so nothing is replaced",
            )
        where = found[0]
        return value_swap(f"{body[: where.start()]}{value}{body[where.end() :]}?", value)
    match = _SWAP.match(asked)
    if match is None and (instead := _INSTEAD.match(plain(asked))) is not None:
        match = _SWAP.match(f"what about {instead.group('v')}?")
    if match is None:
        match = _switched_to(asked)
    if match:
        value = clean(match.group("v"))
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
                return value_swap(renumbered, value)
            # "what about retail?" after a question with no lowercase value: a narrowing.
            return value_swap(f"{question_body(prior.resolved_question)} in {value}?", value)
        if _COMPARISON.match(value):
            # "what about older than 40?": another comparison where the previous one was
            return value_swap(_with_comparison(prior.resolved_question, value), value)
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
                return value_swap(recounted[0], recounted[1])
            swapped = swapped_question(prior, value, history, prep) or _carried_swap(
                prior, value, history
            )
            if swapped is not None:
                return value_swap(swapped, value)
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous question names nothing that '{value}' could replace",
            )
    return None
