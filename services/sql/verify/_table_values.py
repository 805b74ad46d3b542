"""A value that names its own table is the question's noun for the rows, not one of
them: "the names of all airports in the America/Chicago time zone" answered with
``airports.name = 'All Airports'``."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._statement import StatementNodes
from services.sql.words import GRAMMAR_WORDS, STOP_WORDS, stem

_VALUE_WORD = re.compile(r"[^\W_]+")


def check_table_named_as_a_value(ctx: LinkContext, nodes: StatementNodes) -> None:
    """ "the names of all airports in the America/Chicago time zone" answered with
    ``airports.name = 'All Airports'``: a stored value whose every word, less grammar
    words ("all", "the"), is the name of the very table it is a value of spells the
    question's noun for the rows, not one of them. A value compared by equality (``=``,
    ``<>``, ``IN``) that says nothing but its own table's name is refused."""
    for literal in nodes.literals:
        compared = literal.parent
        if isinstance(compared, exp.Tuple):
            compared = compared.parent
        if not isinstance(compared, exp.EQ | exp.NEQ | exp.In):
            continue
        column = compared.this
        if not isinstance(column, exp.Column):
            continue
        table = nodes.owner(column)
        if table is None:
            continue
        words = [
            w
            for w in _VALUE_WORD.findall(literal.this.lower())
            if w not in STOP_WORDS and w not in GRAMMAR_WORDS
        ]
        names = {stem(w) for w in ctx.vocab.table_words.get(table.qualified, [])}
        if words and names and all(stem(w) in names for w in words):
            raise LinkError(
                f"{literal.this!r} says the name of the table {table.name}, not one of its "
                f"rows: the question's words for the rows were read as a value of "
                f"{table.name}.{column.name}"
            )
