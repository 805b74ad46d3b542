"""Time the question says, kept in the statement: a month it names bounds something, a
day, week, month, quarter or year it says reads a date, and "when" returns one.

Word coverage forgives time words (a date window reads them), so each of these could
vanish from a statement unseen."""

from __future__ import annotations

import re

from services.sql.linker import GRAINS, PARTS_OF_DAY, LinkContext, LinkError, is_clock
from services.sql.verify._facts import (
    StatementFacts,
    dated,
    dated_condition,
    without_quotes,
)
from services.sql.words import ISO_DATE, MONTHS, WRITTEN_DATE

# "When did the customers join?": a question that asks for a time (not "when" joining
# two clauses later on: "… when they signed up").
_WHEN = re.compile(r"\s*(?:and\s+)?when\b")
_GRAIN_WORD = re.compile(rf"\b({'|'.join(GRAINS)})s?\b")
# A month's name, or a capitalised abbreviation ("in Dec"); "may" and "march" are verbs
# too, so they count only capitalised and not as a sentence's first word.
_MONTH_WORD = re.compile(r"\b([A-Za-z]{3,9})\b")
_VERB_MONTHS = frozenset({"may", "march"})
_DAY_OF_MONTH = re.compile(r"\.?\s+\d{1,2}(?:st|nd|rd|th)?\b")


def check_when(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "When did the customers join?" answers with a date or a year the statement
    returns."""
    if _WHEN.match(text) and not any(dated(ctx, c) for c in facts.outputs):
        raise LinkError("the statement returns no date or year for 'when'")


def check_time_used(ctx: LinkContext, text: str, sql: str, facts: StatementFacts) -> None:
    """ "in the same month as they signed up" answered with no date read at all: a
    question that says a day, week, month, quarter or year needs a statement that bounds
    a date, groups by a period or uses a date or year column."""
    said = _GRAIN_WORD.search(text)
    if said is None or dated_condition(sql, facts) or facts.grains:
        return
    if any(dated(ctx, column) for column in facts.columns):
        return
    raise LinkError(f"the statement reads no date for {said.group(0)!r}")


def check_months(question: str, sql: str, facts: StatementFacts, reads: set[str]) -> None:
    """ "How many flights left JFK in December?" answered over the whole year: word
    coverage forgives month names (a date window reads them), so a month no window read
    vanished from the statement unseen. Each month the question names (outside quotes
    and a written-out date or day, which the date module reads whole) must bound something: a
    date literal in that month (a year's bounds, every date a first of January, bound
    no month), the month's number compared where the statement reads a month, the name itself as a
    stored value, or a column whose name says it."""
    text = without_quotes(question)
    text = ISO_DATE.sub(" ", WRITTEN_DATE.sub(" ", text))
    found = [m for m in (ISO_DATE.search(s) for s in facts.strings) if m is not None]
    days = {(int(m.group("month")), int(m.group("day"))) for m in found}
    # dates that are all the first of January bound years ("in 2013"), no month
    months_bounded = set() if days <= {(1, 1)} else {month for month, _ in days}
    stored = " ".join(facts.strings).lower()
    reads_month = "month" in sql.lower()
    for match in _MONTH_WORD.finditer(text):
        word = match.group(1)
        low = word.lower()
        month = MONTHS.get(low)
        if month is None or _DAY_OF_MONTH.match(text, match.end()):
            continue  # "from Jan 1st to Dec 31st": days, the date module's
        full = len(low) > 3 and low != "sept"
        if not full or low in _VERB_MONTHS:
            first = not text[: match.start()].strip(" \t\n\"'(")
            if not word[0].isupper() or first:
                continue  # "jan" in lower case, "May I see …", "march" the verb
        if month in months_bounded or (reads_month and float(month) in facts.numbers):
            continue
        if re.search(rf"\b{re.escape(low)}", stored) or low in reads:
            continue
        raise LinkError(f"the statement does not bound the month {word!r}")


_PART_WORD = re.compile(rf"\b({'|'.join(sorted(PARTS_OF_DAY))})s?\b")


def check_parts_of_day(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "How many flights left JFK in the morning?" answered over the whole day: word
    coverage forgives a time word, so a part of the day said needs the statement to read
    a column that holds the time of day (an hour, an hhmm clock time), unless a stored
    value the statement compares holds the word (a shift named 'morning')."""
    said = _PART_WORD.search(text)
    if said is None:
        return
    stored = " ".join(facts.strings).lower()
    if said.group(1) in stored:
        return
    clocks = {c.key for c in ctx.vocab.columns if is_clock(c)}
    if not clocks & facts.columns:
        raise LinkError(f"the statement reads no time of day for {said.group(1)!r}")
