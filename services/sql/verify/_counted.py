"""What a count counts: the rows of the noun the question counts, not the rows that
refer to them, and not the values of a column the question never names.

- **Rows that refer to the noun counted.** "How many players are there?" answered with
  ``COUNT(*)`` over ``awards_players``: the table's name says "players", but its rows
  are awards, each referring to a player through ``player_id`` (a reference that is no
  key of the table by itself, so one player has many rows). Where the counted noun is
  what a reference column of the counted table names, and none of the table's other
  name words stands beside it ("award players"), the statement counts the referring
  rows; ``COUNT(DISTINCT player_id)`` or the referred table's rows would count the noun.
- **Values of a column nobody named.** "For each award, how many times was it given?"
  answered with ``COUNT(tie)``: a count of a column counts its non-NULL values, the rows
  where that column is filled. A plain column (no key, no reference) whose name no word
  of the question says ("tie" is no "times") counts rows the question never asked
  about; ``COUNT(*)`` counts the rows.

- **Values of a column that stores a count.** "How many rooms does each property with
  AirCon have?" answered with ``COUNT(room_count)``: a column whose name says it holds a
  count (``room_count``, ``num_of_staff``) already is the number asked; counting its
  values counts the rows that have one, a number nobody asked for.
- **The noun counted, read as a value of another table's rows.** "How many
  transactions did the users make?" answered with the notifications whose ``type`` is
  'transaction': where a table's name says the noun counted
  (``wallet_transactions_daily``), the rows counted are that table's, not the rows of
  another table that hold the noun as a value ("how many comedies", where no table is
  named for them, may count the films of that genre).

All read the question's words, the statement and the catalog's keys and references;
nothing here knows a schema.
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import TableInfo
from services.sql.linker import LinkContext, LinkError
from services.sql.verify._facts import without_quotes
from services.sql.verify._statement import StatementNodes, column_name, is_key
from services.sql.words import (
    GRAMMAR_WORDS,
    STOP_WORDS,
    measure_name,
    stem,
    tokenize,
    word_match,
)

# "how many players", "the number of distinct players", "count the players"
_COUNTED_NOUN = re.compile(
    r"\b(?:how many|number of|count(?: of)?)\s+(?:the\s+|all\s+|distinct\s+|different\s+)?"
    r"([a-z]+)(?:\s+([a-z]+))?"
)
# Name parts every reference shares: they say nothing of the rows referred to.
_KEY_PARTS = frozenset({"id", "ids", "key", "code", "no", "num", "number"})


def check_counted(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse (:class:`LinkError`) a count of rows that refer to the noun counted, a
    count of a plain column the question never names, and a count of the values of a
    column that stores a count."""
    if not isinstance(tree, exp.Select) or ctx.applied or ctx.instructions.strip():
        return  # definitions name things in their own words
    _counted_referring_rows(ctx, tree, nodes)
    _counted_noun_as_a_value(ctx, tree, nodes)
    _counted_column_unsaid(ctx, tree, nodes)
    _counted_a_stored_count(tree, nodes)


def _strong(word: str, parts: list[str]) -> bool:
    """Whether ``word`` names one of ``parts`` outright (a plural, an inflection, a
    known abbreviation), not merely letters in order ("times" / ``tie``)."""
    return any(word_match(word, p) >= 0.9 for p in parts if len(p) > 1)


def _counted_referring_rows(ctx: LinkContext, tree: exp.Select, nodes: StatementNodes) -> None:
    if tree.args.get("group") is not None:
        return
    counts = [c for c in tree.find_all(exp.Count) if isinstance(c.this, exp.Star)]
    if len(counts) != 1:
        return
    said = _COUNTED_NOUN.search(ctx.low)
    first = tree.args.get("from_")
    if said is None or first is None or not isinstance(first.this, exp.Table):
        return
    table = nodes.tables.get(first.this.alias_or_name)
    if table is None:
        return
    noun = stem(said.group(1))
    beside = stem(said.group(2)) if said.group(2) else ""
    for column, parent in _references(ctx, table):
        if is_key(table, column):
            continue  # one row per referred row: counting rows counts them
        reference = [p for p in ctx.vocab.column_words.get((table.qualified, column), [])
                     if p not in _KEY_PARTS]  # fmt: skip
        if not reference or not _strong(noun, reference):
            continue
        own = _own_words(ctx, table, reference)
        if not own or _strong(noun, own) or (beside and _strong(beside, own)):
            continue  # "award players", or the table's own noun: its rows are counted
        referred = parent.rsplit(".", 1)[-1]
        raise LinkError(
            f"the statement counts {table.name} rows, each referring to a {referred} row by "
            f"{table.name}.{column}: the question counts {said.group(1)}, not the rows "
            "that refer to them"
        )


def _counted_noun_as_a_value(ctx: LinkContext, tree: exp.Select, nodes: StatementNodes) -> None:
    """ "How many transactions did the users make?" answered with the notifications whose
    ``type`` is 'transaction': the counted noun was placed as a value of a column of the
    counted table, while another table's name says the noun (``wallet_transactions_daily``).
    The rows the question counts are that table's; the notifications about them are other
    rows. "How many comedies are there?" counted as the films of that genre stands: no
    table is named by "comedy", so the value is the only place the noun has."""
    counts = [c for c in tree.find_all(exp.Count) if isinstance(c.this, exp.Star)]
    said = _COUNTED_NOUN.search(without_quotes(ctx.low))
    first = tree.args.get("from_")
    if len(counts) != 1 or said is None or first is None or not isinstance(first.this, exp.Table):
        return
    counted = nodes.tables.get(first.this.alias_or_name)
    if counted is None:
        return
    noun = stem(said.group(1))
    if noun in ctx.vocab.table_words.get(counted.qualified, []):
        return  # the counted table's own noun
    valued = [
        literal
        for literal in nodes.literals
        if isinstance(literal.parent, exp.EQ | exp.In)
        and isinstance(literal.parent.this, exp.Column)
        and getattr(nodes.owner(literal.parent.this), "qualified", None) == counted.qualified
        and [stem(w) for w in re.findall(r"[a-z]+", literal.this.lower())] == [noun]
    ]
    if not valued:
        return
    others = sorted(
        t.name
        for t in ctx.catalog.tables
        if t.qualified != counted.qualified and noun in ctx.vocab.table_words.get(t.qualified, [])
    )
    if not others:
        return
    compared = valued[0].parent
    column = column_name(compared.this) if compared is not None else ""
    raise LinkError(
        f"the question counts {said.group(1)}, rows of {others[0]}; the statement counts "
        f"{counted.name} rows whose {column} is {valued[0].this!r}",
        phrase=said.group(1),
    )


def _references(ctx: LinkContext, table: TableInfo) -> list[tuple[str, str]]:
    """The table's single-column references to another table: (column, referred table)."""
    return [
        (e.child_columns[0], e.parent)
        for e in ctx.graph.edges_of(table.qualified)
        if e.child == table.qualified and e.parent != table.qualified and len(e.child_columns) == 1
    ]


def _own_words(ctx: LinkContext, table: TableInfo, reference: list[str]) -> list[str]:
    """The words of the table's name less those of a reference it holds: what its rows
    are (``awards_players`` less ``player_id``: awards)."""
    return [
        w
        for w in ctx.vocab.table_words.get(table.qualified, [])
        if len(w) > 2
        and w not in STOP_WORDS
        and w not in GRAMMAR_WORDS
        and not any(word_match(w, r) >= 0.9 or word_match(r, w) >= 0.9 for r in reference)
    ]


def _counted_column_unsaid(ctx: LinkContext, tree: exp.Select, nodes: StatementNodes) -> None:
    words = [t.stem for t in tokenize(ctx.question) if not t.quoted and t.low.isalpha()]
    for count in tree.find_all(exp.Count):
        inner = count.this
        if not isinstance(inner, exp.Column):
            continue  # COUNT(*), COUNT(DISTINCT …): rows, or values asked apart
        table = nodes.owner(inner)
        name = column_name(inner)
        if table is None or table.column(name) is None or is_key(table, name):
            continue
        if any(e.child == table.qualified and name in e.child_columns
               for e in ctx.graph.edges_of(table.qualified)):  # fmt: skip
            continue  # a reference: ``_outputs`` holds what its count counts
        parts = ctx.vocab.column_words.get((table.qualified, name), [])
        if not parts or any(_strong(w, parts) for w in words):
            continue
        raise LinkError(
            f"the statement counts the rows with a value of {table.name}.{name}, a column "
            "the question does not name"
        )


def _counted_a_stored_count(tree: exp.Select, nodes: StatementNodes) -> None:
    for count in tree.find_all(exp.Count):
        inner = count.this
        if isinstance(inner, exp.Distinct):
            inner = next(iter(inner.expressions), None)
        if not isinstance(inner, exp.Column):
            continue
        table = nodes.owner(inner)
        name = column_name(inner)
        if table is None or table.column(name) is None or not measure_name(name):
            continue
        raise LinkError(
            f"the statement counts the values of {table.name}.{name}, which holds a count "
            "itself: the number asked is the one it stores"
        )
