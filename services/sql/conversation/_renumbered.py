"""A value swap said as a number with its noun ("now 4 cylinders" after "8 cylinder
cars") replaces the number the earlier statement compares with the column that noun
names (``cylinders = 8`` becomes ``cylinders = 4``). A swap only replaced stored text
values, and the words read again as a condition of their own ("which cars are 4
cylinder?") linked no column, so the turn was refused although the earlier statement
says which number the noun stands for."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.conversation._statement import parse
from services.sql.words import stem

_COUNTED = re.compile(r"^(?P<n>\d+(?:\.\d+)?)[\s-]+(?P<noun>[a-z][a-z_]*)$", re.IGNORECASE)


def renumbered(sql: str, value: str) -> str | None:
    """``sql`` with the number of ``value`` ("4 cylinder") in place of the one number
    literal it compares with a column named by the value's noun; None where the value is
    no number with a noun, or no column, or more than one, compared with a number is
    named so (which number the swap replaces is then not said)."""
    counted = _COUNTED.match(value.strip())
    if counted is None:
        return None
    noun = stem(counted.group("noun").lower())
    select = parse(sql)
    hits = [
        literal
        for literal in select.find_all(exp.Literal)
        if not literal.is_string and _compared_with(literal, noun)
    ]
    if len(hits) != 1:
        return None
    hits[0].replace(exp.Literal.number(counted.group("n")))
    return select.sql(dialect="postgres")


def _compared_with(literal: exp.Literal, noun: str) -> bool:
    """Whether ``literal`` is compared (=, <, >, <=, >=, <>) with a column whose name's
    last word stems to ``noun``."""
    compared = literal.parent
    if not isinstance(compared, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
        return False
    sides = (compared.this, compared.expression)
    column = next((c for c in sides if isinstance(c, exp.Column)), None)
    if column is None:
        return False
    return stem(column.name.lower().split("_")[-1]) == noun
