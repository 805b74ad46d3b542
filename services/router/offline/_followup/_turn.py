"""Which earlier turn a reference that names its rows points at: "what categories are those
products in" after "top 5 products by quantity sold" and then "who supplies them?" names
the products of the first answer, not the suppliers of the latest. A statement's rows are
of the table its first selected column is read from (the SQL is the router's only view of
a turn's rows; it reads no schema), and a plural noun with that table's stem names that
turn's rows. A noun that names the latest answer's table, or no turn's, points at the
latest answer, as every reference did before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.common.llm import PriorTurn
from services.router.offline._text import stem

# The statement's first selected column, read through its table's alias ("t0.name").
_FIRST_COLUMN = re.compile(r"^\s*SELECT\s+(?:DISTINCT\s+)?(?P<alias>[a-z_]\w*)\.\w+", re.I)


def rows_table(sql: str) -> str | None:
    """The table a statement's rows are of: the one its first selected column's alias
    names in a FROM or JOIN (the outer query's; a sub-query's aliases are its own). None
    where the first column names no table (``COUNT(*)``, an unqualified column)."""
    first = _FIRST_COLUMN.match(sql)
    if first is None:
        return None
    alias = re.escape(first.group("alias"))
    aliased = re.search(
        rf"\b(?:FROM|JOIN)\s+(?:[a-z_]\w*\.)?(?P<table>[a-z_]\w*)\s+(?:AS\s+)?{alias}\b", sql, re.I
    )
    if aliased is not None:
        return aliased.group("table")
    # an unaliased table: its own name qualifies the column ("products.name")
    bare = re.search(rf"\b(?:FROM|JOIN)\s+(?:[a-z_]\w*\.)?(?P<table>{alias})\b", sql, re.I)
    return bare.group("table") if bare else None


def _rows_of(noun: str, sql: str) -> bool:
    table = rows_table(sql)
    return table is not None and stem(table) == stem(noun)


def named_turn(noun: str, prior: PriorTurn, history: Sequence[PriorTurn]) -> PriorTurn:
    """The turn whose rows ``noun`` names ("those products"): the latest answer when its
    rows are of another table than ``noun`` names and an earlier answer's rows are of that
    table, that earlier answer (the most recent such); else the latest answer."""
    if not prior.sql or rows_table(prior.sql) is None or _rows_of(noun, prior.sql):
        return prior
    for turn in reversed(history):
        if turn is not prior and not turn.unresolved and turn.sql and _rows_of(noun, turn.sql):
            return turn
    return prior
