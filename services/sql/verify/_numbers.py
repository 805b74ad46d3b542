"""Every number the question writes is in the statement: "visitors below age 30" reads
``age`` whether or not it compares it with 30, so word coverage alone never sees a
number dropped."""

from __future__ import annotations

import re

from services.sql.linker import LinkError
from services.sql.verify._facts import StatementFacts
from services.sql.words import ISO_DATE, WRITTEN_DATE

# Number words a question uses for small counts ("more than one", "at least two").
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
TIME_UNITS = r"(?:second|minute|hour|day|week|month|quarter|year|decade)s?"


def check_numbers(text: str, facts: StatementFacts, reads: set[str], *, dated: bool = True) -> None:
    """Every number the question writes is in the statement: a literal or a limit, inside
    a string literal (a date, a code) or a column name it uses ("day 100" ->
    ``day100_score``); numbers of a time window ("last 30 days") and of a written date
    are the date module's — when the statement bounds anything in time at all: "2 months
    before the review with id 3" answered as the review alone dropped its window."""
    text = ISO_DATE.sub(" ", WRITTEN_DATE.sub(" ", text))
    text = _CLOCK.sub(lambda m: " " if _clock_used(m, facts) else m.group(0), text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 30,000
    text = _THOUSANDS.sub(_thousands, text)  # 30k
    if dated:
        text = re.sub(rf"\b\d+(?:\.\d+)?\s+(?:calendar\s+)?{TIME_UNITS}\b", " ", text)
    text = re.sub(r"\bq[1-4]\b|\b\d+(?:st|nd|rd|th)\b", " ", text)
    # a number ends a sentence too ("taller than 200."): only a digit after the dot
    # would make it another number
    found = [m.group(0) for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)", text)]
    found += [
        str(_NUMBER_WORDS[m.group(1)])
        for m in re.finditer(
            r"\b(?:than|least|most|exactly|over|under|above|below)\s+(\w+)\b", text
        )
        if m.group(1) in _NUMBER_WORDS
    ]
    inside = " ".join(facts.strings)
    years = {int(m) for m in re.findall(r"(?<!\d)(\d{4})-\d\d-\d\d", inside)}
    for number in found:
        value = float(number)
        if value in facts.numbers or (number in inside and len(number) >= 2) or number in reads:
            continue
        if len(number) == 4 and {int(number), int(number) + 1} & years:
            continue  # "after 2020": from 2021-01-01
        raise LinkError(f"the statement does not use the number {number}")


# A number written in thousands ("over 30k", "2.5k"): the number it stands for, so that
# a statement that compares nothing with 30000 does not pass for one that drops it (the
# "k" glued to the digits hid the number from the search below).
_THOUSANDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)k\b", re.IGNORECASE)


def _thousands(m: re.Match[str]) -> str:
    value = float(m.group(1)) * 1000
    return str(int(value)) if value.is_integer() else str(value)


# A time of day said as HH:MM ("before 12:00")
_CLOCK = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?![\d:])")


def _clock_used(m: re.Match[str], facts: StatementFacts) -> bool:
    """A time of day is used as the hhmm integer a clock-time column holds (12:00 as
    1200), or, on the hour or its last minute, as the hour an hour column holds (12:00 and
    17:59 as 12 and 17): its two numbers are not each looked for apart."""
    hours, minutes = int(m.group(1)), int(m.group(2))
    if float(hours * 100 + minutes) in facts.numbers:
        return True
    return minutes in (0, 59) and float(hours) in facts.numbers
