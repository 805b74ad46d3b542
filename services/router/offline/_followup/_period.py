"""A time shift: "and in 2024?", "the year after", "before 2009". The previous question over
another period, or with its period moved by the grain it said.
"""

from __future__ import annotations

import calendar
import re

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._followup._kinds import BuildsOn, Relation, Resolution
from services.router.offline._followup._words import (
    ABOUT,
    LEAD,
    QUALIFIER_TAIL,
    clean,
    plain,
    question_body,
)

MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may(?= \d)|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_TIME_VALUE = (
    r"(?:(?:in|for|during|since|from|on) )?(?:the )?"
    r"(?:(?:19|20)\d\d|q[1-4](?: (?:19|20)\d\d)?|(?:last|this|next|previous|past) "
    r"(?:year|quarter|month|week|\d+ (?:days|weeks|months|years))|(?:19|20)\d\d-\d\d"
    rf"|{MONTH}(?: \d{{1,2}}(?:st|nd|rd|th)?)?(?:,? (?:19|20)\d\d)?"
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
BOUND = r"(?:before|after|until|till|prior to|earlier than|later than|up to|through)"
_PERIOD = rf"(?:{_MOVED}|(?:{BOUND} )?{_TIME_VALUE})"
_TIME_ONLY = re.compile(rf"^{LEAD}(?:{ABOUT} )?(?P<time>{_PERIOD})\s*\??\s*$", re.IGNORECASE)
TIME_IN_QUESTION = re.compile(rf"\b(?:{BOUND} )?{_TIME_VALUE}\b", re.IGNORECASE)


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
    move = _MOVE.match(clean(period))
    if move is None:
        return None
    grain = (move.group("g1") or move.group("g2")).lower()
    word = (move.group("pre") or move.group("post")).lower()
    steps = _STEPS.get((move.group("n") or "one").lower()) or int(move.group("n"))
    steps = -steps if word in ("previous", "prior", "preceding", "before", "earlier") else steps
    body = question_body(question)
    if grain == "year" and len(set(re.findall(r"\b(?:19|20)\d\d\b", body))) == 1:
        year = re.search(r"\b(?:19|20)\d\d\b", body)
        assert year is not None
        return f"{body[: year.start()]}{int(year.group(0)) + steps}{body[year.end() :]}?"
    if grain in ("month", "quarter"):
        unit = 1 if grain == "month" else 3
        said = re.search(rf"\b(?P<m>{MONTH})\w*,? (?P<y>(?:19|20)\d\d)\b", body, re.I)
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


def with_time(question: str, time: str) -> str:
    """``question`` asked about ``time`` instead of its own period (or with one added)."""
    time = clean(time)
    if (moved := _moved(question, time)) is not None:
        return moved
    if not re.match(
        rf"^(?:in|for|during|since|from|on|last|this|next|previous|past|the|{BOUND})\b", time, re.I
    ):
        time = f"in {time}"
    body = question_body(question)
    if old := TIME_IN_QUESTION.search(body):
        year = re.search(r"\b(?:19|20)\d\d\b", old.group(0))
        if year and re.search(MONTH, time, re.I) and not re.search(r"\b(?:19|20)\d\d\b", time):
            time = f"{time} {year.group(0)}"  # "and february?" after "in January 2023"
        body = body[: old.start()] + time + body[old.end() :]
    else:
        body = f"{body} {time}"
    return body + "?"


def time_shifted(asked: str, prior: PriorTurn) -> Resolution | None:
    """The previous question over the period a request says alone ("and in 2024?",
    "the year after"); None for any other request."""
    if match := _TIME_ONLY.match(asked) or _TIME_ONLY.match(QUALIFIER_TAIL.sub("", plain(asked))):
        period = clean(match.group("time"))
        return Resolution(
            FollowUpKind.TIME_SHIFT,
            with_time(prior.resolved_question, period),
            builds_on=BuildsOn("", Relation.TIME_SHIFT, period=period),
        )
    return None
