"""Units of measure written after a number ("more than 60 minutes", "above 7000 feet"):
the unit says what the number counts, not another thing a statement must read. Once a
statement compares that very number, the comparison explains the unit; a word that is
no unit ("4 engines") stays a word the statement must read. The units are a closed list
of English measures (time, length, mass, money, speed, angle), grammar as the month
names are, never a schema's words."""

from __future__ import annotations

import re
from collections.abc import Iterable

from services.sql.words._words import stem

_UNITS = (
    "second|minute|hour|day|week|month|year|"
    "foot|feet|inch|inches|mile|meter|metre|kilometer|kilometre|km|yard|"
    "pound|lb|lbs|kilogram|kg|gram|ton|tonne|"
    "dollar|cent|euro|"
    "mph|knot|degree"
)
_AFTER_NUMBER = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s+((?:{_UNITS})s?)\b", re.I)


def units_of(question: str, numbers: Iterable[float]) -> set[str]:
    """The unit words (as written and stemmed) that follow a number among ``numbers``
    (those a statement compares): the words that comparison explains."""
    compared = set(numbers)
    said: set[str] = set()
    for m in _AFTER_NUMBER.finditer(re.sub(r"(?<=\d),(?=\d{3}\b)", "", question)):
        if float(m.group(1)) in compared:
            word = m.group(2).lower()
            said |= {word, stem(word)}
    return said
