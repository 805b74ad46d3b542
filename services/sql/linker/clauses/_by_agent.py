"""A value said as the agent of a verb ("cars made by toyota", "books written by X"): the
column it is a value of is the one named by the verb's agent noun (``maker`` for "made",
``writer`` for "written"), where the value is stored in several columns alike. In car_1
"toyota" is a maker, a maker's full name, and a model's name; "made by" says which: the
maker. Without the verb's word the tie was refused. Where no column, or several, carry
the agent noun as a word of their name, nothing is decided here (the tie stays a tie).
"""

from __future__ import annotations

from services.sql.linker._agents import agent_nouns
from services.sql.linker._vocabulary import Col
from services.sql.linker.clauses._reading import Condition, Reading
from services.sql.words import name_words


def by_agent(reading: Reading, conditions: list[Condition]) -> dict[int, Col]:
    """The column of each stored-value condition that follows "<verb> by", by ``id`` of
    the condition: the one column holding the value whose name is the verb's agent."""
    placed: dict[int, Col] = {}
    for condition in conditions:
        start = condition.start
        if condition.col is not None or condition.value or start < 1:
            continue
        if reading.low(start) != "by" or any(m.kind == "column" for m in condition.mentions):
            continue
        nouns = agent_nouns(reading.low(start - 1))
        cols = {
            m.col.key: m.col
            for m in condition.mentions
            if m.kind == "value"
            and m.col is not None
            and nouns & {w.lower() for w in name_words(m.col.column.name)}
        }
        if len(cols) == 1:
            placed[id(condition)] = next(iter(cols.values()))
    return placed
