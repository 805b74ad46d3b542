"""A row count: "only the top 3", "just 5", "the 2 lowest", "only the biggest buyer". The
earlier statement cut to another number of rows, from the end of its ranking the request
says; the SQL service changes the statement's LIMIT, this only says how many and which end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.common.llm import PriorTurn
from services.router.offline._followup._words import (
    GROUPING,
    NUMBER_WORDS,
    PLURAL_WORD,
    plain,
    question_body,
)
from services.router.offline._text import lowered_stems, stem

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
    r"(?P<n>\d{1,4}|" + "|".join(NUMBER_WORDS) + r")"
    r"(?:\s+(?:ones?|results?|rows?|items?|entries|records|of (?:them|those|these)))?"
    r"(?P<tail>(?:\s+(?:only|instead|then|(?:is|are) (?:enough|fine|plenty)|(?:will|would|"
    r"should) do))*)$",
    re.IGNORECASE,
)
# "split that by region", "by category instead", "break it down by state", "now per month".
_LIMIT_CUE = re.compile(r"^(?:only|just|show|give|keep|list|limit|cut|make)\b", re.I)
# "only", "just", "top": the words that make "the first one" a row count, not a pick.
RESTRICTIVE = re.compile(r"\b(?:only|just|top)\b", re.IGNORECASE)


# "show just the first", "only the top": the one row a ranking puts first, said with no
# count ("only the first one" has its count). "just the highest", "only the lowest": a
# superlative alone is the same one row, from the end it says, by the answer's own
# measure ("just the highest one" says its count). Not "the last" alone, which picks the
# last member listed, nor "best"/"worst", which say no end.
_FIRST_ALONE = re.compile(
    r"(?:(?:show|give|list|keep)(?:\s+me)?\s+)?(?:only|just)\s+the\s+"
    r"(?P<dir>first|top|highest|largest|biggest|greatest|most|bottom|lowest|smallest|least"
    r"|fewest)(?:\s+only)?",
    re.IGNORECASE,
)


def row_limit(text: str) -> tuple[int, bool] | None:
    """(rows, lowest first) for a row-count change; a year is a period, not a count."""
    if (alone := _FIRST_ALONE.fullmatch(text)) is not None:
        return 1, alone.group("dir").lower() in _LOWEST
    if (first := _COUNT_FIRST.match(text)) is not None:
        number = first.group("n").lower()
        rows = NUMBER_WORDS.get(number) or int(number)
        return (rows, first.group("dir").lower() in _LOWEST) if rows >= 1 else None
    match = _LIMIT.match(text)
    if match is None:
        return None
    number = match.group("n").lower()
    rows = NUMBER_WORDS.get(number) or int(number)
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
    r"^(?:(?:only|just)\s+)?(?:the\s+)?(?P<n>\d{1,4}|" + "|".join(NUMBER_WORDS) + r")\s+"
    r"(?P<dir>top|highest|largest|biggest|most|" + "|".join(_LOWEST) + r")"
    r"(?:\s+(?:ones?|results?|rows?))?(?:\s+(?:only|instead))?$",
    re.IGNORECASE,
)
_RANKED_LIMIT = re.compile(
    r"^(?:(?:only|just)\s+)?(?:(?:show|give|list|keep)(?:\s+me)?\s+)?(?:the\s+)?"
    r"(?P<rank>[a-z]{3,}est|most \w+)\s+(?P<n>\d{1,4}|" + "|".join(NUMBER_WORDS) + r")"
    r"(?:\s+(?:ones?|results?|rows?|of (?:them|those|these)))?(?:\s+(?:only|instead))?$",
    re.IGNORECASE,
)


def same_ranking_limit(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
    """(rows, False) when the request cuts the previous question's own ranking, named by
    the superlative that question used; another superlative is another ranking."""
    match = _RANKED_LIMIT.match(text)
    if match is None or not re.search(
        rf"\b{re.escape(match.group('rank'))}\b", prior.resolved_question, re.I
    ):
        return None
    number = match.group("n").lower()
    rows = NUMBER_WORDS.get(number) or int(number)
    return (rows, False) if rows >= 1 else None


def bare_count(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
    """ "5" (or "5 please") after a ranking cut by a LIMIT: that many rows of it."""
    number = NUMBER_WORDS.get(text.lower()) or (int(text) if re.fullmatch(r"\d{1,3}", text) else 0)
    if number < 1 or not re.search(r"\bLIMIT\s+\d+\s*;?\s*$", prior.sql, re.I):
        return None
    return number, False


def limit_of_named_rows(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
    """ "just the top 3 airlines" after "… by airline": a row count that names the rows
    in a word of the previous question."""
    head, _, last = text.rstrip(" ?.!").rpartition(" ")
    if not head or stem(last) not in {s for _, s in lowered_stems(prior.resolved_question)}:
        return None
    return row_limit(head)


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
        stem(m.group("g").split()[-1].lower()) for m in GROUPING.finditer(prior.resolved_question)
    }
    word = stem(noun.lower())
    if word in grouped:
        return True
    said = {s for _, s in lowered_stems(prior.resolved_question)}
    agent = re.sub(r"(?:er|or)$", "", word)
    return agent != word and (agent in said or f"{agent}e" in said)


def top_of_groups(text: str, prior: PriorTurn) -> tuple[int, bool] | None:
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
        if match is None or PLURAL_WORD.fullmatch(match.group("noun")):
            return None
        if match.group("noun").lower() != "one" and not _names_groups(match.group("noun"), prior):
            return None
    return 1, match.group("sup").lower() in _LOW_MAGNITUDE


def with_limit(question: str, rows: int, lowest: bool) -> str:
    """The previous question asking for ``rows`` rows (for reading; the SQL service
    changes the statement itself)."""
    body = question_body(question)
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
    match = _LIMIT.match(plain(question))
    return (
        match is not None and bool(match.group("verb")) and row_limit(plain(question)) is not None
    )
