""" "there" in a question about the earlier rows: the place the earlier question named.

A question about the earlier rows is read about their keys ("how many flights did each
of them have?" counts the flights of the carriers listed). Said with "there" after "Which
carriers flew to DEN?", it asks for the flights to DEN: the earlier statement's
conditions hold for the new rows too. Where the earlier rows are themselves the place
("How much did visitors spend there?" after museums that opened in 2011) the conditions
hold as well, already true of the rows kept. So each condition of the earlier statement
is put on the table of the new statement that reads the same table; a condition no table
of it reads cannot be kept, and the question is refused rather than answered without
the place."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.conversation._statement import FollowUpError, parse, sources
from services.sql.tree import conjuncts

# "there" beside a form of "be" is the "there" of being ("are there any", "there were").
_BE = frozenset({"is", "are", "was", "were", "be", "been", "being", "isn't", "aren't", "wasn't",
                 "weren't"})  # fmt: skip


def points_at_a_place(question: str) -> bool:
    """Whether ``question`` says "there" of a place the conversation named before."""
    words = re.findall(r"[\w']+", question.lower())
    for i, word in enumerate(words):
        if word != "there":
            continue
        beside = {words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else ""}
        if not beside & _BE:
            return True
    return False


def _aliases(select: exp.Select) -> dict[str, str]:
    """The table each alias of ``select``'s own FROM and JOINs reads (its name), by alias."""
    return {table.alias_or_name: table.name.lower() for table in sources(select)}


def kept_there(sql: str, earlier_sql: str) -> str:
    """``sql`` with the earlier statement's conditions put on its tables (see the module's
    docstring); FollowUpError naming "there" when one cannot be placed."""
    earlier = parse(earlier_sql)
    where = earlier.args.get("where")
    if where is None:
        return sql  # nothing was said of a place: "there" is the earlier rows
    select = parse(sql)
    earlier_tables = _aliases(earlier)
    by_table: dict[str, str] = {}
    for alias, name in _aliases(select).items():
        by_table.setdefault(name, alias)
    kept: list[exp.Expr] = []
    for condition in conjuncts(where.this):
        if condition.find(exp.Select) is not None:
            raise FollowUpError("'there' points at a condition this question cannot keep")
        only = next(iter(earlier_tables.values())) if len(earlier_tables) == 1 else None
        tables = {earlier_tables.get(c.table, only) if c.table else only
                  for c in condition.find_all(exp.Column)}  # fmt: skip
        read = tables.pop() if len(tables) == 1 else None
        if read is None:
            raise FollowUpError("'there' points at a condition this question cannot keep")
        placed = by_table.get(read)
        if placed is None:
            raise FollowUpError(
                "'there' points at a place the previous question named, on a table this "
                "question does not read"
            )
        moved = condition.copy()
        for column in moved.find_all(exp.Column):
            column.set("table", exp.to_identifier(placed))
        kept.append(moved)
    for condition in kept:
        select = select.where(condition, copy=False)
    return select.sql(dialect="postgres")
