"""A year said as a time window ("customers … in 2023") answered by the year-number
column of a joined entity (``cars.year = 2023``, the cars' model year) where the rows
the statement reads carry dates of their own (``sales.sale_date``): the window is the
time the counted events happened, not an attribute of a thing they reach (ISSUE-45,
s63). Decided from types and from which table the year column sits on: a year column
of the statement's own rows (``flights.year``) is their time and stands, as does one
of a table that refers to dated rows (an award's year, its player born on a date);
one of a joined table referred to by rows read that keep a date or timestamp (a car
sold on a date) is refused, naming the year said and the column compared (never
claiming a column absent)."""

from __future__ import annotations

import re

from services.sql.catalog import is_number
from services.sql.linker import LinkContext, LinkError, is_temporal
from services.sql.verify._facts import StatementFacts

# "in 2023", "during 2023": a window of time; "from 2023", "of 2023" may name a kind
_IN_YEAR = re.compile(r"\b(?:in|during)\s+(?:the\s+year\s+)?(\d{4})\b(?!-)")


def check_year_window(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """Refuse a window year compared with a joined table's year number while another
    table the statement reads has dates."""
    years = {m.group(1) for m in _IN_YEAR.finditer(text)}
    if not years:
        return
    for (name, column), values in facts.required.items():
        if name == facts.base or not years & set(values):
            continue
        table = ctx.catalog.table(name)
        if table is None:
            continue
        info = next((c for c in table.columns if c.name == column), None)
        if info is None or not is_number(info.data_type):
            continue
        # rows read that refer to the year's table and carry a date: the events the
        # year's rows (cars) take part in (sales); a table the year's rows refer to
        # (an award's player, born on a date) is an attribute's, and the year stands
        dated = [
            edge.child
            for edge in ctx.vocab.graph.edges_of(name)
            if edge.parent == name
            and edge.child != name
            and edge.child in facts.tables
            and (t := ctx.catalog.table(edge.child)) is not None
            and any(is_temporal(c.data_type) for c in t.columns)
        ]
        if dated:
            year = next(iter(years & set(values)))
            raise LinkError(
                f"'in {year}' is a time: the statement compares {table.name}.{column}, "
                f"a year of the {table.name} rows, not a date of the rows it counts"
            )
