"""A time of day said as HH:MM ("departed before 12:00", "at 18:00 or later", "between
12:00 and 17:59"), compared in the encoding of the column that holds it: an hour of the
day (``weather.hour``, 0..23) or a clock time kept as an hhmm integer (``flights.dep_time``,
1..2400). Neither is a type the catalog declares; the column's name and its extent (the
least and greatest value stored, ``catalog._extents``) say which it is. A column whose
encoding these do not make clear, a time an hour column cannot hold ("before 12:30"), or
words that name no one clock column of several, are refused rather than guessed."""

from __future__ import annotations

import re
from collections.abc import Iterator

from services.sql.catalog import TableInfo
from services.sql.linker._context import LinkContext
from services.sql.linker._plan import LinkError, Plan
from services.sql.linker._vocabulary import Col
from services.sql.words import STOP_WORDS, stem

_TIME = r"(\d{1,2}):(\d{2})"
# (pattern, comparison): the bound's words around the time, each read on its own
_BOUNDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"\bbetween\s+{_TIME}\s+and\s+{_TIME}"), "between"),
    (re.compile(rf"\bfrom\s+{_TIME}\s+(?:to|until|through)\s+{_TIME}"), "between"),
    (re.compile(rf"\b(?:at\s+)?{_TIME}\s+or\s+(?:later|after)"), ">="),
    (re.compile(rf"\bat\s+or\s+after\s+{_TIME}"), ">="),
    (re.compile(rf"\b(?:at\s+)?{_TIME}\s+or\s+(?:earlier|before)"), "<="),
    (re.compile(rf"\bat\s+or\s+before\s+{_TIME}"), "<="),
    (re.compile(rf"\b(?:before|earlier\s+than)\s+{_TIME}"), "<"),
    (re.compile(rf"\b(?:after|later\s+than)\s+{_TIME}"), ">"),
)
_ANY_TIME = re.compile(rf"(?<![\d:]){_TIME}(?![\d:])")
# A part of the day is a span of clock hours, as a month is a span of days: the morning
# before noon, the afternoon from noon until six, the evening from six on. "Night" is
# left out: whether it runs past midnight, and from when, is not agreed.
_PARTS: dict[str, tuple[str, list[tuple[int, int]]]] = {
    "morning": ("<", [(12, 0)]),
    "afternoon": ("between", [(12, 0), (17, 59)]),
    "evening": (">=", [(18, 0)]),
}
PARTS_OF_DAY = frozenset(_PARTS)
_PART = re.compile(rf"\b({'|'.join(_PARTS)})s?\b(?:\s+([a-z]+))?")


def clock_filters(ctx: LinkContext, plan: Plan) -> None:
    """Each time of day the question says bounds the one clock column its words name
    (or the only one of the tables read), in that column's encoding; a
    :class:`LinkError` where that cannot be said."""
    said = list(_bounds(ctx.low))
    if not said and _ANY_TIME.search(ctx.low):
        return  # a time in no bound read here: the verifier refuses its numbers
    for at, op, times in said:
        col = _clock_column(ctx, plan, ctx.low[max(0, at - 40) : at])
        plan.filters.append((col, _condition(col, op, times)))
    _parts_of_day(ctx, plan)


def _parts_of_day(ctx: LinkContext, plan: Plan) -> None:
    """ "the morning departures", "the afternoon readings": the part of the day's span of
    hours on the one clock column the word after it (or the words before) names, or the
    only one read; where no stored value holds the word (a shift named 'morning' is that
    value). Where no one such column is named the question is refused: word coverage
    forgave the word, and "flights in the morning" was answered over the whole day."""
    for m in _PART.finditer(ctx.low):
        part = m.group(1)
        if any(part in cond.lower() for _, cond in plan.filters):
            continue  # a stored value that holds the word reads it
        near = f"{ctx.low[max(0, m.start() - 40) : m.start()]} {m.group(2) or ''}"
        try:
            col = _clock_column(ctx, plan, near)
        except LinkError as unread:
            # read over the whole day before: "flights in the morning" counted them all
            raise LinkError(f"{part!r}: {unread}") from None
        op, times = _PARTS[part]
        plan.filters.append((col, _condition(col, op, times)))
        ctx.known.update({part, stem(part)})


def _bounds(low: str) -> Iterator[tuple[int, str, list[tuple[int, int]]]]:
    taken: list[tuple[int, int]] = []
    for pattern, op in _BOUNDS:
        for m in pattern.finditer(low):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            numbers = [int(g) for g in m.groups()]
            times = list(zip(numbers[::2], numbers[1::2], strict=True))
            if any(h > 24 or m_ > 59 for h, m_ in times):
                continue
            yield m.start(), op, times


def is_hour(col: Col) -> bool:
    """An hour of the day: an integer column named for the hour whose stored values all
    lie in 0..24 and reach past noon (a day's hours, not a duration's)."""
    extent = col.column.extent
    named = re.search(r"(?:^|_)hours?$", col.column.name.lower()) is not None
    return named and extent is not None and extent[0] >= 0 and 12 < extent[1] <= 24


def is_hhmm(col: Col) -> bool:
    """A clock time kept as hours * 100 + minutes: an integer column named for a time
    whose stored values lie in 0..2400 and reach past 1439, the most a count of the
    day's minutes holds (so it is no such count)."""
    extent = col.column.extent
    named = re.search(r"(?:^|_)time$", col.column.name.lower()) is not None
    integer = col.column.data_type in ("integer", "smallint", "bigint")
    return named and integer and extent is not None and extent[0] >= 0 and 1439 < extent[1] <= 2400


def is_clock(col: Col) -> bool:
    """A column that holds the time of day: an hour of the day or an hhmm clock time."""
    return is_hour(col) or is_hhmm(col)


def _tables(ctx: LinkContext, plan: Plan) -> list[TableInfo]:
    cols = [m.col for m in plan.measures] + [d.col for d in plan.dims]
    cols += [c for c, _ in plan.filters]
    tables = [c.table for c in cols if c is not None] + list(ctx.named)
    return list({t.qualified: t for t in tables}.values())


def _clock_column(ctx: LinkContext, plan: Plan, near: str) -> Col:
    clocks = [
        Col(table, column)
        for table in _tables(ctx, plan)
        for column in table.columns
        if is_clock(Col(table, column))
    ]
    if not clocks:
        raise LinkError("the time of day said is held by no column read as an hour or a clock time")
    # the words right before the bound name the time ("… that departed before 12:00")
    words = [stem(w) for w in re.findall(r"[a-z]+", near) if w not in STOP_WORDS][-2:]
    scored = sorted(((ctx.vocab.column_score(words, c), c) for c in clocks), key=lambda s: -s[0])
    if scored[0][0] > 0 and (len(scored) == 1 or scored[0][0] > scored[1][0] + 1e-9):
        return scored[0][1]
    if len(clocks) == 1 and scored[0][0] <= 0:
        return clocks[0]
    names = ", ".join(f"{c.table.name}.{c.column.name}" for _, c in scored[:2])
    raise LinkError(f"the time of day said may bound {names}, and the question names none")


def _condition(col: Col, op: str, times: list[tuple[int, int]]) -> str:
    if is_hhmm(col):
        hhmm = [h * 100 + m for h, m in times]
        if op == "between":
            return f"{{c}} BETWEEN {hhmm[0]} AND {hhmm[1]}"
        return f"{{c}} {op} {hhmm[0]}"
    # an hour column holds whole hours: a bound is read only where it falls between two
    (h, m), *until = times
    if op == "between" and m == 0 and until[0][1] == 59:
        return f"{{c}} BETWEEN {h} AND {until[0][0]}"
    if (op in ("<", ">=") and m == 0) or (op in (">", "<=") and m == 59):
        return f"{{c}} {op} {h}"
    raise LinkError(f"{col.column.name} holds whole hours: the time said falls inside one")
