"""A question in two sentences: the second says what to show for the first's rows.

"Which country has the most car makers? List the country name." and "How many countries
does each continent have? List the continent id, continent name and the number of
countries." ask one thing: the first sentence says which rows (and what is counted), the
second only names the columns to show. Neither reader reads two sentences, so the
question is refused as asked; read apart, each sentence is one the readers know.

The statement is the first sentence's, showing what the second names. The second is read
on its own ("List the country name.") only to learn what it names, and every item it
shows must be one the first's statement can show without changing its rows:

- a column the first already shows, or one its GROUP BY groups by (shown, it adds
  no group); where the first neither groups, aggregates nor drops duplicates, a column
  of a table it reads once (each of its rows is one row of that table);
- an aggregate of the kind (COUNT, AVG, …) the first already shows.

Anything else (a column of a table the first does not group by, an aggregate it does not
compute) and the question stays refused: the two sentences then ask different things.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

# The first sentence, closed by "?" or "." before a space, then a request to show.
_TWO = re.compile(
    r"^\s*(?P<first>[^?]+?[?.])\s+"
    r"(?P<second>(?:(?:only|please|also|just|and)\s+)*"
    r"(?:list|give|show|return|display|find|report|tell|provide)\b[^?]*[.?]?)\s*$",
    re.IGNORECASE | re.DOTALL,
)
_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)


def two_sentences(question: str) -> tuple[str, str] | None:
    """(the question, the request to show) of a question said as a question then a
    request to show ("…? List the country name."); None for any other question."""
    m = _TWO.match(question)
    if m is None:
        return None
    first, second = m.group("first").strip(), m.group("second").strip()
    if first.endswith(".") and not re.match(
        r"(?:how|what|which|who|whom|whose|when|where|find|count)\b", first, re.IGNORECASE
    ):
        return None
    return first, second


def shown_as_asked(rows_sql: str, shown_sql: str) -> str | None:
    """``rows_sql`` (the first sentence's statement) showing every item of ``shown_sql``
    (the second's), or None when an item is one it cannot show without changing its rows
    (see the module's docstring)."""
    rows = sqlglot.parse_one(rows_sql, dialect="postgres")
    shown = sqlglot.parse_one(shown_sql, dialect="postgres")
    if not isinstance(rows, exp.Select) or not isinstance(shown, exp.Select):
        return None
    if _nested(rows) or _nested(shown):
        return None
    rows_tables = _aliases(rows)
    shown_tables = _aliases(shown)
    outputs: set[tuple[str, str]] = set()
    kinds: set[str] = set()
    for item in rows.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Column):
            outputs.add((rows_tables.get(inner.table, ""), inner.name))
        kinds |= _kinds(inner)
    # what the first can show without changing its rows: a column it groups by; where it
    # neither groups, nor aggregates, nor drops duplicates, any column of a table it
    # reads once (each of its rows is one row of that table)
    groups: dict[tuple[str, str], exp.Column] = {}
    group = rows.args.get("group")
    if group is not None:
        for g in group.expressions:
            if isinstance(g, exp.Column):
                groups[(rows_tables.get(g.table, ""), g.name)] = g
    plain = group is None and not kinds and not rows.args.get("distinct")
    once = [t for t in rows_tables.values() if list(rows_tables.values()).count(t) == 1]
    added: list[exp.Expr] = []
    for item in shown.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Column):
            key = (shown_tables.get(inner.table, ""), inner.name)
            if key in outputs:
                continue
            if key in groups:
                column = groups[key].copy()
            elif plain and key[0] in once:
                alias = next(a for a, t in rows_tables.items() if t == key[0])
                column = exp.column(inner.name, table=alias)
            else:
                return None
            outputs.add(key)
            added.append(exp.alias_(column, inner.name))
            continue
        found = _kinds(inner)
        if not found or not found <= kinds:
            return None
    if not added:
        return rows_sql
    rows = rows.copy()
    rows.set("expressions", [*rows.expressions, *added])
    return rows.sql(dialect="postgres")


def _kinds(item: exp.Expr) -> set[str]:
    """The aggregates an item computes, by kind ("COUNT", "AVG")."""
    return {node.key.upper() for node in item.find_all(*_AGGREGATES)}


def _aliases(select: exp.Select) -> dict[str, str]:
    return {t.alias_or_name: f"{t.db}.{t.name}" for t in select.find_all(exp.Table)}


def _nested(select: exp.Select) -> bool:
    return any(s is not select for s in select.find_all(exp.Select))
