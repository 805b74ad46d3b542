"""Units of measure written after a number ("more than 60 minutes", "above 7000 feet"):
the unit says what the number counts, not another thing a statement must read. Once a
statement compares that very number, the comparison explains the unit; a word that is
no unit ("4 engines") stays a word the statement must read. The units are a closed list
of English measures (time, length, mass, money, speed, angle), grammar as the month
names are, never a schema's words."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from services.sql.words._words import name_words, stem

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


# Each unit in its measure's base (seconds, meters, grams): exact, so a unit a column
# declares converts the one said ("3 hours" on a column counting minutes is 180). A month,
# a year and a ton are left out: their length or weight is not one agreed number.
_IN_BASE: dict[str, float] = {
    "second": 1,
    "minute": 60,
    "hour": 3600,
    "day": 86400,
    "week": 604800,
    "inch": 0.0254,
    "foot": 0.3048,
    "yard": 0.9144,
    "mile": 1609.344,
    "meter": 1,
    "kilometer": 1000,
    "gram": 1,
    "kilogram": 1000,
    "pound": 453.59237,
}


def converted(value: float, unit: str, to: str) -> float | None:
    """``value`` said in ``unit`` counted in ``to`` (3 hours -> 180 minutes), rounded to
    a whole number where it is one to within a millionth; None across measures or for a
    unit whose size is not one agreed number (month, year, ton)."""
    if unit not in _IN_BASE or to not in _IN_BASE or not same_measure(unit, to):
        return None
    result = value * _IN_BASE[unit] / _IN_BASE[to]
    whole = round(result)
    return float(whole) if abs(result - whole) < 1e-6 * max(1.0, abs(result)) else result


def plural(unit: str) -> str:
    """A canonical unit's plural as a question says it ("foot" -> "feet")."""
    return {"foot": "feet", "inch": "inches"}.get(unit, f"{unit}s")


def declared_units(name: str, comment: str) -> set[str]:
    """The units a column says it counts, by its name's words or its comment's
    ("taxi_time_mins" -> minute; "distance, in miles" -> mile). A name that is one unit
    in the singular ("hour", "year") is a part of the clock or calendar the column holds,
    not an amount it counts in that unit."""
    words = name_words(name)
    if len(words) == 1 and canonical_unit(words[0]) == words[0]:
        words = []
    return units_named([*words, *re.findall(r"[a-z]+", comment.lower())])


# "more than an hour", "under a mile": one of the unit, said by its article.
_ONE_UNIT = re.compile(rf"\b(?:an?|one)\s+(?=(?:{_UNITS})\b)", re.I)


def one_said_as_number(question: str) -> str:
    """``question`` with one unit said by its article written as the number 1 ("more
    than an hour" -> "more than 1 hour"), so it reads as any number with a unit does."""
    return _ONE_UNIT.sub("1 ", question)


def restated(question: str, unit_for: Callable[[float, str], tuple[float, str] | None]) -> str:
    """``question`` with each number said in a unit restated as ``unit_for`` gives it
    (``(180.0, "minute")`` for 3 hours), or as said where it gives None."""

    def each(m: re.Match[str]) -> str:
        found = unit_for(float(m.group(1)), canonical_unit(m.group(2)))
        if found is None:
            return m.group(0)
        value, unit = found
        return f"{value:.10g} {plural(unit)}"

    return _AFTER_NUMBER.sub(each, re.sub(r"(?<=\d),(?=\d{3}\b)", "", question))


def same_measure(unit: str, other: str) -> bool:
    """Both units measure one thing (time, length or mass)."""
    return any(unit in measure and other in measure for measure in _MEASURES)
