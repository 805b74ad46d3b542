"""A person said by full name ("Jane Smith"): two stored values side by side, the first a
value of a table's first-name column and the second of the same table's last-name column,
name one row of that table. Each word alone may be a value of several tables (a doctor's
first name, a patient's last name); resolved one by one, the first could land on the
doctors and the second on the patients, a condition nobody asked ("patients called Smith
treated by a doctor called Jane"): a confident wrong answer. Read as one name, both words
go to the one table whose person columns hold them both; where no table or several do,
nothing is decided here.
"""

from __future__ import annotations

import itertools

from services.sql.linker._plan import person_name
from services.sql.linker._vocabulary import Col
from services.sql.linker.clauses._reading import Condition


def full_names(conditions: list[Condition]) -> dict[int, Col]:
    """The column of each condition that is half of a full name, by ``id`` of the
    condition: adjacent value conditions whose stored values are one table's first and
    last name, in that order."""
    placed: dict[int, Col] = {}
    for first, last in itertools.pairwise(conditions):
        if first.end != last.start or first.col is not None or last.col is not None:
            continue
        if id(first) in placed or first.value or last.value:
            continue
        tables = {
            m.col.table.qualified: m.col.table
            for m in first.mentions
            if m.kind == "value" and m.col is not None
        }
        pairs = []
        for table in tables.values():
            person = person_name(table)
            if person and _holds(first, person[0]) and _holds(last, person[1]):
                pairs.append(person)
        if len(pairs) == 1:
            placed[id(first)], placed[id(last)] = pairs[0]
    return placed


def _holds(condition: Condition, col: Col) -> bool:
    """The condition's words are a stored value of ``col``, and it names no other column."""
    if any(m.kind == "column" for m in condition.mentions):
        return False
    return any(m.kind == "value" and m.col is not None and m.col.key == col.key
               for m in condition.mentions)  # fmt: skip
