"""A time grouping as a result shows it: "per year" is the year's number (2023), a finer
period ("per month", "per quarter", "per week", "per day") the date it starts on
(2023-03-01).

Decided once, for every path that groups by a period of a date — the first question's
linker, the intents a model fills, and the follow-ups that read an earlier statement
back: a year is named by its number alone (one row per year either way, and 2023 reads
as the year, where 2023-01-01 reads as a day), while a month, quarter, week or day needs
its year beside it once the data spans several years (March 2023 is not March 2024), and
its first day carries both. A table that keeps the calendar part as a column of its own
(``flights.month``) is grouped by that column, not here.
"""

from __future__ import annotations

from sqlglot import exp

# The period named by its number; every other grain is named by the date it starts on.
NUMBERED = "year"


def period_sql(grain: str, column: str) -> str:
    """The Postgres expression that groups ``column`` (SQL text) by ``grain``."""
    if grain.lower() == NUMBERED:
        return f"CAST(EXTRACT(YEAR FROM {column}) AS INTEGER)"
    return f"DATE_TRUNC('{grain.lower()}', {column})"


def period_node(grain: str, column: exp.Expression) -> exp.Expression:
    """``period_sql`` as a sqlglot expression over ``column``."""
    if grain.lower() == NUMBERED:
        extracted = exp.Extract(this=exp.var("YEAR"), expression=column)
        return exp.Cast(this=extracted, to=exp.DataType.build("int"))
    return exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(grain.lower()), column])


def period_words(grain: str, column: str) -> str:
    """The grouping in the interpretation's words: what a row's period value is."""
    if grain.lower() == NUMBERED:
        return f"year of {column} (as a number)"
    return f"{grain.lower()} of {column} (its first day)"


def period_grain(node: exp.Expression) -> str:
    """The grain an expression groups a date by (``period_sql``'s or any
    ``DATE_TRUNC``/``EXTRACT`` of a statement read back), else ''."""
    for trunc in node.find_all(exp.DateTrunc, exp.TimestampTrunc):
        return str(trunc.args.get("unit") or "").strip("'").lower()
    for extract in node.find_all(exp.Extract):
        return str(extract.this.name).lower()
    if isinstance(node, exp.Anonymous) and node.name.lower() == "date_trunc":
        unit = node.expressions[0] if node.expressions else None
        return unit.name.lower() if isinstance(unit, exp.Literal) else ""
    return ""
