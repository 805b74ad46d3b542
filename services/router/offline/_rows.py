"""SQL rows stated as an answer a person reads: time buckets labelled at their grain and in
time order, measures with thousands separators; the structured rows stay exact.

A result of "total won amount per quarter" came back as one run-on line, quarters out of
order (Q4, Q3, Q1, Q2), raw timestamps for quarters and unformatted money. What is read here
comes only from the rows and the column names; nothing is computed that the rows do not
hold.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation

from services.common.llm import AnswerSentence, Cell, RowSet
from services.common.periods import reads_as_years

MAX_ROWS_STATED = 10

_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?$")
# A column named for its grain says how to label it ("quarter", "order_month").
_GRAIN_WORDS = (("quarter", "quarter"), ("month", "month"), ("year", "year"), ("week", "week"))
# Columns whose numbers are measures (formatted) rather than identifiers or codes
# (left as stored: an id 12345 or a year 2024 is not "12,345" or "2,024").
_MEASURE = re.compile(
    r"^(?:count|sum|avg|average|total|min|max|mean|median)(?:_|$)|amount|revenue|price|cost|"
    r"value|total|count|sum|avg|spend|sales|income|balance|salary|budget|profit|quantity",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"(?:^|_)(?:id|code|year|zip|phone|number|no)$", re.IGNORECASE)
# A question that asks for an order of its own keeps the statement's.
_RANKED = re.compile(
    r"\b(?:top|highest|lowest|most|least|largest|smallest|biggest|best|worst|rank\w*|"
    r"latest|earliest|first|last|descending|ascending|order(?:ed)?|sort(?:ed)?)\b",
    re.IGNORECASE,
)


def state_rows(rowset: RowSet, question: str = "") -> list[AnswerSentence]:
    """The rows as one cited sentence (a lone value as ``Label: value.``)."""
    cite = (rowset.id,)
    if not rowset.rows:
        return [AnswerSentence("The query returned no rows.", cite)]
    columns = list(rowset.columns)
    shapes = [_shape(name, [row[i] for row in rowset.rows]) for i, name in enumerate(columns)]
    if len(rowset.rows) == 1 and len(columns) == 1:
        value = _render(rowset.rows[0][0], shapes[0])
        return [AnswerSentence(f"{_label(columns[0])}: {value}.", cite)]
    rows = list(rowset.rows)
    times = [i for i, shape in enumerate(shapes) if shape.startswith("time")]
    if len(times) == 1 and not _RANKED.search(question):
        at = times[0]
        rows.sort(key=lambda row: (row[at] is None, str(row[at])))
    shown = rows[:MAX_ROWS_STATED]
    rendered = [
        ", ".join(
            f"{c.replace('_', ' ')}: {_render(v, shape)}"
            for c, v, shape in zip(columns, row, shapes, strict=False)
        )
        for row in shown
    ]
    more = len(rows) - len(shown)
    tail = f"; and {more} more" if more > 0 else ""
    noun = "row" if len(rows) == 1 else "rows"
    said = [AnswerSentence(f"{len(rows)} {noun}: " + "; ".join(rendered) + tail + ".", cite)]
    headline = _headline(rows, shapes)
    if headline:
        said.append(AnswerSentence(headline, cite))
    return said


# The fewest rows a headline is worth stating for (with two, the rows say it already).
_HEADLINE_ROWS = 3


def _headline(rows: Sequence[Sequence[Cell]], shapes: Sequence[str]) -> str:
    """One label column and one measure: the highest and lowest, and over time buckets the
    direction when every step goes the same way. Computed from the rows, never guessed."""
    measures = [i for i, shape in enumerate(shapes) if shape == "measure"]
    labels = [i for i, shape in enumerate(shapes) if shape != "measure"]
    if len(measures) != 1 or len(labels) != 1 or len(rows) < _HEADLINE_ROWS:
        return ""
    at, label_at = measures[0], labels[0]
    pairs = [(row[label_at], _number(row[at])) for row in rows]
    known = [(label, value) for label, value in pairs if value is not None and label is not None]
    if len(known) < _HEADLINE_ROWS:
        return ""
    shape = shapes[label_at]
    top = max(known, key=lambda pair: pair[1])
    low = min(known, key=lambda pair: pair[1])
    text = (
        f"Highest: {_render(top[0], shape)} ({_grouped(top[1])}); "
        f"lowest: {_render(low[0], shape)} ({_grouped(low[1])})"
    )
    if shape.startswith("time:") and len(known) == len(rows):
        steps = [b[1] - a[1] for a, b in itertools.pairwise(known)]
        if all(step > 0 for step in steps):
            text += f"; rising every {_step_name(shape)}"
        elif all(step < 0 for step in steps):
            text += f"; falling every {_step_name(shape)}"
    return text + "."


def _step_name(shape: str) -> str:
    grain = shape.removeprefix("time:")
    return grain if grain in ("quarter", "month", "year", "week", "day") else "step"


def _shape(name: str, values: Sequence[Cell]) -> str:
    """How a column reads: ``time:<grain>``, ``measure``, or ``plain``. A column of year
    numbers (a grouping "per year" shows 2023, not 2023-01-01) is time at the year's
    grain, as the chart reads it (``reads_as_years``): stated as stored, put in time
    order, its trend said."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, str) and _ISO_TIME.match(v) for v in present):
        return "time:" + _grain(name, [_parse(str(v)) for v in present])
    if reads_as_years(name, present):
        return "time:year"
    numeric = all(_number(v) is not None for v in present)
    if present and numeric and _MEASURE.search(name) and not _IDENTIFIER.search(name):
        return "measure"
    return "plain"


def _grain(name: str, stamps: Sequence[datetime]) -> str:
    """The bucket the values stand for: named by the column, else read from the values."""
    lowered = name.lower()
    for word, grain in _GRAIN_WORDS:
        if word in lowered:
            return grain
    if any((t.hour, t.minute, t.second, t.microsecond) != (0, 0, 0, 0) for t in stamps):
        return "time"
    if all((t.month, t.day) == (1, 1) for t in stamps) and len(stamps) > 1:
        return "year"
    if all(t.day == 1 for t in stamps) and len(stamps) > 1:
        return "month"
    return "day"


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace(" ", "T"))


def _render(value: Cell, shape: str) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if shape.startswith("time:") and isinstance(value, str) and _ISO_TIME.match(value):
        return _bucket(_parse(value), shape.removeprefix("time:"))
    if shape == "measure":
        number = _number(value)
        if number is not None:
            return _grouped(number)
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".") if not value.is_integer() else str(int(value))
    return str(value)


def _bucket(stamp: datetime, grain: str) -> str:
    if grain == "quarter":
        return f"{stamp.year}-Q{(stamp.month - 1) // 3 + 1}"
    if grain == "month":
        return f"{stamp.year}-{stamp.month:02d}"
    if grain == "year":
        return str(stamp.year)
    if grain in ("day", "week"):
        return stamp.date().isoformat()
    return stamp.isoformat(sep=" ", timespec="minutes")


def _number(value: Cell) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    try:
        return Decimal(value.strip()) if re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()) else None
    except InvalidOperation:
        return None


def _grouped(number: Decimal) -> str:
    """Thousands separators; two decimals where the value has a fraction."""
    if number == number.to_integral_value():
        return f"{int(number):,}"
    return f"{number:,.2f}"


def _label(column: str) -> str:
    words = column.replace("_", " ").strip()
    replacements = {"count all": "count", "avg ": "average ", "sum ": "total "}
    for old, new in replacements.items():
        if words.startswith(old):
            words = new + words[len(old) :]
    return words[:1].upper() + words[1:]
