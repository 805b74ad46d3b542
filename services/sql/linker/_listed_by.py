"""A listing said "by X" ("Show the companies in Germany by industry", "List the singers
by country"): the rows listed with X shown beside them and ordered by it.

Nothing is counted, so "by X" cannot be a grouping (one row per industry would drop the
companies asked for); dropped, the answer would not say what the question arranged by;
and a user who asks for the companies by industry expects to see each company's
industry, the companies of one industry together. That is the reading: the question
said as its rows ordered by X ("…, ordered by industry", the order reader's own
grammar), or, where X is a column of a table the listed rows refer to, with X said as
theirs ("… and their company's industry, ordered by industry"). Kept only where the statement
lists rows (no grouping, no aggregate), shows the column X names and orders by it, and
joins only tables each listed row meets once (its references, by their key): the rows
stay the rows asked for. A reference column X names ("by maker" on models whose
``maker`` holds a car maker's id) is not shown for it unless X says the code ("by
company id"): the number is not the maker. Where no saying gives that, the question is refused naming X:
a listing that silently drops "by X" is not what was asked.

Only where X is the whole name of a column (its words, stemmed): "songs by singers"
(a table: who sang them), "cars made by Ford" (a passive's agent), "sorted by age" (said
already), "how many … by industry" and any other measure ("by" groups a measure, the
shape reader's), are not this reading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog
from services.sql.linker._vocabulary import Vocabulary
from services.sql.results import own_tables, repeats, with_labels
from services.sql.words import IRREGULAR_PARTICIPLES, STOP_WORDS, name_words, stem

# "… by industry?" at the end of the question (its last clause)
_TRAILING_BY = re.compile(
    r"^(?P<rows>.*\S)\s+by\s+(?:the\s+|their\s+|its\s+)?(?P<said>[a-z][a-z ]*?)\s*[?.!]?\s*$"
)
# Words that make the question a measure or already say an order: "by" is theirs.
_NOT_A_LISTING = re.compile(
    r"\b(?:how many|how much|number|count|counts|total|totals|sum|average|avg|mean|median|"
    r"maximum|minimum|max|min|most|least|fewest|top|bottom|highest|lowest|largest|smallest|"
    r"percentage|percent|proportion|share|ratio|rate|per|each|every|order|ordered|sort|sorted|"
    r"rank|ranked|group|grouped|broken|breakdown|split|ascending|descending)\b"
)
# Words that ask for a reference's code itself ("by company id").
_CODE_WORDS = frozenset({"id", "ids", "code", "codes", "number", "key"})
# Heads that ask for rows to be listed.
_LISTING_HEAD = re.compile(
    r"^\s*(?:list|show|display|give|get|find|return|name|print|what are|which|who are)\b"
)


@dataclass(frozen=True)
class ListedBy:
    """A listing said "by X": ``said`` is X as written, ``words`` its stemmed words,
    ``rows`` the question less "by X", and
    ``sayings`` the question said with X shown and ordered by, in the order tried: as
    the rows' own column, then as the column of each table X names one of."""

    said: str
    words: frozenset[str]
    rows: str  # the question without "by X": the rows asked for
    sayings: tuple[str, ...]


def listed_by(vocab: Vocabulary, question: str) -> ListedBy | None:
    """The listing ``question`` says "by X" of, X the whole name of a column of the
    catalog; None for any other question (see the module's docstring)."""
    low = " ".join(question.lower().split())
    match = _TRAILING_BY.match(low)
    if match is None or not _LISTING_HEAD.match(low) or _NOT_A_LISTING.search(low):
        return None
    before = match.group("rows").split()[-1]
    if before.endswith("ed") or before in IRREGULAR_PARTICIPLES:
        return None  # "made by", "written by": who did it
    said = match.group("said").strip()
    words = frozenset(stem(w) for w in said.split() if w not in STOP_WORDS)
    if not words or not any(_names(vocab, key, words) for key in vocab.column_words):
        return None
    rows = question.strip().rstrip("?.! ")
    rows = rows[: len(rows) - len(re.search(r"\s+by\s+.*$", rows, re.I).group(0))]  # type: ignore[union-attr]
    owners = dict.fromkeys(
        _singular(table.split(".")[-1]) for table, column in vocab.column_words
        if _names(vocab, (table, column), words)
    )  # fmt: skip
    through = tuple(f"{rows} and their {owner}'s {said}, ordered by {said}" for owner in owners)
    return ListedBy(said, words, rows, (f"{rows}, ordered by {said}", *through))


def _singular(table: str) -> str:
    """A table's name said of one row ("companies" → "company"), its words spaced."""
    words = name_words(table)
    last = words[-1]
    if last.endswith("ies"):
        last = last[:-3] + "y"
    elif last.endswith("s") and not last.endswith("ss"):
        last = last[:-1]
    return " ".join([*words[:-1], last])


def _names(vocab: Vocabulary, key: tuple[str, str], words: frozenset[str]) -> bool:
    """Whether ``words`` are the whole name of the column ``key`` (its words, or its
    name's own words, stemmed and without stop words)."""
    own = {w for w in vocab.column_words.get(key, []) if w not in STOP_WORDS}
    named = {stem(w) for w in name_words(key[1]) if w not in STOP_WORDS}
    return words in (own, named)


def listed_table(sql: str, catalog: Catalog) -> str | None:
    """The table whose rows ``sql`` lists (its FROM), qualified; None for another shape."""
    tree = _select(sql)
    tables = own_tables(tree, catalog) if tree is not None else {}
    return next(iter(tables.values())).qualified if tables else None


def _select(sql: str) -> exp.Select | None:
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return None
    return tree if isinstance(tree, exp.Select) else None


def ordered_by(
    sql: str, listed: ListedBy, rows: str, vocab: Vocabulary, catalog: Catalog
) -> str | None:
    """``sql`` ordered by X from the lowest, where it lists the rows of the table
    ``rows`` (no grouping, no aggregate, no row cut, no sub-query) through joins that
    repeat none of them, shows them (a column of theirs besides X) and the column
    ``listed`` names, and orders by it first; None
    otherwise. "By X" arranges, it does not rank: the order reader's direction for a
    column it takes as a measure ("ordered by level", highest first) is not asked."""
    tree = _select(sql)
    if tree is None or any(
        tree.args.get(k) for k in ("group", "having", "limit", "distinct", "with_")
    ):
        return None
    if any(e.find(exp.AggFunc, exp.Window) is not None for e in tree.expressions):
        return None
    tables = own_tables(tree, catalog)
    joins = tree.args.get("joins") or []
    if len(tables) != len(joins) + 1 or any(repeats(j, tables) for j in joins):
        return None
    if next(iter(tables.values())).qualified != rows:
        return None  # another table's rows listed: not the rows asked for
    order = tree.args.get("order")
    if order is None or not order.expressions:
        return None
    key = order.expressions[0]
    first = key.this
    shown = {e.alias_or_name.lower(): e.unalias() for e in tree.expressions}
    if isinstance(first, exp.Column) and not first.table and first.name.lower() in shown:
        first = shown[first.name.lower()]
    elif not any(e.unalias() == first for e in tree.expressions):
        return None  # ordered by a column it does not show
    if not isinstance(first, exp.Column):
        return None
    info = tables.get(first.table.lower())
    if info is None or not _names(vocab, (info.qualified, first.name), listed.words):
        return None
    references = (
        e for e in vocab.graph.edges_of(info.qualified) if e.child == info.qualified
    )  # declared or inferred to a key: the column holds another table's key
    if not _CODE_WORDS & set(listed.said.split()) and any(
        first.name.lower() in (c.lower() for c in e.child_columns) for e in references
    ):
        return None  # a reference's code: "by maker" means the maker, not its number
    # the rows shown as the answer will show them (the label rule names listed rows)
    labelled = _select(with_labels(sql, catalog))
    listed_alias = next(iter(tables))
    if labelled is None or not any(
        isinstance(c := e.unalias(), exp.Column)
        and c.table.lower() == listed_alias
        and c.name.lower() != first.name.lower()
        for e in labelled.expressions
    ):
        return None  # X alone: the rows asked for are not shown
    if not key.args.get("desc"):
        return sql
    key.set("desc", False)
    key.set("nulls_first", False)
    return tree.sql(dialect="postgres")
