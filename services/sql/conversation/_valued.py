"""What the earlier rows are worth: "only the ones worth more than 20", "just those
priced under 30k", "the ones cheaper than 40000".

"Worth", "priced", "valued", "costing" and the comparatives of price ("cheaper",
"more expensive") compare a row's value with a number without naming the column that
holds it — no column is called "worth", so the words link to nothing. The earlier answer
has shown the value it means: the one number it shows for each row that is no key,
no count and no year (``cost`` beside make and model, ``discount_value`` beside the code), or, for a
breakdown, its one measure (a total per customer). The comparison is put on that column
(on that measure, as the statement's ``HAVING``); where the earlier answer shows no such
number, or two, nothing is read and the follow-up stays refused.
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo
from services.sql.conversation._conditions import Linked, said_numbers
from services.sql.conversation._statement import aliased, parse
from services.sql.gate import identifier
from services.sql.words import name_words

_VERB = (
    r"(?:(?:that|which)\s+(?:are|is|were|was)\s+|(?:are|is)\s+)?"
    r"(?:worth|valued(?:\s+at)?|priced(?:\s+at)?|costing|that\s+costs?|which\s+costs?"
    r"|selling\s+for|sold\s+for|going\s+for)"
)
_COMPARED = re.compile(
    rf"^{_VERB}\s+(?P<cmp>more than|greater than|over|above|at least|less than|under|below"
    r"|at most)\s+\$?(?P<n>\d[\d,.]*\s*(?:k|m|thousand|million)?)$",
    re.IGNORECASE,
)
_COMPARATIVE = re.compile(
    r"^(?:(?:that|which)\s+(?:are|is|were|was)\s+|(?:are|is)\s+)?"
    r"(?P<cmp>cheaper|less expensive|more expensive|pricier|dearer)\s+than\s+"
    r"\$?(?P<n>\d[\d,.]*\s*(?:k|m|thousand|million)?)$",
    re.IGNORECASE,
)
_ABOVE = frozenset({"more than", "greater than", "over", "above", "more expensive", "pricier",
                    "dearer"})  # fmt: skip
_AT_LEAST = frozenset({"at least"})
_AT_MOST = frozenset({"at most"})
_NUMERIC = ("numeric", "decimal", "integer", "bigint", "smallint", "real", "double", "money")


def _operator(said: str) -> type[exp.Binary]:
    said = " ".join(said.lower().split())
    if said in _ABOVE:
        return exp.GT
    if said in _AT_LEAST:
        return exp.GTE
    if said in _AT_MOST:
        return exp.LTE
    return exp.LT


def valued(sql: str, condition: str, catalog: Catalog) -> Linked | None:
    """The comparison ``condition`` says of the rows' value, on the one value the earlier
    statement shows per row (or its one measure per group); None when the words are not
    such a comparison or the statement shows no one such value."""
    words = " ".join(condition.split())
    words = re.sub(r"^(?:the\s+ones?|those|ones)\s+", "", words, flags=re.I)
    match = _COMPARED.match(words) or _COMPARATIVE.match(words)
    if match is None:
        return None
    numbers = said_numbers(match.group("n"))
    if len(numbers) != 1:
        return None
    number = numbers[0]
    literal = exp.Literal.number(int(number) if number == int(number) else number)
    compare = _operator(match.group("cmp"))
    select = parse(sql)
    tables = aliased(select, catalog, nested=False)
    shown = _shown_values(select, tables)
    if len(shown) == 1:
        alias, name = shown[0]
        column = exp.column(identifier(name), table=identifier(alias))
        return Linked((compare(this=column, expression=literal),), (), frozenset({shown[0]}))
    if shown or select.args.get("group") is None or select.args.get("limit"):
        return None
    measures = [e.unalias() for e in select.expressions if e.find(exp.AggFunc) is not None]
    if len(measures) != 1 or not _of_a_value(measures[0], tables):
        return None  # a count ("worth more than 3" of a count per status) is no value
    having = compare(this=measures[0].copy(), expression=literal)
    return Linked((), (), frozenset(), (having,))


def is_value(column: exp.Column, tables: dict[str, TableInfo]) -> bool:
    """Whether ``column`` is a number stored as a value: no key, no reference to another
    table, no count and no year."""
    info = tables.get(column.table)
    stored = info.column(column.name) if info is not None else None
    if info is None or stored is None or not stored.data_type.startswith(_NUMERIC):
        return False
    words = name_words(stored.name)
    referenced = {c for fk in info.foreign_keys for c in fk.columns}
    return not (
        stored.name in info.primary_key
        or stored.name in referenced
        or (words and words[-1] in ("id", "key", "code", "no", "number"))
        or (words and words[0] in ("num", "number", "count", "n"))
        or "year" in words
        or stored.span is not None
    )


def _of_a_value(measure: exp.Expr, tables: dict[str, TableInfo]) -> bool:
    """Whether ``measure`` sums, averages or bounds one value column."""
    if not isinstance(measure, exp.Sum | exp.Avg | exp.Min | exp.Max):
        return False
    inner = measure.this
    return isinstance(inner, exp.Column) and is_value(inner, tables)


def _shown_values(select: exp.Select, tables: dict[str, TableInfo]) -> list[tuple[str, str]]:
    """(alias, column) of each value (``_value``) the statement shows as stored."""
    found: list[tuple[str, str]] = []
    for projection in select.expressions:
        column = projection.unalias()
        shown = isinstance(column, exp.Column) and column.table and is_value(column, tables)
        if shown and (column.table, column.name) not in found:
            found.append((column.table, column.name))
    return found
