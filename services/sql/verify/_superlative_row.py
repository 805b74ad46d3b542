"""A superlative said of a table's rows ("What is the largest museum by staff?") asks
for the row that is largest, not for how large it is.

"What is the largest museum by staff?" was answered with ``MAX(num_of_staff)`` alone
(ISSUE-45, probes round 3): a number, and no museum. "Which …" and "who …" questions
are held to their rows by ``_outputs`` (the ranking shown alone); a question that opens
otherwise ("what is", "name", "find") and puts an adjective's superlative straight
before a table's noun (one modifier word between: "the most expensive car") asks for
that table's row just the same. A statement that shows only an ungrouped MIN / MAX, or
only what it ranks by, shows the value and is refused.

Quantifiers ("most", "least", "fewest") before a table's noun count its rows ("the most
flights"), and a noun that is also a word of a shown column ("the highest salary" of a
``salaries`` table's ``salary``) names the value itself: both pass. So does a noun that
opens its own column's phrase ("the heaviest crate weight": ``crates.weight`` at its
largest)."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import TableInfo
from services.sql.linker import LinkContext, LinkError
from services.sql.verify._facts import without_quotes
from services.sql.verify._rankings import SUPERLATIVE
from services.sql.verify._statement import ranking_key
from services.sql.words import stem

# before a noun, a count of its rows ("the most flights"); before an adjective, its degree
_QUANTIFIERS = frozenset({"most", "least", "fewest"})
# superlatives of a measure's size ("the maximum weight"), never of a row
_OF_A_MEASURE = frozenset({"max", "min", "maximum", "minimum", "top", "bottom"})
_WHICH = re.compile(r"\s*(?:which|who)\b")
_WORD = re.compile(r"[a-z]+|[^a-z\s]")


def check_superlative_row(ctx: LinkContext, tree: exp.Expr) -> None:
    """Refuse a statement that answers "the <superlative> <table noun>" with the value
    alone (see the module's docstring)."""
    if not isinstance(tree, exp.Select) or tree.args.get("group") is not None:
        return
    text = without_quotes(ctx.low)
    if _WHICH.match(text):
        return  # held by the outputs check
    outputs = tree.expressions
    shown = {(c.table, c.name) for o in outputs for c in o.find_all(exp.Column)}
    if not shown:
        return
    key = ranking_key(tree) if tree.args.get("limit") is not None else None
    ranked = {(c.table, c.name) for c in key.find_all(exp.Column)} if key is not None else set()
    value_only = (key is not None and shown <= ranked) or (
        key is None and all(o.find(exp.Max, exp.Min) is not None for o in outputs)
    )
    if not value_only:
        return
    shown_words = {stem(w) for _, name in shown for w in name.lower().split("_")}
    for m in SUPERLATIVE.finditer(text):
        if m.group(0) in _OF_A_MEASURE:
            continue
        after = _WORD.findall(text[m.end() :])[:3]
        if m.group(0) in _QUANTIFIERS and after and ctx.vocab.tables_named([stem(after[0])]):
            continue
        for i, word in enumerate(after[:2]):
            if not word.isalpha():
                break
            tables = ctx.vocab.tables_named([stem(word)])
            if not tables or stem(word) in shown_words:
                continue
            following = after[i + 1] if i + 1 < len(after) else ""
            if following.isalpha() and stem(following) in _column_words(ctx, tables[0][0]):
                break  # "the heaviest crate weight": the noun opens its column's phrase
            raise LinkError(
                f"the question asks for the {m.group(0)} {word}; the statement shows "
                "only a value, not the row that holds it"
            )


def _column_words(ctx: LinkContext, table: TableInfo) -> set[str]:
    """The words of the names of ``table``'s columns, stemmed."""
    return {
        stem(w)
        for (qualified, _), parts in ctx.vocab.column_words.items()
        if qualified == table.qualified
        for w in parts
    }
