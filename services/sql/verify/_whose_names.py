"""Whose names a statement shows, held to the rows the question says they are of.

"List the names of the courses" answered with ``teacher.name`` (the teachers joined to
the courses) names the wrong rows: the question asks for the names of the courses,
and a teacher's name is no course's. The names check (``_outputs``) only asks that some
text is shown, so any name passed. Held here: where the question says "the names of the
<rows>" or "the <rows> names" and the noun is the last word of a table's name, some text
column the statement shows is of that table, or of a table it refers to (one row each,
whose name is its own: a player's person). "The names of each course's teacher" (a
possessive) says whose the names are after the rows, and is not held.
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import TEXT_TYPES, TableInfo
from services.sql.linker import LinkContext, LinkError
from services.sql.verify._statement import StatementNodes, column_name
from services.sql.words import stem

# "the names of (all) the courses", "names of each course": the noun after "of"; a
# possessive mark right after the noun is kept to tell "course's teacher" apart
_NAMES_OF = re.compile(
    r"\bnames?\s+of\s+(?:(?:the|all|each|every)\s+)*([a-z]+)(?:(')s?)?(?:\s+([a-z]+))?"
)
# "the course names": the noun right before "names"
_ROWS_NAMES = re.compile(r"\bthe\s+([a-z]+)\s+names?\b")


def check_whose_names(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse (:class:`LinkError`) names shown of rows other than the ones asked (see the
    module's docstring)."""
    if not isinstance(tree, exp.Select) or ctx.applied or ctx.instructions.strip():
        return  # definitions name things in their own words
    rows = _rows_asked(ctx)
    if not rows:
        return
    shown = _text_shown(tree, nodes)
    if not shown:
        return  # no name at all: ``_outputs`` says so
    allowed = {t.qualified for t in rows}
    allowed |= {
        e.parent for t in rows for e in ctx.graph.edges_of(t.qualified) if e.child == t.qualified
    }
    if any(t.qualified in allowed for t in shown):
        return
    raise LinkError(
        f"the question asks for the names of {rows[0].name}; the statement shows "
        f"{sorted({t.name for t in shown})[0]}'s"
    )


def _rows_asked(ctx: LinkContext) -> list[TableInfo]:
    """The tables whose rows the question asks the names of (none when it says none, or
    its noun is a possessor)."""
    # quoted values say nothing of whose names; an apostrophe after a letter is a
    # possessive's, not a quote's
    text = ctx.original.lower().replace("\u2019", "'")
    text = re.sub(r"(?<![a-z])'[^']*'(?![a-z])|\"[^\"]*\"", " ", text)
    found: list[TableInfo] = []
    for match in _NAMES_OF.finditer(text):
        first, mark, second = match.group(1, 2, 3)
        if mark:
            continue  # "each course's teacher": the names are of what the course has
        # "the car makers", "the course teachers": the last noun names the rows
        found += _named(ctx, second or "") or _named(ctx, first)
    for match in _ROWS_NAMES.finditer(text):
        found += _named(ctx, match.group(1))
    return found


def _named(ctx: LinkContext, word: str) -> list[TableInfo]:
    """The tables whose name ends in ``word`` ("makers" for ``car_makers``)."""
    if not word:
        return []
    said = stem(word)
    return [
        t
        for t in ctx.catalog.tables
        if (parts := ctx.vocab.table_words.get(t.qualified)) and parts[-1] == said
    ]


def _text_shown(tree: exp.Select, nodes: StatementNodes) -> list[TableInfo]:
    """The tables of the text columns the statement shows."""
    shown: list[TableInfo] = []
    for output in tree.expressions:
        for node in output.find_all(exp.Column):
            table = nodes.owner(node)
            info = table.column(column_name(node)) if table is not None else None
            if table is not None and info is not None and info.data_type.startswith(TEXT_TYPES):
                shown.append(table)
    return shown
