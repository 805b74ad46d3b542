"""A condition on the earlier answer's measure: "which of these operated more than 500?".

After a breakdown ("How many flights did each carrier operate from JFK?"), "which of these
… more than 500" asks for the groups whose figure passes the bound: the earlier statement
with a ``HAVING`` on its one aggregate, listing the groups. The words are not read by the
linker (a bare number names no column, so it was refused); the condition is placed on the
statement's structure, and only where nothing else could take it:

- the earlier statement groups, shows exactly one aggregate and is not cut by a limit
  (a bound before the cut would keep other rows than "these");
- the number is bare, or followed by the name of the rows the aggregate counts ("more
  than 500 flights" after a ``COUNT(*)`` of flights): a unit or another noun ("30
  minutes", "500 seats") may name a column, and is left to the linker;
- the words between the reference and the bound ("operated", "have") spell no column of
  the statement's tables ("which of these were delayed more than 30" names a delay,
  not the count).
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for
from services.sql.conversation._conditions import Linked
from services.sql.conversation._statement import column_name, parse, readable, sources
from services.sql.words import STOP_WORDS, name_words, stem, word_match

_BOUND = re.compile(
    r"^\W*(?:(?:and|so|then|ok|okay)\W+)?which(?:\s+ones?)?\s+of\s+(?:these|those|them)"
    r"(?:\s+(?:ones|rows|results))?"
    r"(?P<verb>(?:\s+[a-z']+){0,2}?)\s+"
    r"(?P<cmp>more than|over|above|at least|fewer than|less than|under|below|at most)\s+"
    r"(?P<n>\d[\d,]*(?:\.\d+)?)(?P<tail>(?:\s+[a-z]+)?)\s*\??\s*$",
    re.IGNORECASE,
)
_OPERATORS = {
    "more than": exp.GT,
    "over": exp.GT,
    "above": exp.GT,
    "at least": exp.GTE,
    "fewer than": exp.LT,
    "less than": exp.LT,
    "under": exp.LT,
    "below": exp.LT,
    "at most": exp.LTE,
}
# Verbs that say only that the rows hold the figure, never what it is of.
_GLUE = frozenset({"have", "has", "had", "are", "is", "were", "was", "with", "got", "get"})


def bounded(question: str, sql: str, catalog: Catalog) -> str | None:
    """The earlier statement kept to the groups whose one measure passes the bound the
    question says, listing the groups; None when the question is not that shape or the
    bound could name something other than the measure."""
    match = _BOUND.match(question)
    if match is None:
        return None
    select = parse(sql)
    group = select.args.get("group")
    if group is None or any(select.args.get(k) for k in ("limit", "offset", "distinct")):
        return None
    measures = [e for e in select.expressions if e.find(exp.AggFunc) is not None]
    shown = [e for e in select.expressions if e.find(exp.AggFunc) is None]
    if len(measures) != 1 or not shown:
        return None
    measure = measures[0].unalias()
    tables = [t for s in sources(select) if (t := table_for(catalog, s)) is not None]
    if not tables:
        return None
    tail = match.group("tail").strip().lower()
    if tail and not _names_counted(tail, measure, select, catalog):
        return None
    verb = [w for w in match.group("verb").lower().split() if w not in STOP_WORDS]
    if any(w not in _GLUE and _names_a_column(w, tables) for w in verb):
        return None
    number = match.group("n").replace(",", "")
    bound = _OPERATORS[match.group("cmp").lower()](
        this=measure.copy(), expression=exp.Literal.number(number)
    )
    having = select.args.get("having")
    condition = bound if having is None else exp.and_(having.this, bound)
    select.set("having", exp.Having(this=condition))
    alias = measures[0].alias_or_name
    order = select.args.get("order")
    if order is not None:
        for ordered in order.expressions:
            if isinstance(ordered.this, exp.Column) and ordered.this.name == alias:
                ordered.set("this", measure.copy())
    select.set("expressions", shown)
    return select.sql(dialect="postgres")


def _names_counted(word: str, measure: exp.Expr, select: exp.Select, catalog: Catalog) -> bool:
    """Whether ``word`` is the name of the rows a ``COUNT(*)`` counts (its one table)."""
    if not isinstance(measure, exp.Count) or not isinstance(measure.this, exp.Star):
        return False
    read = sources(select)
    if len(read) != 1 or (table := table_for(catalog, read[0])) is None:
        return False
    return stem(word) in {stem(w) for w in name_words(readable(table, catalog))}


def _names_a_column(word: str, tables: list[TableInfo]) -> bool:
    return any(
        word_match(word, name) >= 0.8 or stem(word) == stem(name)
        for table in tables
        for column in table.columns
        for name in name_words(column_name(table, column.name))
    )


# A filter's bare bound: "with more than 40", "having over 3", "at least 10" — a
# comparison and a number, nothing after the number to say what it counts or measures.
_BARE = re.compile(
    r"^\W*(?:(?:the\s+)?ones\s+|those\s+)?(?:(?:that|which|who)\s+)?"
    r"(?:with|having|have|has|had)?\s*"
    r"(?P<cmp>more than|over|above|at least|fewer than|less than|under|below|at most)\s+"
    r"(?P<n>\d[\d,]*(?:\.\d+)?)\s*\??\s*$",
    re.IGNORECASE,
)


def bare_bound(sql: str, condition: str, catalog: Catalog) -> Linked | None:
    """A filter's condition that is a bare bound ("only those with more than 40" after
    "how many different customers did each employee sell to in 1997") as a ``HAVING``
    on the earlier statement's one measure, the groups and the measure still shown: the
    words name no column (the linker placed nothing), and the one figure each earlier
    row carries is what a number with nothing after it is compared with. None where
    the statement does not group, is cut by a limit (a bound before the cut keeps other
    rows), or shows no measure or more than one (which one is meant is not said), or
    shows a stored number beside its measure (the bound might be that number's)."""
    match = _BARE.match(" ".join(condition.split()))
    if match is None:
        return None
    select = parse(sql)
    if select.args.get("group") is None or select.args.get("limit"):
        return None
    measures = [e.unalias() for e in select.expressions if e.find(exp.AggFunc) is not None]
    if len(measures) != 1:
        return None
    tables = {s.alias_or_name: t for s in sources(select) if (t := table_for(catalog, s))}
    for projection in select.expressions:
        column = projection.unalias()
        if isinstance(column, exp.Column) and _stored_number(column, tables):
            return None
    number = match.group("n").replace(",", "")
    bound = _OPERATORS[match.group("cmp").lower()](
        this=measures[0].copy(), expression=exp.Literal.number(number)
    )
    return Linked((), (), frozenset(), (bound,))


def _stored_number(column: exp.Column, tables: dict[str, TableInfo]) -> bool:
    """Whether ``column`` is a shown number that is no key of its table."""
    table = tables.get(column.table)
    stored = table.column(column.name) if table is not None else None
    if table is None or stored is None or column.name in table.primary_key:
        return False
    return stored.data_type.startswith(("numeric", "decimal", "integer", "bigint",
                                        "smallint", "real", "double", "money"))  # fmt: skip
