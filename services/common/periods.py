"""A column of year numbers is time, decided once for every reader of a result.

A grouping "per year" is shown as the year's number (``CAST(EXTRACT(YEAR FROM …) AS
INTEGER)`` → 2023, see ``services.sql.results``), and tables keep years as columns of their
own (``cars_data.year``). Such a column is an integer, not a date, so a reader that takes
only dates for time — the router's worded answer, the chart — lost its time order, its
trend ("rising every year") and its time axis. Both read the column the same way here.

Neither the name nor the numbers decide it alone: "year" names a column that is not a
calendar year ("years_working", a count; "year_level", a grade), and four-digit integers
are ids, prices and counts as often as years. A column is a year when its name has the
word "year" (as a word of it: ``year``, ``order_year``, ``sale_date_year``) **and** every
value is a whole number written with four digits, as ISO 8601 writes a year (0000 to 9999,
here from 1000: a year written with a leading zero is not stored as an integer).
Kept free of imports so every service can read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# "year" as one word of a column's name (split at underscores, spaces and dots).
_YEAR_WORD = re.compile(r"(?:^|[_\s.])year(?:$|[_\s.])", re.IGNORECASE)
_FOUR_DIGITS = re.compile(r"[1-9]\d{3}")
# ISO 8601's four-digit years; an integer below 1000 is not stored as a year of dates.
FIRST_YEAR, LAST_YEAR = 1000, 9999


def is_year_value(value: object) -> bool:
    """An integer (or integer text, as exact decimals travel) with four digits."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return FIRST_YEAR <= value <= LAST_YEAR
    if isinstance(value, float):
        return value.is_integer() and FIRST_YEAR <= value <= LAST_YEAR
    return isinstance(value, str) and _FOUR_DIGITS.fullmatch(value.strip()) is not None


def reads_as_years(name: str, values: Iterable[object]) -> bool:
    """Whether the column ``name`` holding ``values`` is a calendar year: its name says
    "year" as a word and every value present is a four-digit year number."""
    if not _YEAR_WORD.search(name):
        return False
    present = [v for v in values if v is not None]
    return bool(present) and all(is_year_value(v) for v in present)
