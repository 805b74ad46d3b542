"""A month said without a year ("in July", "in June, July or August"), read by the clause
reader as the list-oriented reader reads it (``_dates.month_filters``): the month the
table stores, where it spells its dates out in parts (``flights.month``), ``= 7`` or
``IN (6, 7, 8)``. Before, the clause reader read no month, so each such question went to
the other reader, which reads no comparative adjective: "flights longer than 1000 miles
… in July" was refused there for its unit, "in July" alone.

Only a month's full name, capitalised ("May" is a month, "may" a verb), after "in" or
"during". A month followed by a number ("July 2013", "July 5") is left to the date
readers; a table in scope without a stored month declines, for the other reader."""

from __future__ import annotations

import calendar

from services.sql.linker._mentions import Token
from services.sql.linker.clauses._reading import Condition, Decline, Read, Reading

FULL_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}


def is_month(token: Token) -> bool:
    """A month said by its full name, capitalised as a name is."""
    return token.low in FULL_MONTHS and token.text[:1].isupper()


def month_clause(reading: Reading, read: Read, i: int) -> int | None:
    """ "in June, July or August": one condition on the stored month (``dimension``
    "month", placed by ``make_plan`` on the table in scope that stores one)."""
    if reading.low(i) not in ("in", "during"):
        return None
    j = i + 1
    if reading.words(j, 3) in ("the month of", "the months of"):
        j += 3
    months: list[int] = []
    while j < reading.size and is_month(reading.tokens[j]):
        months.append(FULL_MONTHS[reading.low(j)])
        nxt = j + 1 + (reading.low(j + 1) in ("or", "and"))
        comma = _gap(reading, j).strip() == ","
        if nxt < reading.size and is_month(reading.tokens[nxt]) and (nxt > j + 1 or comma):
            j = nxt
            continue
        j += 1
        break
    if not months:
        return None
    if j < reading.size and reading.tokens[j].number is not None:
        return None  # "in July 2013", "in July, 2013": the date readers read it whole
    if len(set(months)) != len(months):
        raise Decline("a month said twice")
    value = str(months[0]) if len(months) == 1 else f"({', '.join(map(str, months))})"
    op = "=" if len(months) == 1 else "IN"
    read.conditions.append(Condition(i, j, [], op, value, dimension="month"))
    reading.use(i, j)
    return j


def _gap(reading: Reading, j: int) -> str:
    """The text between token ``j`` and the next (commas are no tokens)."""
    if j + 1 >= reading.size:
        return ""
    return reading.ctx.question[reading.tokens[j].end : reading.tokens[j + 1].start]
