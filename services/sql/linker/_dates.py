"""Dates: time windows in words ("last 3 months", "Q2 2024", "between Jan 1 and Mar 31,
2024"), weekends and weekdays, and which date column a question means. The calendar
(month names, written dates, shifting and truncating) is ``services.sql.words._calendar``."""

from __future__ import annotations

import itertools
import re
from datetime import date, timedelta

from services.sql.catalog import TableInfo
from services.sql.linker._context import LinkContext
from services.sql.linker._lookup import fact_candidates, measure_tables
from services.sql.linker._plan import LinkError, Measure, Plan, is_temporal, lit
from services.sql.linker._vocabulary import Col
from services.sql.words import (
    MONTHS,
    STOP_WORDS,
    explicit_dates,
    irregular_past,
    lemma,
    shift,
    stem,
    tokenize,
    truncate,
)

GRAINS = {"day": "day", "week": "week", "month": "month", "quarter": "quarter", "year": "year"}
# Words that make a column's name say when something happened (``open_year``,
# ``sbCustJoinDate``, ``created_time``).
DATE_NAME_WORDS = ("date", "year", "month", "time", "day")


def past_base(word: str) -> str | None:
    """The base of a verb's past form ("departed" -> depart, "sold" -> sell), or None
    for a word that is no past form."""
    low = word.lower()
    if irregular_past(low):
        return lemma(low)
    if low.endswith("ed") and len(low) > 4:
        return low[:-2]
    return None


def verb_names_part(base: str, part: str) -> bool:
    """Whether a verb (its base) names a column's name part: the part is the verb's
    start ("dep" of depart, "appr" of approve), the verb the part's ("treat" of
    treatment), or both share a long start ("register", "registration")."""
    if len(part) < 3 or len(base) < 4 or part in DATE_NAME_WORDS:
        return False
    if base.startswith(part) or part.startswith(base):
        return True
    shared = next((i for i, (a, b) in enumerate(zip(base, part, strict=False)) if a != b), 0)
    return shared >= 6


def said_with_its_verb(ctx: LinkContext, near: str, col: Col) -> bool:
    """Whether a past form said before a time window names ``col`` (``_named_time``):
    "patients registered in 2023" names ``date_of_registration``, not ``date_of_birth``."""
    parts = ctx.vocab.column_words.get(col.key, [])
    bases = [b for w in re.findall(r"[a-z]+", near) if (b := past_base(w)) is not None]
    return any(verb_names_part(b, p) for b in bases for p in parts)


RECENCY = re.compile(r"\b(?:most\s+recent(?:ly)?|latest|newest|oldest|earliest)\b")


def day_kinds(ctx: LinkContext, plan: Plan) -> None:
    """ "how many of these were on weekends": the count again, of the rows whose date
    falls on a Saturday or Sunday (weekdays: Monday to Friday)."""
    kind = re.search(r"\b(?:on|during|over)\s+(?:the\s+)?(weekends?|weekdays?)\b", ctx.low)
    if kind is None:
        kind = re.search(r"\b(weekend|weekday)\s+\w+", ctx.low)
    if kind is None:
        return
    counts = [m for m in plan.measures if m.func in ("COUNT", "COUNT_DISTINCT")]
    if not counts:
        return
    date_col = date_column(ctx, Plan(measures=plan.measures, dims=plan.dims))
    if date_col is None:
        return
    days = "(0, 6)" if kind.group(1).startswith("weekend") else "(1, 2, 3, 4, 5)"
    base = counts[0]
    for m in plan.measures:
        if m.dow:
            m.filter = (date_col, f"EXTRACT(DOW FROM {{c}}) IN {days}")
            break
    else:
        extra = Measure(base.func, table=base.table, col=base.col, label=f"{kind.group(1)} count")
        extra.filter = (date_col, f"EXTRACT(DOW FROM {{c}}) IN {days}")
        plan.measures.append(extra)
    ctx.known.update({"weekend", "weekday", "saturday", "sunday", "dow"})


def date_column(ctx: LinkContext, plan: Plan, near: str = "") -> Col | None:
    """The date a time window or a grain is taken of: among the measured and named
    tables' dates, the one the words before the window name (``near``), said with its
    verb, or named by a stored state; else the first of the first table.

    A word spent on a column the statement groups by names that column, not a date
    ("which 3 ship countries had the most orders in 1998": 'ship' is ``ship_country``'s,
    the year is the orders', not ``shipped_date``'s; ``_grouped_words``). A date the words
    partly name is never placed below one they do not name at all: the name score of a
    column whose other words go unexplained can fall under zero, where an unnamed
    column's is zero ("orders … placed in each month of 1996" went to ``required_date``
    over ``order_date``)."""
    tables = dated_in_order(ctx, plan)
    grouped = _grouped_words(ctx, plan)
    near_words = [
        stem(w) for w in re.findall(r"[a-z]+", near) if w not in STOP_WORDS
        and stem(w) not in grouped
    ]  # fmt: skip
    state_words = words_of_states(ctx, grouped)
    best: tuple[float, Col] | None = None
    for rank, table in enumerate(tables):
        for index, column in enumerate(table.columns):
            if not is_temporal(column.data_type):
                continue
            col = Col(table, column)
            score = -0.3 * rank - index * 0.01
            if column.nullable:
                score -= 0.25  # a date set only in some state ("closed_at") is no timeline
            if near_words:
                score += 3 * max(0.0, ctx.vocab.column_score(near_words, col))
                if said_with_its_verb(ctx, near, col):
                    score += 3  # "registered in 2023": the registration's date
            states = state_words.get(table.qualified)
            if states:
                # "won in 2024" with stage 'Closed Won': the date of closing
                score += ctx.vocab.column_score(states, col)
            if best is None or score > best[0]:
                best = (score, col)
    return best[1] if best else None


def dated_in_order(ctx: LinkContext, plan: Plan) -> list[TableInfo]:
    """The tables whose dates a window or a grain may be taken of, nearest the measured
    rows first: the measured tables, then the tables that relate them to the grouped ones,
    then the grouped and the named tables.

    "How many different customers did each employee sell to in 1998" counts customers per
    employee; a customer meets an employee only through an order, so the rows the count
    stands on are the orders, and 1998 is theirs (``orders.order_date``), not a date of
    the grouped employee (``employees.birth_date``, refused by the data) nor of the
    counted customer. A table between the measured and the grouped ones is one only where
    it refers to a table beside it on the path (a record relating the two); a table both
    its neighbours refer to (a city both customers and employees live in) relates them by
    sharing, and its dates are no event of theirs. A date the words name still wins
    (``date_column`` scores what is said above this order)."""
    tables = fact_candidates(ctx, plan)
    measured = list(dict.fromkeys(t for m in plan.measures for t in measure_tables(m)))
    grouped = [d.col.table for d in plan.dims if d.col.table not in measured]
    between: list[TableInfo] = []
    for start in measured:
        for goal in grouped:
            for table in _relating(ctx, start, goal):
                if table not in tables and table not in between:
                    between.append(table)
    ordered = [*measured, *between, *(t for t in tables if t not in measured)]
    return ordered + [t for t in ctx.named if t not in ordered]


def _relating(ctx: LinkContext, start: TableInfo, goal: TableInfo) -> list[TableInfo]:
    """The tables strictly inside the join path from ``start`` to ``goal`` that refer to
    a table beside them on it (see :func:`dated_in_order`)."""
    if start.qualified == goal.qualified:
        return []
    path = ctx.graph.path(start.qualified, goal.qualified)
    if not path:
        return []
    found: list[TableInfo] = []
    here = start.qualified
    for before, after in itertools.pairwise(path):
        here = before.other(here)  # the table the two edges meet at
        if here not in (before.child, after.child):
            continue  # a table both neighbours refer to: shared, no record of theirs
        table = ctx.catalog.table(here)
        if table is not None:
            found.append(table)
    return found


def _grouped_words(ctx: LinkContext, plan: Plan) -> frozenset[str]:
    """The name words of the columns the statement groups by that are no time of their
    own: words the question spent on them."""
    return frozenset(
        w
        for d in plan.dims
        if not d.grain and not is_temporal(d.col.column.data_type)
        for w in ctx.vocab.column_words.get(d.col.key, [])
    )


# The parts a table may spell its rows' dates out in, coarsest first.
CALENDAR_PARTS = ("year", "quarter", "month", "week", "day")


def calendar_part(table: TableInfo, grain: str) -> Col | None:
    """The column of ``table`` that stores the ``grain`` of each row's date, where the
    table spells its dates out in parts (``flights.year``, ``month``, ``day`` beside
    ``time_hour``): "in each month" groups by the stored ``month``, the calendar the data
    keeps, not by a month cut from the timestamp, a different value for the same month.
    A lone ``year`` (``cars.year``, the year a car was made) is no part of a date and is
    not taken: at least two parts, the grain among them, say the table keeps a calendar."""
    named = {c.name.lower(): c for c in table.columns if not is_temporal(c.data_type)}
    parts = [p for p in CALENDAR_PARTS if p in named]
    if grain not in parts or len(parts) < 2:
        return None
    return Col(table, named[grain])


# Years a column may hold for its values to be years: a span outside them is a count, a
# code or an amount that happens to sit in a column named "year" (``years_working``).
PLAUSIBLE_YEARS = (1800, 2200)


def year_column(ctx: LinkContext, plan: Plan, near: str = "") -> Col | None:
    """The integer column a year said in the question bounds when no date column is in
    scope: one whose name says it holds a year and whose every stored value (its span,
    read by the catalog) is a plausible year. Chosen among the tables in scope as
    :func:`date_column` chooses a date."""
    tables = dated_in_order(ctx, plan)
    near_words = [stem(w) for w in re.findall(r"[a-z]+", near) if w not in STOP_WORDS]
    best: tuple[float, Col] | None = None
    for rank, table in enumerate(tables):
        for index, column in enumerate(table.columns):
            span = column.span
            if span is None or not PLAUSIBLE_YEARS[0] <= span[0] <= span[1] <= PLAUSIBLE_YEARS[1]:
                continue
            col = Col(table, column)
            score = -0.3 * rank - index * 0.01 - (0.25 if column.nullable else 0.0)
            if near_words:
                score += 3 * ctx.vocab.column_score(near_words, col)
            if best is None or score > best[0]:
                best = (score, col)
    return best[1] if best else None


def whole_year(bound: str) -> int | None:
    """The year a window's bound starts (``'2015-01-01'``), or None when the bound falls
    inside a year: a year column can say only whole years."""
    m = re.fullmatch(r"'(\d{4})-01-01'", bound)
    return int(m.group(1)) if m else None


def words_of_states(
    ctx: LinkContext, grouped: frozenset[str] = frozenset()
) -> dict[str, list[str]]:
    """The words of the multi-word stored values the question names by one of their
    words ("won" -> closed, won), by the table that stores them: they say which of that
    table's dates the question means. A value stored in another table says nothing of
    this one's dates: "orders shipped by Federal Shipping … in 1996" names a shipper,
    whose name's 'shipping' is no state of the order (the window went to
    ``orders.shipped_date``). A word that names a column the statement groups by
    (``grouped``) is that column's: "ship countries" says no shipper's 'Federal
    Shipping'."""
    found: dict[str, list[str]] = {}
    for tok in tokenize(ctx.question):
        if tok.quoted or len(tok.low) < 3 or stem(tok.low) in grouped:
            continue
        for col, value in set(ctx.vocab.value_words.get(lemma(tok.low), [])):
            found.setdefault(col.table.qualified, []).extend(
                stem(w) for w in re.findall(r"[a-z]+", value.lower())
            )
    return found


def date_filters(ctx: LinkContext, plan: Plan) -> None:
    low = ctx.low
    windows: list[tuple[str, str, int]] = []  # (lower bound expr, upper bound expr, at)
    today = ctx.today

    def day(d: date) -> str:
        return lit(d.isoformat())

    for m in re.finditer(
        r"\b(?:in the |over the |during the |within the )?(?:past|last)\s+(\d+)\s+(calendar\s+)?(day|week|month|quarter|year)s?\b",
        low,
    ):
        n, unit = int(m.group(1)), m.group(3)
        if unit == "day" and re.match(r"[^.?]{0,12}inclusive of today", low[m.end() :]):
            n -= 1  # today is one of the n days
        lower = shift(today, unit, -n)
        if m.group(2):
            lower = truncate(lower, unit)
        upper = ""
        if re.match(
            r"[^.?]{0,30}\b(?:excluding|not including|exclusive of) (?:the )?current",
            low[m.end() :],
        ):
            lower = shift(truncate(today, unit), unit, -n)
            upper = day(truncate(today, unit))
        windows.append((day(lower), upper, m.start()))
    for m in re.finditer(
        r"\b(?:in the |over the |during the )?(past|last|previous|this|current|next)\s+(week|month|quarter|year)\b",
        low,
    ):
        which, unit = m.group(1), m.group(2)
        start = truncate(today, unit)
        if which == "past":
            windows.append((day(shift(today, unit, -1)), "", m.start()))
        elif which == "next":
            windows.append((day(shift(start, unit, 1)), day(shift(start, unit, 2)), m.start()))
        elif which in ("this", "current"):
            if re.search(
                r"(excluding|not including|exclusive of)\s*(the\s*)?$",
                low[max(0, m.start() - 25) : m.start()],
            ):
                continue
            windows.append((day(start), day(shift(start, unit, 1)), m.start()))
        else:
            windows.append((day(shift(start, unit, -1)), day(start), m.start()))
    for m in re.finditer(r"\b([a-z]{3,9})\s+(?:of\s+)?(\d{4})\b", low):
        month = MONTHS.get(m.group(1))
        if month and not re.match(r"\s*\d", low[m.end() :]):
            first = date(int(m.group(2)), month, 1)
            windows.append((day(first), day(shift(first, "month", 1)), m.start()))
    dates = list(explicit_dates(low))
    between = re.search(r"\bbetween\s+(.+?)\s+and\s+(.+?)(?=[,?;(]|$| inclusive| exclusive)", low)
    if between and len(dates) >= 2:
        start, end = dates[0][0], dates[1][0]
        windows.append(
            (
                lit(start.isoformat()),
                lit((end + timedelta(days=1)).isoformat()),
                between.start(),
            )
        )
        dates = dates[2:]
    for d, at in dates:
        word = low[max(0, at - 25) : at]
        if re.search(r"(on or after|from|since|after|starting)\s*$", word):
            windows.append(
                (
                    lit(d.isoformat())
                    if "after" not in word or "on or" in word
                    else lit((d + timedelta(days=1)).isoformat()),
                    "",
                    at,
                )
            )
        elif re.search(r"(before|until|prior to)\s*$", word):
            windows.append(("", lit(d.isoformat()), at))
        elif re.search(r"(on or before|up to|through)\s*$", word):
            windows.append(("", lit((d + timedelta(days=1)).isoformat()), at))
        else:
            windows.append((lit(d.isoformat()), lit((d + timedelta(days=1)).isoformat()), at))
    for m in re.finditer(r"\b(?:in|during|for|of)\s+(?:the\s+year\s+)?(\d{4})\b", low):
        year = int(m.group(1))
        if re.search(r"\b(?:start|beginning)\s*$", low[: m.start()]):
            continue  # "since the start of 2000": a bound (``_conditions``), not the year
        if 1900 <= year <= 2200 and not any(abs(w[2] - m.start()) < 30 for w in windows):
            windows.append((lit(f"{year}-01-01"), lit(f"{year + 1}-01-01"), m.start()))
    if date_column(ctx, plan) is None:
        # "between 2014 and 2016", "from 2014 to 2016": whole years, both said ones in
        # (only for a year column: a date column's ranges are read elsewhere)
        for m in re.finditer(r"\b(?:between|from)\s+(\d{4})\s+(?:and|to|through)\s+(\d{4})\b", low):
            since, until = int(m.group(1)), int(m.group(2))
            if 1800 <= since <= until <= 2200:
                windows = [w for w in windows if not m.start() - 5 <= w[2] <= m.end()]
                windows.append((lit(f"{since}-01-01"), lit(f"{until + 1}-01-01"), m.start()))
    quarter = re.search(
        r"\b(first|second|third|fourth|q[1-4])\s+quarter\s+of\s+(\d{4})|\bq([1-4])\s+(\d{4})",
        low,
    )
    if quarter:
        qn = {"first": 1, "second": 2, "third": 3, "fourth": 4}.get(
            quarter.group(1) or "", 0
        ) or int((quarter.group(1) or quarter.group(3) or "q1")[-1])
        year = int(quarter.group(2) or quarter.group(4))
        start = date(year, 3 * qn - 2, 1)
        end = date(year + (1 if qn == 4 else 0), 1 if qn == 4 else 3 * qn + 1, 1)
        windows = [w for w in windows if abs(w[2] - quarter.start()) > 40]
        windows.append((lit(start.isoformat()), lit(end.isoformat()), quarter.start()))
    month_filters(ctx, plan)
    if not windows:
        return
    for low_bound, high_bound, at in windows:
        col = date_column(ctx, plan, near=low[max(0, at - 40) : at])
        whole = not any(b and whole_year(b) is None for b in (low_bound, high_bound))
        if col is not None and whole and year_or_date(ctx, plan, col, low[max(0, at - 40) : at]):
            col = None  # the words name the year column: whole years on it
        if col is None:
            plan.filters.append(
                year_filter(ctx, plan, low[max(0, at - 40) : at], low_bound, high_bound)
            )
            continue
        cond = []
        if low_bound:
            cond.append(f"{{c}} >= {low_bound}")
        if high_bound:
            cond.append(f"{{c}} < {high_bound}")
        plan.filters.append((col, " AND ".join(cond)))


def year_or_date(ctx: LinkContext, plan: Plan, col: Col, near: str) -> bool:
    """Whether whole years said ("after 2021") bound the year column of ``col``'s table
    rather than its date column ``col``: True where the words before the years (``near``)
    name the year column and not the date; False where they name the date, or where the
    table keeps no year column. Named by neither, a table that keeps both a date
    (``cars.crtd_ts``, when the row was written) and a year (``cars.year``, the model
    year) is refused naming both: "the cars built after 2021" is the one or the other,
    and which the words do not say. A year the table spells out with the other parts of
    its date (``weather.year`` beside ``month``, ``day`` and ``time_hour``) is the same
    date, no second reading."""
    years = year_column(ctx, plan, near)
    if years is None or years.table.qualified != col.table.qualified:
        return False
    if calendar_part(col.table, "year") is not None:
        return False  # the year of the row's own date, spelled out beside it: one date
    words = [stem(w) for w in re.findall(r"[a-z]+", near) if w not in STOP_WORDS]
    said = {c.column.name: ctx.vocab.column_score(words, c) > 0 for c in (col, years)}
    if said[years.column.name] != said[col.column.name]:
        return said[years.column.name]
    table = col.table.name
    raise LinkError(
        f"the years said may bound {table}.{years.column.name} or {table}.{col.column.name}"
        ", and the question names neither"
    )


# "in July", "during the month of July", "in June, July or August": a month or a list of
# months (joined by commas, "or", "and") said without a year; a list ends at its last
# month, so "in June and the delays" is June alone.
_MONTH_NAME = rf"(?:{'|'.join(sorted(MONTHS, key=len, reverse=True))})"
_MONTHS_SAID = re.compile(
    rf"\b(?:in|during)\s+(?:the\s+months?\s+of\s+)?"
    rf"({_MONTH_NAME}(?:\s*(?:,\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+){_MONTH_NAME})*)\b"
)


def month_filters(ctx: LinkContext, plan: Plan) -> None:
    """A month said without a year ("in July") bounds the month the table stores, where
    the table spells its dates out (:func:`calendar_part`): ``month = 7`` is July of every
    year the data holds, what the words say. Left unread otherwise (a timestamp has no
    month without a year), so the verifier refuses the question naming the month."""
    low = ctx.low
    for m in _MONTHS_SAID.finditer(low):
        named = [MONTHS[word] for word in re.findall(r"[a-z]+", m.group(1)) if word in MONTHS]
        if len(named) != len(set(named)) or re.match(r"\s*,?\s*(?:of\s+)?\d", low[m.end() :]):
            continue  # "in July 2013", "in May 5": the windows read those whole
        col = date_column(ctx, plan, near=low[max(0, m.start() - 40) : m.start()])
        part = calendar_part(col.table, "month") if col is not None else None
        if part is None:
            continue
        if len(named) == 1:
            plan.filters.append((part, f"{{c}} = {named[0]}"))
        else:
            plan.filters.append((part, f"{{c}} IN ({', '.join(str(n) for n in named)})"))


def year_filter(
    ctx: LinkContext, plan: Plan, near: str, low_bound: str, high_bound: str
) -> tuple[Col, str]:
    """A window of whole years on a year column ("in 2015": ``= 2015``; "from 2014 to
    2016": a range), for a schema that keeps its time as an integer year; refused when no
    such column is in scope or the window falls inside a year ("March 2015")."""
    first = whole_year(low_bound) if low_bound else None
    end = whole_year(high_bound) if high_bound else None
    col = year_column(ctx, plan, near)
    if col is None or (low_bound and first is None) or (high_bound and end is None):
        raise LinkError("the question names a time window but no date column is in scope")
    if first is not None and end == first + 1:
        return col, f"{{c}} = {first}"
    if first is not None and end is not None:
        return col, f"{{c}} BETWEEN {first} AND {end - 1}"
    cond = []
    if first is not None:
        cond.append(f"{{c}} >= {first}")
    if end is not None:
        cond.append(f"{{c}} < {end}")
    return col, " AND ".join(cond)
