"""Dates in questions, the one place they are read and moved: month names, dates written
out (``2023-06-01``, ``Jan 1, 2023``, ``April 1st 2023``), and calendar arithmetic (shift
by units, truncate to the start of a unit). The linker reads time windows with these;
the answer memory reads a question's date literals with them."""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

MONTHS: dict[str, int] = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9

ISO_DATE = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
# "Jan 1, 2023", "April 1st 2023": the month is checked against MONTHS when read
WRITTEN_DATE = re.compile(
    r"\b(?P<month>[A-Za-z]{3,9})\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b"
)


def written_date(match: re.Match[str]) -> date | None:
    """The date a :data:`WRITTEN_DATE` or :data:`ISO_DATE` match names, or None when it
    is not one (not a month's name, no such day)."""
    raw = match.group("month")
    month = int(raw) if raw.isdigit() else MONTHS.get(raw.lower())
    if month is None:
        return None
    try:
        return date(int(match.group("year")), month, int(match.group("day")))
    except ValueError:
        return None


def explicit_dates(text: str) -> list[tuple[date, int]]:
    """Every date written out in ``text`` with where it starts, in order."""
    found = [
        (day, m.start())
        for pattern in (ISO_DATE, WRITTEN_DATE)
        for m in pattern.finditer(text)
        if (day := written_date(m)) is not None
    ]
    return sorted(found, key=lambda d: d[1])


def shift(d: date, unit: str, n: int) -> date:
    """``d`` moved by ``n`` units (months keep the day, clamped to the month's end)."""
    if unit == "day":
        return d + timedelta(days=n)
    if unit == "week":
        return d + timedelta(weeks=n)
    months = n * {"month": 1, "quarter": 3, "year": 12}[unit]
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(d.day, last))


def truncate(d: date, unit: str) -> date:
    """The start of ``d``'s day, week (Monday), month, quarter or year."""
    if unit == "day":
        return d
    if unit == "week":
        return d - timedelta(days=d.weekday())
    if unit == "month":
        return d.replace(day=1)
    if unit == "quarter":
        return date(d.year, 3 * ((d.month - 1) // 3) + 1, 1)
    return date(d.year, 1, 1)
