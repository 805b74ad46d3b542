"""A condition of an earlier statement removed: "drop the delay filter", "without the
2023 condition", "no filter on status".

The words name one of the statement's own conditions, by the column it compares ("delay"
for ``arr_delay > 120``, "date" for a comparison of a date column) or the value it
compares with ("2023", "JFK"); "filter" alone names its one condition. The conjuncts of
its WHERE on that column go, and the rest of the statement (measure, grouping, order,
limit, the other conditions) stays. Read through the statement's parts, never its text;
where the words name no condition, or the conditions of more than one column, the
follow-up is refused naming the conditions there are: a guess would answer another
question with confidence.
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo
from services.sql.conversation._conditions import columns_of, where_conjuncts
from services.sql.conversation._statement import FollowUpError, aliased, parse
from services.sql.words import name_words, stem

# Words that say "a condition" rather than which one.
_CONDITION_NOUNS = frozenset(
    [
        "filter",
        "filters",
        "condition",
        "conditions",
        "restriction",
        "restrictions",
        "constraint",
        "constraints",
        "criterion",
        "criteria",
    ]
)
_FILLER = frozenset(
    [
        "the",
        "a",
        "an",
        "any",
        "all",
        "this",
        "that",
        "these",
        "those",
        "its",
        "their",
        "on",
        "of",
        "for",
        "by",
        "in",
        "to",
    ]
)
# What a date column's comparison is called when its column is not named.
_DATE_WORDS = frozenset(
    [
        "date",
        "dates",
        "time",
        "period",
        "periods",
        "year",
        "years",
        "day",
        "days",
        "month",
        "months",
    ]
)
_DATE_TYPES = ("date", "time")


def _said(words: str) -> tuple[list[str], str]:
    """(the words that name the condition, lowercased; the same as one phrase)."""
    said = [w for w in re.findall(r"[\w'.-]+", words.lower()) if w not in _CONDITION_NOUNS]
    named = [w for w in said if w not in _FILLER]
    return named, " ".join(named)


def _column_words(table: TableInfo | None, column: str) -> set[str]:
    words = {stem(w) for w in name_words(column)} | {stem(column.lower())}
    info = next((c for c in table.columns if c.name == column), None) if table else None
    if info is not None and info.data_type.lower().startswith(_DATE_TYPES):
        words |= {stem(w) for w in _DATE_WORDS}
    if any(w in {"year", "month", "day", "date"} for w in name_words(column)):
        words |= {stem(w) for w in _DATE_WORDS}
    return words


def _values(condition: exp.Expr) -> set[str]:
    return {str(lit.this).lower() for lit in condition.find_all(exp.Literal)}


def _names(
    condition: exp.Expr, words: list[str], phrase: str, tables: dict[str, TableInfo]
) -> bool:
    """Whether the words name ``condition``: a word is a word of a column it compares, or
    the phrase is a value it compares with (a year: the start of a date it compares)."""
    for alias, column in columns_of(condition):
        if {stem(w) for w in words} & _column_words(tables.get(alias.lower()), column):
            return True
    values = _values(condition)
    if phrase in values:
        return True
    return bool(re.fullmatch(r"(?:19|20)\d\d", phrase)) and any(
        v.startswith(f"{phrase}-") for v in values
    )


def _described(conditions: list[exp.Expr]) -> str:
    columns = sorted({column for c in conditions for _, column in columns_of(c)})
    return ", ".join(columns)


def without_condition(sql: str, words: str, catalog: Catalog) -> str:
    """``sql`` without the WHERE conjuncts ``words`` name (see the module's docstring);
    FollowUpError naming the statement's conditions when they name none, or the
    conditions of more than one column."""
    select = parse(sql)
    own = [c for c in where_conjuncts(select) if columns_of(c)]
    if not own:
        raise FollowUpError("the previous answer has no condition to remove")
    named, phrase = _said(words)
    tables = aliased(select, catalog, nested=True)
    matched = own if not named else [c for c in own if _names(c, named, phrase, tables)]
    if not matched:
        raise FollowUpError(
            f"the previous answer has no condition on {phrase!r}; its conditions are on "
            f"{_described(own)}"
        )
    if len({frozenset(columns_of(c)) for c in matched}) > 1:
        raise FollowUpError(
            "the words may name more than one condition of the previous answer (on "
            f"{_described(matched)}); say which to remove"
        )
    # a window's two bounds on one column are one condition: "2023" names both
    columns = frozenset(columns_of(matched[0]))
    kept = [c for c in where_conjuncts(select) if frozenset(columns_of(c)) != columns]
    if kept:
        parts = [c.copy() if isinstance(c, exp.Paren) else exp.Paren(this=c.copy()) for c in kept]
        joined: exp.Expr = parts[0]
        for part in parts[1:]:
            joined = exp.And(this=joined, expression=part)
        select.set("where", exp.Where(this=joined))
    else:
        select.set("where", None)
    _drop_joins_only_for(select, {alias for c in matched for alias, _ in columns_of(c)})
    return select.sql(dialect="postgres")


def _drop_joins_only_for(select: exp.Select, aliases: set[str]) -> None:
    """The joins of the removed conditions' tables that nothing else of the statement
    reads: joined only for the condition (a semi-join read as a join), they would still
    keep (or repeat) the rows the condition kept; with it gone they go too."""
    changed = True
    while changed:
        changed = False
        joins = list(select.args.get("joins") or ())
        for join in joins:
            alias = join.this.alias_or_name if isinstance(join.this, exp.Table) else ""
            if alias not in aliases:
                continue
            used = [
                c for c in select.find_all(exp.Column)
                if c.table == alias and c.find_ancestor(exp.Join) is not join
            ]  # fmt: skip
            if not used:
                select.set("joins", [j for j in joins if j is not join] or None)
                changed = True
                break
