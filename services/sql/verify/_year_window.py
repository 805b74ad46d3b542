"""A year said as a time window ("customers … in 2023") answered by the year-number
column of a joined entity (``cars.year = 2023``, the cars' model year) where the rows
the statement reads carry dates of their own (``sales.sale_date``): the window is the
time the counted events happened, not an attribute of a thing they reach (ISSUE-45,
s63). Decided from types and from which table the year column sits on: a year column
of the statement's own rows (``flights.year``) is their time and stands, as does one
of a table that refers to dated rows (an award's year, its player born on a date);
one of a joined table referred to by rows read that keep a date or timestamp (a car
sold on a date) is refused, naming the year said and the column compared (never
claiming a column absent).

The year's own verb decides the rest (s63, evtyear): the nearest verb before "in 2023"
("sold", "flew", "treated patients in …") names, where it names one, the table that
records its event (``linker.names_event_of``: ``sales``, ``flights``, ``treatments``). A
year of the counted rows read alone ("How many cars were sold in 2023?" answered with
``cars.year``) is refused naming both columns when that table refers to the counted rows
and keeps a date; so is a date of a table that the event's rows refer to, bounded by the
year while the event's rows are read ("doctors treated patients in 2025" answered with
``patients.date_of_birth``), and so is the counted rows' own date said with their
event's verb ("patients were treated in 2025" answered by their birth dates). A verb that names no such table ("made", "built", "opened",
"born") leaves the year where it was, and so does a verb that names a time column of
the counted rows themselves (s64, events: "merchants created in 2023" is their own
``created_at``, whatever coupons keep). The verb names its table by the lexicon, by a
noun made from it, or by a column keeping its time (``flights.dep_time``: "departed")."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import TableInfo, is_number
from services.sql.gate import parse_statements
from services.sql.linker import (
    LinkContext,
    LinkError,
    dated_referrers,
    names_event_by_column,
    names_event_of,
)
from services.sql.verify._facts import StatementFacts
from services.sql.words import irregular_past

# "in 2023", "during 2023": a window of time; "from 2023", "of 2023" may name a kind
_IN_YEAR = re.compile(r"\b(?:in|during)\s+(?:the\s+year\s+)?(\d{4})\b(?!-)")
_WORD = re.compile(r"[a-z]+")
# how far back from "in 2023" the year's verb is looked for ("sell cars to in 2023")
_REACH = 4


def _year_verb(text: str, year: str) -> list[str]:
    """The words said before "in <year>", nearest first, up to and including the first
    past form (the verb the year is said with: "born", "sold"), at most a few."""
    found = []
    for m in _IN_YEAR.finditer(text):
        if m.group(1) != year:
            continue
        for word in reversed(_WORD.findall(text[: m.start()])[-_REACH:]):
            found.append(word)
            if word.endswith("ed") or irregular_past(word):
                break
    return found


def _events_named(
    ctx: LinkContext,
    text: str,
    year: str,
    dated: dict[str, tuple[TableInfo, list[str]]],
    own: TableInfo | None = None,
) -> list[str]:
    """Of ``dated``, the tables the year's verb names as its event; none where the verb
    names a time column of ``own``, the counted rows' table ("merchants created in 2023":
    their own ``created_at``, not their coupons')."""
    words = _year_verb(text, year)
    if own is not None and any(names_event_by_column(ctx.vocab, w, own) for w in words):
        return []
    return [c for c, (t, _) in dated.items() if any(names_event_of(ctx.vocab, w, t) for w in words)]


def _date_bounds(sql: str, years: set[str]) -> dict[str, set[tuple[str, str]]]:
    """year -> the (table, column) a statement bounds by a date literal of that year
    (``sale_date >= '2023-01-01'``)."""
    statements = parse_statements(sql, shared=True)
    if len(statements) != 1:
        return {}
    tree = statements[0]
    aliases = {
        t.alias_or_name: f"{t.db}.{t.name}" if t.db else t.name for t in tree.find_all(exp.Table)
    }
    bounds: dict[str, set[tuple[str, str]]] = {}
    for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
        column, literal = node.this, node.expression
        if not (isinstance(column, exp.Column) and isinstance(literal, exp.Literal)):
            continue
        if not literal.is_string or column.table not in aliases:
            continue
        year = literal.this[:4]
        if year in years and literal.this[4:5] == "-":
            bounds.setdefault(year, set()).add((aliases[column.table], column.name))
    return bounds


def _refuse(
    year: str, table: TableInfo, column: str, events: list[tuple[TableInfo, list[str]]]
) -> None:
    """Name the year said, the column compared and the event's date columns."""
    named = ", ".join(f"{t.name}.{dates[0]}" for t, dates in events)
    raise LinkError(
        f"'in {year}' is a time: the statement compares {table.name}.{column}, "
        f"of the {table.name} rows, not a date of the rows that record "
        f"what happened to them ({named})"
    )


def check_year_window(ctx: LinkContext, text: str, facts: StatementFacts, sql: str = "") -> None:
    """Refuse a window year compared with a table's year number or date where rows that
    refer to that table keep dates of their own and are the year's event (see the
    module's docstring)."""
    years = {m.group(1) for m in _IN_YEAR.finditer(text)}
    if not years:
        return
    for (name, column), values in facts.required.items():
        if not years & set(values):
            continue
        table = ctx.catalog.table(name)
        if table is None:
            continue
        info = next((c for c in table.columns if c.name == column), None)
        if info is None or not is_number(info.data_type):
            continue
        year = next(iter(years & set(values)))
        dated = dated_referrers(ctx.vocab, name)
        # a table the year's rows refer to (an award's player, born on a date) is an
        # attribute's, and the year stands; rows read that refer to them are events
        read = [child for child in dated if child in facts.tables]
        if name == facts.base and not read:
            # the counted rows' own year (``flights.year``) is their time, unless the
            # year's verb names a dated table that refers to them as its event
            read = _events_named(ctx, text, year, dated, table)
        if read:
            _refuse(year, table, column, [dated[c] for c in read])
    for year, bounded in _date_bounds(sql, years).items() if sql else ():
        for name, column in bounded:
            table = ctx.catalog.table(name)
            if table is None:
                continue
            referrers = dated_referrers(ctx.vocab, name)
            dated = {c: v for c, v in referrers.items() if c in facts.tables}
            own = None
            if name == facts.base and not dated:
                # the counted rows' own date, said with the verb of their event
                # ("patients were treated in 2025": not their birth date)
                dated, own = referrers, table
            events = _events_named(ctx, text, year, dated, own)
            if events:
                _refuse(year, table, column, [dated[c] for c in events])
