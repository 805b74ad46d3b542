"""Whether the question names a table: by the words of its name, by a name its comment
gives it ("Sales opportunities (deals)"), or by a stored value the statement compares
one of its columns with ("demos" for ``activities.kind = 'Demo'``).

Several checks refuse a statement for reading a table the question never names (an inner
join used only to keep rows, a date bound on another event than the question's); they
must agree on what naming a table is, so it is decided here, once. The checks differ
only in how strictly a word must match (``least``) and in which part of the name counts
(``name``: the table's own words, less a reference it joins by).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from services.sql.catalog import TableInfo
from services.sql.linker import LinkContext
from services.sql.verify._statement import StatementNodes
from services.sql.words import stem, tokenize, word_match


def question_words(ctx: LinkContext) -> list[str]:
    """The stems of the question's unquoted words (a quoted value names no table)."""
    return [t.stem for t in tokenize(ctx.question) if not t.quoted and t.low.isalpha()]


def table_said(
    ctx: LinkContext,
    table: TableInfo,
    tree: exp.Expr | None = None,
    nodes: StatementNodes | None = None,
    *,
    name: Sequence[str] | None = None,
    least: float = 0.9,
    stemmed: bool = False,
    words: Sequence[str] | None = None,
) -> bool:
    """Whether a word of the question (``words``: :func:`question_words` when not given)
    names ``table``: matches, at ``least``, a part longer than two letters of its name
    (``name`` when given, else the table's words), of a name its comment gives it, or,
    given the statement (``tree`` and its ``nodes``), of a value it compares a column of
    ``table`` with. ``stemmed``: the parts are stemmed before they are matched."""
    said = question_words(ctx) if words is None else words
    parts = list(ctx.vocab.table_words.get(table.qualified, []) if name is None else name)
    parts += [w for alias in ctx.vocab.table_aliases.get(table.qualified, []) for w in alias]
    if parts_said(said, parts, least=least, stemmed=stemmed):
        return True
    if tree is None or nodes is None:
        return False
    return parts_said(said, _values_of(tree, nodes, table), least=least, stemmed=stemmed)


def parts_said(
    words: Sequence[str], parts: Sequence[str], *, least: float = 0.9, stemmed: bool = False
) -> bool:
    """Whether one of ``words`` matches, at ``least``, one of ``parts`` longer than two
    letters (stemmed first when ``stemmed``): two letters ("id", "at") name nothing."""
    return any(
        word_match(w, stem(p) if stemmed else p) >= least
        for w in words
        for p in parts
        if len(p) > 2
    )


def _values_of(tree: exp.Expr, nodes: StatementNodes, table: TableInfo) -> list[str]:
    """The words of the stored values the statement compares ``table``'s columns with:
    a value the question says ("demos" for ``activities.kind = 'Demo'``) names that
    table's rows as well as its name would."""
    words: list[str] = []
    for comparison in tree.find_all(exp.EQ, exp.In):
        column = comparison.this
        if not isinstance(column, exp.Column) or nodes.owner(column) is not table:
            continue
        for literal in comparison.find_all(exp.Literal):
            if literal.is_string:
                words += [t.stem for t in tokenize(literal.this) if t.low.isalpha()]
    return words
