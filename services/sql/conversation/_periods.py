"""Time shifts on an earlier statement: its time window moved, on the column and in the
form the statement compares it.

"and in 2015?", "the year after", "and the previous quarter", "in March instead",
"and before 2009?": the earlier statement compares one date column (or a year held as a
number, ``concert.year = 2014``) with literals; those comparisons are its window. The
new window is read from the words — a year, a quarter, a month or a date (a month without
a year takes the earlier window's), a bound ("before 2009"), or a move of the earlier
window by its own units ("the month before" the April it counted is March; "the"
previous, next, following quarter is the one beside the quarter it counted) — and the
earlier comparisons on that column are replaced by the new window's, so the measure,
grouping, other conditions, order and limit stay. A period said as today's ("last
year", "this month", "the past 30 days") is read by the schema linker, as in any
question. A statement with no time window takes the period as a new condition (a filter):
on the column the linker reads it about, else — the linker placing it nowhere — on the one
date of the statement's tables that the words beside it name ("registered before 2010" →
``year_reg``), or its only date when they name none ("just for 1982").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, TableInfo, table_for
from services.sql.conversation._conditions import (
    Link,
    Linked,
    link_condition,
    where_conjuncts,
    with_conditions,
)
from services.sql.conversation._statement import FollowUpError, parse, readable, sources
from services.sql.gate import identifier
from services.sql.words import (
    MONTHS,
    STOP_WORDS,
    explicit_dates,
    name_words,
    shift,
    stem,
    word_match,
)

GRAINS = ("year", "quarter", "month", "week", "day")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_BACK = ("previous", "prior", "preceding", "before", "earlier", "ago", "last")


@dataclass(frozen=True)
class Window:
    """A half-open period [start, end); an open side is None."""

    start: date | None
    end: date | None


@dataclass(frozen=True)
class TimeFilter:
    """The earlier statement's comparisons of one time column: the column as written,
    whether it holds dates or years as numbers, whether it was compared through
    ``EXTRACT(YEAR FROM …)``, and the window they leave."""

    column: exp.Column
    years: bool  # a number of years (concert.year), not a date
    extracted: bool  # EXTRACT(YEAR FROM column) compared with a year
    window: Window
    parts: tuple[exp.Expr, ...]


def _is_date(data_type: str) -> bool:
    return data_type.startswith(("date", "timestamp"))


def _is_year_number(name: str, data_type: str) -> bool:
    numeric = data_type.startswith(("int", "smallint", "bigint", "numeric", "double", "real"))
    return numeric and bool({"year", "yr"} & set(name_words(name)))


def _owner(select: exp.Select, column: exp.Column, catalog: Catalog) -> TableInfo | None:
    found: list[TableInfo] = []
    for source in sources(select):
        info = table_for(catalog, source)
        if info is None or info.column(column.name) is None:
            continue
        if not column.table or column.table == source.alias_or_name:
            found.append(info)
    return found[0] if len(found) == 1 else None


def _literal_date(literal: exp.Expr) -> date | None:
    if not isinstance(literal, exp.Literal) or not literal.is_string:
        return None
    text = literal.this.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if (moment.hour, moment.minute, moment.second, moment.microsecond) != (0, 0, 0, 0):
        return None  # a time of day: no whole-day window to move
    return moment.date()


def _literal_year(literal: exp.Expr) -> int | None:
    if isinstance(literal, exp.Literal) and not literal.is_string and literal.is_int:
        year = int(literal.name)
        return year if 1000 <= year <= 9999 else None
    return None


_OPS: dict[type[exp.Expr], str] = {
    exp.EQ: "=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=",
}  # fmt: skip
_FLIPPED = {"=": "=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


def _compared(part: exp.Expr) -> tuple[exp.Expr, str, exp.Expr] | None:
    """(the compared expression, the operator, the literal) of ``x op literal``."""
    op = _OPS.get(type(part))
    if op is None:
        return None
    left, right = part.this, part.expression
    if isinstance(left, exp.Literal) and not isinstance(right, exp.Literal):
        return right, _FLIPPED[op], left
    if isinstance(right, exp.Literal):
        return left, op, right
    return None


def _bounds(op: str, first: date, after: date) -> Window:
    """The window ``value op literal`` leaves, the literal's unit being [first, after)."""
    return {
        "=": Window(first, after),
        ">": Window(after, None),
        ">=": Window(first, None),
        "<": Window(None, first),
        "<=": Window(None, after),
    }[op]


def _read(part: exp.Expr, select: exp.Select, catalog: Catalog) -> TimeFilter | None:
    """The time comparison ``part`` is, if it is one."""
    found: list[tuple[exp.Expr, str, exp.Expr]] = []
    if isinstance(part, exp.Between):
        found = [(part.this, ">=", part.args["low"]), (part.this, "<=", part.args["high"])]
    elif (compared := _compared(part)) is not None:
        found = [compared]
    if not found:
        return None
    window = Window(None, None)
    column: exp.Column | None = None
    years = extracted = False
    for target, op, literal in found:
        extract = isinstance(target, exp.Extract) and target.name.lower() == "year"
        inner = target.expression if extract else target
        while isinstance(inner, exp.Cast):
            inner = inner.this
        if not isinstance(inner, exp.Column):
            return None
        info = _owner(select, inner, catalog)
        described = info.column(inner.name) if info is not None else None
        if described is None:
            return None
        if extract and _is_date(described.data_type) and (y := _literal_year(literal)):
            one = _bounds(op, date(y, 1, 1), date(y + 1, 1, 1))
            extracted = True
        elif _is_date(described.data_type) and (d := _literal_date(literal)) is not None:
            one = _bounds(op, d, d + timedelta(days=1))
        elif _is_year_number(inner.name, described.data_type) and (y := _literal_year(literal)):
            one = _bounds(op, date(y, 1, 1), date(y + 1, 1, 1))
            years = True
        else:
            return None
        column = inner
        window = _meet(window, one)
    assert column is not None
    return TimeFilter(column, years, extracted, window, (part,))


def _meet(a: Window, b: Window) -> Window:
    starts = [d for d in (a.start, b.start) if d is not None]
    ends = [d for d in (a.end, b.end) if d is not None]
    return Window(max(starts) if starts else None, min(ends) if ends else None)


def time_filters(sql: str, catalog: Catalog) -> list[TimeFilter]:
    """The earlier statement's time windows, one per compared time column."""
    return _time_filters(parse(sql), catalog)


def _time_filters(select: exp.Select, catalog: Catalog) -> list[TimeFilter]:
    by_column: dict[tuple[str, str], TimeFilter] = {}
    for part in where_conjuncts(select):
        found = _read(part, select, catalog)
        if found is None:
            continue
        key = (found.column.table, found.column.name)
        if key in by_column:
            known = by_column[key]
            found = TimeFilter(
                known.column,
                known.years,
                known.extracted and found.extracted,
                _meet(known.window, found.window),
                (*known.parts, *found.parts),
            )
        by_column[key] = found
    return list(by_column.values())


# --- the new window from the words ----------------------------------------------------

_GRAIN = r"(?P<g>years?|quarters?|months?|weeks?|days?)"
_MOVES = (
    re.compile(
        rf"^(?:the\s+)?(?P<dir>previous|prior|preceding|next|following|subsequent)\s+{_GRAIN}$"
    ),
    re.compile(rf"^(?:the\s+)?{_GRAIN}\s+(?P<dir>before|after|earlier|later|prior)(?:\s+that)?$"),
    re.compile(
        rf"^(?P<n>a|an|one|two|three|four|five|six|\d{{1,2}})\s+{_GRAIN}\s+"
        r"(?P<dir>earlier|later|before|after|ago|back|on)$"
    ),
)
_BOUND = re.compile(
    r"^(?P<op>on or before|on or after|before|after|since|until|till|prior to|"
    r"earlier than|later than|up to|through)\s+(?P<v>.+)$"
)
_YEAR = re.compile(r"^(?:the\s+year\s+)?(?P<y>(?:1[89]|2[01])\d\d)$")
_QUARTER = re.compile(
    r"^(?:the\s+)?(?:q(?P<q>[1-4])|(?P<w>first|second|third|fourth)\s+quarter)"
    r"(?:\s+(?:of\s+)?(?P<y>(?:1[89]|2[01])\d\d))?$"
)
_MONTH = re.compile(r"^(?P<m>[a-z]{3,9})\.?(?:\s+(?:of\s+)?(?P<y>(?:1[89]|2[01])\d\d))?$")
_YEAR_MONTH = re.compile(r"^(?P<y>(?:1[89]|2[01])\d\d)-(?P<m>\d{2})$")
_DAY = re.compile(r"^(?P<m>[a-z]{3,9})\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?$")
_LEAD = re.compile(r"^(?:(?:in|for|during|on|of|at|from)\s+)?(?:the\s+(?=year\s))?")


def _unit(grain: str) -> str:
    return grain.rstrip("s")


def _one_year(old: Window | None) -> int | None:
    """The year the earlier window lies in (a month said alone is of that year)."""
    if old is None or old.start is None or old.end is None:
        return None
    last = old.end - timedelta(days=1)
    return old.start.year if last.year == old.start.year else None


def _year_said(said: str | None, old: Window | None) -> int:
    """The year said, else the year of the earlier window; 0 when neither is one."""
    return int(said) if said else (_one_year(old) or 0)


def new_window(period: str, old: Window | None) -> Window | None:
    """The window ``period`` names, moved from ``old`` where it is said relative to it;
    None when the words name no window read here (today's periods: the linker's)."""
    text = re.sub(r"\s+", " ", period.lower()).strip(" ?.!")
    text = re.sub(r"\s+(?:instead|then|too|as well|only|alone)$", "", text)
    for pattern in _MOVES:
        if (move := pattern.match(text)) is not None:
            if old is None or old.start is None or old.end is None:
                raise FollowUpError("the previous answer counts no closed period to move")
            raw = (move.groupdict().get("n") or "one").lower()
            n = _NUMBERS.get(raw) or int(raw)
            n = -n if move.group("dir") in _BACK else n
            unit = _unit(move.group("g"))
            return Window(shift(old.start, unit, n), shift(old.end, unit, n))
    if (bound := _BOUND.match(text)) is not None:
        inner = new_window(bound.group("v"), old)
        if inner is None or inner.start is None or inner.end is None:
            return None
        op = bound.group("op")
        if op in ("before", "prior to", "earlier than"):
            return Window(None, inner.start)
        if op in ("after", "later than"):
            return Window(inner.end, None)
        if op in ("since", "on or after"):
            return Window(inner.start, None)
        return Window(None, inner.end)  # until, through, up to, on or before
    text = _LEAD.sub("", text)
    if (year := _YEAR.match(text)) is not None:
        y = int(year.group("y"))
        return Window(date(y, 1, 1), date(y + 1, 1, 1))
    if (quarter := _QUARTER.match(text)) is not None:
        q = (
            int(quarter.group("q") or 0)
            or ("first", "second", "third", "fourth").index(quarter.group("w")) + 1
        )
        y = _year_said(quarter.group("y"), old)
        if not y:
            raise FollowUpError(f"'{period}' names no year and the previous answer spans several")
        start = date(y, 3 * q - 2, 1)
        return Window(start, shift(start, "quarter", 1))
    if (ym := _YEAR_MONTH.match(text)) is not None and 1 <= int(ym.group("m")) <= 12:
        start = date(int(ym.group("y")), int(ym.group("m")), 1)
        return Window(start, shift(start, "month", 1))
    if (month := _MONTH.match(text)) is not None and month.group("m") in MONTHS:
        y = _year_said(month.group("y"), old)
        if not y:
            raise FollowUpError(f"'{period}' names no year and the previous answer spans several")
        start = date(y, MONTHS[month.group("m")], 1)
        return Window(start, shift(start, "month", 1))
    if (day := _DAY.match(text)) is not None and day.group("m") in MONTHS:
        y = _year_said(None, old)
        if not y:
            raise FollowUpError(f"'{period}' names no year and the previous answer spans several")
        try:
            first = date(y, MONTHS[day.group("m")], int(day.group("d")))
        except ValueError:
            raise FollowUpError(f"'{period}' is no day of {y}") from None
        return Window(first, first + timedelta(days=1))
    dates = explicit_dates(text)
    if len(dates) == 1 and text.strip() == text[dates[0][1] :].strip():
        first = dates[0][0]
        return Window(first, first + timedelta(days=1))
    return None


# --- the statement with its window moved ----------------------------------------------


def _render(kept: TimeFilter, window: Window) -> list[exp.Expr]:
    """``window`` as comparisons of ``kept``'s column, in the form the statement used."""
    column: exp.Expr = kept.column.copy()
    if kept.years or kept.extracted:
        if any(d is not None and (d.month, d.day) != (1, 1) for d in (window.start, window.end)):
            raise FollowUpError("the previous answer compares whole years; the period is not one")
        if kept.extracted:
            column = exp.Extract(this=exp.var("YEAR"), expression=column)

        def value(d: date) -> exp.Expr:
            return exp.Literal.number(d.year)

        if window.start and window.end and window.end.year == window.start.year + 1:
            return [exp.EQ(this=column, expression=value(window.start))]
    else:

        def value(d: date) -> exp.Expr:
            return exp.Literal.string(d.isoformat())

    parts: list[exp.Expr] = []
    if window.start is not None:
        parts.append(exp.GTE(this=column.copy(), expression=value(window.start)))
    if window.end is not None:
        parts.append(exp.LT(this=column.copy(), expression=value(window.end)))
    return parts


def _condition(period: str) -> str:
    """The period as a condition the linker reads about rows ("in 2015", "last year")."""
    if re.match(r"^(?:in|on|during|for|from|since|before|after|until|between|within|over)\b",
                period, re.I):  # fmt: skip
        return period
    return f"in {period}"


async def time_shifted(sql: str, period: str, catalog: Catalog, link: Link) -> str:
    """``sql`` over the period ``period`` names instead of its own window."""
    select = parse(sql)
    found = _time_filters(select, catalog)
    if len(found) > 1:
        raise FollowUpError(
            "the previous answer limits more than one date; which one moves is unclear"
        )
    old = found[0] if found else None
    try:
        window = new_window(period, old.window if old is not None else None)
    except FollowUpError as no_year:
        if old is not None:
            raise
        return await _on_a_month_number(sql, period, catalog, link, no_year)
    if old is None:
        # No window to move: the period is a new condition, on the column the linker
        # reads it about; else on the one date the statement's rows have.
        try:
            linked = await link_condition(sql, _condition(period), catalog, link)
        except FollowUpError as unread:
            if window is None:
                raise
            return _on_its_date(select, period, window, catalog, unread)
        return with_conditions(sql, linked)
    if window is None:
        # Today's periods ("last year"): the linker's reading, moved onto this column.
        linked = await link_condition(sql, _condition(period), catalog, link)
        read = _window_of(linked, select, catalog)
        if read is None:
            raise FollowUpError(f"'{period}' reads as no period of the previous answer's dates")
        window = read
    drop = {id(p) for p in old.parts}
    kept = [c.copy() for c in where_conjuncts(select) if id(c) not in drop]
    parts = [*kept, *_render(old, window)]
    select.set(
        "where", exp.Where(this=exp.and_(*parts)) if len(parts) > 1 else exp.Where(this=parts[0])
    )
    return select.sql(dialect="postgres")


async def _on_a_month_number(
    sql: str, period: str, catalog: Catalog, link: Link, no_year: FollowUpError
) -> str:
    """A month said without a year ("and in December?") on a statement with no date
    window, whose rows hold the month as a number (``weather.month``, read so in the
    first question: "in January" is ``month = 1``): the linker's reading of the month,
    in place of the statement's own month where it said one. There is no year to take,
    and none is needed. Read on a date column instead, the month is still refused
    (``no_year``): which year's December is unsaid."""
    try:
        linked = await link_condition(sql, _condition(period), catalog, link)
    except FollowUpError:
        raise no_year from None
    select = parse(sql)
    tables = {s.alias_or_name: table_for(catalog, s) for s in sources(select)}
    for alias, name in linked.columns:
        table = tables.get(alias)
        info = table.column(name) if table is not None else None
        if info is None or _is_date(info.data_type) or linked.joins:
            raise no_year
    return with_conditions(sql, linked)


@dataclass(frozen=True)
class _TimeColumn:
    """A date column, or a year held as a number, of one of the statement's tables."""

    table: TableInfo
    column: ColumnInfo
    window: TimeFilter  # the column as the statement names it, no limit yet


def _time_columns(select: exp.Select, catalog: Catalog) -> list[_TimeColumn]:
    """Every date column, and every year held as a number, of the statement's own
    tables."""
    found: list[_TimeColumn] = []
    for source in sources(select):
        info = table_for(catalog, source)
        if info is None:
            continue
        for column in info.columns:
            years = _is_year_number(column.name, column.data_type)
            if years and column.sample_values and not any(map(_a_year, column.sample_values)):
                continue  # a count of years ("year_working": 2, 5, 10), not a year
            if years or _is_date(column.data_type):
                named = exp.column(identifier(column.name), table=identifier(source.alias_or_name))
                window = TimeFilter(named, years, False, Window(None, None), ())
                found.append(_TimeColumn(info, column, window))
    return found


def _a_year(value: str) -> bool:
    return value.strip().isdigit() and 1000 <= int(value) <= 9999


# Words that point at the earlier rows rather than name anything ("the ones from 1982").
_POINTING = frozenset({"one", "ones", "those", "these", "them", "they", "rows", "records",
                       "entries", "items", "only", "just"})  # fmt: skip


def _said_of(words: list[str], time: _TimeColumn, catalog: Catalog) -> bool:
    """Whether every word said beside the period names ``time``'s column, by its name
    or its comment ("registered" → year_reg, "year the doctor was registered"; "songs
    released" → song_release_year), the rows' own table name aside."""
    own = set(name_words(readable(time.table, catalog)))
    said = [w for w in words if w not in STOP_WORDS and w not in _POINTING and w not in own]
    names = {*name_words(time.column.name), *name_words(time.column.comment)}
    return all(
        stem(w) in {stem(n) for n in names}
        or max((word_match(w, n) for n in names), default=0) >= 0.8
        for w in said
    )


def _said_words(words: list[str]) -> list[str]:
    return [w for w in words if w not in STOP_WORDS and w not in _POINTING]


def _on_its_date(
    select: exp.Select,
    period: str,
    window: Window,
    catalog: Catalog,
    unread: FollowUpError,
    *,
    said: Sequence[str] = (),
) -> str:
    """The statement limited to ``window`` on the one time column of its tables the
    words name (``said``: the words beside the period), or on its only one when they
    name none ("just for 1982"): a period the linker read about no column. Two or more
    that fit (a signup and a last login) are not told apart here: ``unread`` stands, or
    the refusal names them; words that name no date ("born before 1990" beside a hire
    date) leave ``unread``."""
    columns = _time_columns(select, catalog)
    if _said_words(list(said)):
        columns = [c for c in columns if _said_of(list(said), c, catalog)]
    if len(columns) != 1:
        if not columns:
            raise unread
        named = ", ".join(sorted(c.window.column.sql(dialect="postgres") for c in columns))
        raise FollowUpError(f"'{period}' could limit more than one date of the rows ({named})")
    parts = [*(c.copy() for c in where_conjuncts(select)), *_render(columns[0].window, window)]
    select = select.copy()
    select.set("where", exp.Where(this=exp.and_(*parts)))
    return select.sql(dialect="postgres")


def dated(sql: str, condition: str, catalog: Catalog, unread: FollowUpError) -> str:
    """A filter that is a period, alone or after words naming a date ("from 1982",
    "before 2010", "registered before 2010"), on a statement with no window, which the
    linker read about no column: on the rows' date those words name (see
    :func:`_on_its_date`); ``unread`` when no period ends the words."""
    select = parse(sql)
    if _time_filters(select, catalog):
        raise unread
    words = re.sub(r"\s+", " ", condition.lower()).strip(" ?.!").split(" ")
    for at in range(len(words)):
        try:
            window = new_window(" ".join(words[at:]), None)
        except FollowUpError:
            window = None
        if window is not None:
            said = name_words(" ".join(words[:at]))
            return _on_its_date(select, " ".join(words[at:]), window, catalog, unread, said=said)
    raise unread


def _window_of(linked: Linked, select: exp.Select, catalog: Catalog) -> Window | None:
    probe = select.copy()
    probe.set("joins", [*(probe.args.get("joins") or ()), *(j.copy() for j in linked.joins)])
    probe.set("where", exp.Where(this=exp.and_(*(c.copy() for c in linked.conditions))))
    windows = _time_filters(probe, catalog)
    return windows[0].window if len(windows) == 1 else None
