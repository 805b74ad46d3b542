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


# A unit as written -> its one spelling here (plurals and other spellings alike).
_CANONICAL = {
    "feet": "foot",
    "inches": "inch",
    "metre": "meter",
    "kilometre": "kilometer",
    "km": "kilometer",
    "lb": "pound",
    "lbs": "pound",
    "kg": "kilogram",
    "tonne": "ton",
    # abbreviations a column's name uses for a unit ("delay_mins", "height_ft")
    "sec": "second",
    "secs": "second",
    "min": "minute",
    "mins": "minute",
    "hr": "hour",
    "hrs": "hour",
    "ft": "foot",
    "mi": "mile",
    "kms": "kilometer",
    "kgs": "kilogram",
}
# Each unit's finer units of the same measure and system, with how many of them make
# one: "3 hours" could be 180 in a column counting minutes. Money is left out: a column
# holding cents says so in its name ("amount_cents"), and a currency column counts the
# currency.
_FINER: dict[str, tuple[tuple[str, float], ...]] = {
    "minute": (("second", 60),),
    "hour": (("minute", 60), ("second", 3600)),
    "day": (("hour", 24), ("minute", 1440), ("second", 86400)),
    "week": (("day", 7), ("hour", 168), ("minute", 10080)),
    "month": (("day", 30),),
    "year": (("month", 12), ("day", 365)),
    "foot": (("inch", 12),),
    "yard": (("foot", 3), ("inch", 36)),
    "mile": (("yard", 1760), ("foot", 5280)),
    "kilometer": (("meter", 1000),),
    "kilogram": (("gram", 1000),),
    "ton": (("kilogram", 1000), ("pound", 2000)),
}
_MEASURES = (
    frozenset({"second", "minute", "hour", "day", "week", "month", "year"}),
    frozenset({"inch", "foot", "yard", "mile", "meter", "kilometer"}),
    frozenset({"gram", "kilogram", "pound", "ton"}),
)


def canonical_unit(word: str) -> str:
    """One spelling of a unit word: "feet" -> "foot", "hrs" -> "hour", "miles" -> "mile"."""
    low = word.lower()
    if low in _CANONICAL:
        return _CANONICAL[low]
    if low.endswith("s") and low[:-1] in _FINER.keys() | {"second", "inch", "meter", "gram"}:
        return low[:-1]
    if low.endswith("s") and low[:-1] in {"pound", "dollar", "cent", "euro", "knot", "degree"}:
        return low[:-1]
    return low


def numbers_with_units(question: str) -> list[tuple[float, str, str]]:
    """``(number, unit, as written)`` for each number the question follows with a unit
    ("more than 3 hours" -> ``(3.0, "hour", "hours")``)."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", question)
    return [
        (float(m.group(1)), canonical_unit(m.group(2)), m.group(2).lower())
        for m in _AFTER_NUMBER.finditer(text)
    ]


_UNIT_WORD = re.compile(rf"(?:{_UNITS})s?", re.I)


def is_unit(word: str) -> bool:
    """A unit of measure as written ("minutes", "feet", "miles")."""
    return _UNIT_WORD.fullmatch(word) is not None


def finer_units(unit: str) -> tuple[tuple[str, float], ...]:
    """The finer units of ``unit``'s measure and system, each with how many make one."""
    return _FINER.get(unit, ())


def units_named(words: Iterable[str]) -> set[str]:
    """The units among a column's name or comment words ("dep_delay_mins" -> minute)."""
    found: set[str] = set()
    for word in words:
        unit = canonical_unit(word)
        if any(unit in measure for measure in _MEASURES):
            found.add(unit)
    return found


def same_measure(unit: str, other: str) -> bool:
    """Both units measure one thing (time, length or mass)."""
    return any(unit in measure and other in measure for measure in _MEASURES)
