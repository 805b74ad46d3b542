"""Date phrases in questions ("last quarter", "in March 2025", "since 2024") as ranges.

Ranges are half-open ``[start, end)`` so they compile to ``>= start AND < end`` and
work the same for date and timestamp columns.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from services.common.llm._text import parse_number

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS |= {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}


def _quarter_start(day: date) -> date:
    return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + (day.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)


def date_range(low: str, today: date) -> tuple[date | None, date | None] | None:
    """A half-open [start, end) window for relative and absolute date phrases."""
    low = re.sub(r"\bqtrs?\b", "quarter", low)
    low = re.sub(r"\byrs?\b", "year", low)
    if re.search(r"\blast quarter\b|\bprevious quarter\b|\bprior quarter\b", low):
        start = _add_months(_quarter_start(today), -3)
        return start, _add_months(start, 3)
    if re.search(r"\bthis quarter\b|\bcurrent quarter\b|\bquarter to date\b|\bqtd\b", low):
        start = _quarter_start(today)
        return start, _add_months(start, 3)
    if re.search(r"\bnext quarter\b", low):
        start = _add_months(_quarter_start(today), 3)
        return start, _add_months(start, 3)
    if re.search(r"\blast month\b|\bprevious month\b", low):
        start = _add_months(date(today.year, today.month, 1), -1)
        return start, _add_months(start, 1)
    if re.search(r"\bthis month\b|\bcurrent month\b", low):
        start = date(today.year, today.month, 1)
        return start, _add_months(start, 1)
    if re.search(r"\blast year\b|\bprevious year\b", low):
        return date(today.year - 1, 1, 1), date(today.year, 1, 1)
    if re.search(r"\bthis year\b|\bcurrent year\b|\bytd\b|\byear to date\b", low):
        return date(today.year, 1, 1), date(today.year + 1, 1, 1)
    match = re.search(r"\b(?:last|past|previous)\s+(\d+|\w+)\s+(day|week|month)s?\b", low)
    if match:
        amount = _amount(match.group(1))
        if amount is not None:
            days = {"day": 1, "week": 7, "month": 30}[match.group(2)] * int(amount)
            return today - timedelta(days=days), today + timedelta(days=1)
    match = re.search(r"\bq([1-4])\s*(?:of\s+)?((?:19|20)\d\d)\b", low)
    if match:
        start = date(int(match.group(2)), 3 * (int(match.group(1)) - 1) + 1, 1)
        return start, _add_months(start, 3)
    months = "|".join(sorted(MONTHS, key=len, reverse=True))
    match = re.search(rf"\b({months})\.?\s+((?:19|20)\d\d)\b", low)
    if match:
        start = date(int(match.group(2)), MONTHS[match.group(1)], 1)
        return start, _add_months(start, 1)
    match = re.search(r"\b(since|after|from)\s+((?:19|20)\d\d)(?:-(\d\d)-(\d\d))?\b", low)
    if match:
        year = int(match.group(2))
        if match.group(3):
            start = date(year, int(match.group(3)), int(match.group(4)))
            return (start + timedelta(days=1) if match.group(1) == "after" else start), None
        return (date(year + 1, 1, 1) if match.group(1) == "after" else date(year, 1, 1)), None
    match = re.search(r"\bbefore\s+((?:19|20)\d\d)(?:-(\d\d)-(\d\d))?\b", low)
    if match:
        year = int(match.group(1))
        if match.group(2):
            return None, date(year, int(match.group(2)), int(match.group(3)))
        return None, date(year, 1, 1)
    match = re.search(r"\b(?:in|during|for|of)\s+((?:19|20)\d\d)\b", low)
    if match:
        year = int(match.group(1))
        return date(year, 1, 1), date(year + 1, 1, 1)
    return None


def _amount(raw: str) -> float | None:
    return parse_number(raw.strip())
