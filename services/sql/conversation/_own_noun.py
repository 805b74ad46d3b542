"""A filter that names the earlier rows by their own table's noun: "only payments made by
credit card" after a total of payments received per salesperson, "keep only transactions
above 100" after a total of wallet transactions per status.

The noun ("payments", "transactions") is a word of the name of the table the earlier
statement counts or sums, and it means that table's rows — the rows the condition
narrows — even where it is also a word of another table's name ("payments made" is the
dealership's outgoing payments, ``payments_made``): read as said, the words named that
other table and no column of the earlier answer's tables fitted them. Two readings of the
rest follow from the grammar alone:

- a past participle and its preposition after the noun ("made by credit card", "paid
  with cash") say how or by whom the rows' verb was done, an agent or manner: the
  condition is the preposition's phrase ("by credit card") asked of the measured table's
  rows alone, as the linker reads any condition;
- a comparison with a number right after the noun ("transactions above 100") compares
  each row's amount: the one value column the earlier statement measures (its ``SUM``,
  ``AVG``…) of that table, else the table's one value column; with none or two, nothing
  is read (a count of rows has no amount to guess).

The noun must name the measured table and no other table the earlier statement reads,
so a noun that names another table of the statement is never moved onto the measured
one.
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for
from services.sql.conversation._conditions import Linked, said_numbers
from services.sql.conversation._statement import parse, readable, sources
from services.sql.conversation._valued import is_value
from services.sql.gate import identifier
from services.sql.words import IRREGULAR_PARTICIPLES, name_words, stem

# The prepositions a participle's agent or manner is said with.
_AGENT_OR_MANNER = frozenset({"by", "with", "via", "through", "using", "in", "on", "from"})
_PARTICIPLE = re.compile(r"[a-z]{3,}ed")
_COMPARED = re.compile(
    r"^(?:(?:that|which)\s+(?:are|is|were|was)\s+|(?:are|is)\s+)?"
    r"(?P<cmp>more than|greater than|over|above|at least|less than|under|below|at most)"
    r"\s+\$?(?P<n>\d[\d,.]*\s*(?:k|m|thousand|million)?)$",
    re.IGNORECASE,
)
_OPERATORS: dict[str, type[exp.Binary]] = {
    "more than": exp.GT, "greater than": exp.GT, "over": exp.GT, "above": exp.GT,
    "at least": exp.GTE, "less than": exp.LT, "under": exp.LT, "below": exp.LT,
    "at most": exp.LTE,
}  # fmt: skip
# Words of a number column that codes a kind, never an amount ("sender_type").
_CODED = frozenset({"type", "kind", "category", "class", "level", "rank", "flag", "status"})


def measured(select: exp.Select, catalog: Catalog) -> tuple[str, TableInfo] | None:
    """(alias, table) of the rows the statement counts or sums: the one table its
    aggregates read columns of, or, for a count of rows (``COUNT(*)``), its first table;
    None for a statement that aggregates nothing or columns of two tables."""
    own = {s.alias_or_name: table_for(catalog, s) for s in sources(select)}
    aggregates = [a for e in select.expressions for a in e.find_all(exp.AggFunc)]
    if not aggregates:
        return None
    read = {c.table for a in aggregates for c in a.find_all(exp.Column)}
    if not read:
        first = sources(select)[0].alias_or_name if sources(select) else None
        read = {first} if first else set()
    if len(read) != 1:
        return None
    alias = next(iter(read))
    info = own.get(alias)
    return None if info is None else (alias, info)


def _names_measured(
    word: str, select: exp.Select, catalog: Catalog
) -> tuple[str, TableInfo] | None:
    """The measured table when ``word`` is a word of its name and of no other table the
    statement reads."""
    found = measured(select, catalog)
    if found is None or not word.isalpha():
        return None
    said = stem(word.lower())
    _, table = found

    def words(info: TableInfo) -> set[str]:
        # as named, and as read without the prefix every table shares ("sbtransaction")
        return {stem(w) for w in (*name_words(info.name), *readable(info, catalog).split())}

    if said not in words(table):
        return None
    for source in sources(select):
        other = table_for(catalog, source)
        if other is not None and other.qualified != table.qualified and said in words(other):
            return None
    return found


def agent_or_manner(sql: str, condition: str, catalog: Catalog) -> tuple[TableInfo, str] | None:
    """(the measured table, the preposition's phrase) of "<its noun> <participle>
    <preposition> …" ("payments made by credit card" → "by credit card"); None for any
    other condition."""
    words = condition.split()
    if len(words) < 4:
        return None
    noun, participle, preposition = (w.lower() for w in words[:3])
    if not (_PARTICIPLE.fullmatch(participle) or participle in IRREGULAR_PARTICIPLES):
        return None
    if preposition not in _AGENT_OR_MANNER:
        return None
    found = _names_measured(noun, parse(sql), catalog)
    return None if found is None else (found[1], " ".join(words[2:]))


def amount_compared(sql: str, condition: str, catalog: Catalog) -> Linked | None:
    """The comparison "<its noun> above 100" says of each measured row's amount (see the
    module's docstring), or None."""
    words = condition.split()
    if len(words) < 3:
        return None
    match = _COMPARED.match(" ".join(words[1:]))
    select = parse(sql)
    found = _names_measured(words[0], select, catalog) if match is not None else None
    if match is None or found is None:
        return None
    numbers = said_numbers(match.group("n"))
    if len(numbers) != 1:
        return None
    alias, table = found
    column = _amount(select, alias, table)
    if column is None:
        return None
    number = numbers[0]
    literal = exp.Literal.number(int(number) if number == int(number) else number)
    compare = _OPERATORS[" ".join(match.group("cmp").lower().split())]
    placed = exp.column(identifier(column), table=identifier(alias))
    return Linked((compare(this=placed, expression=literal),), (), frozenset({(alias, column)}))


def _amount(select: exp.Select, alias: str, table: TableInfo) -> str | None:
    """The measured table's amount: the one value column the statement's sums, averages
    or bounds read, else the one value column the table has."""
    tables = {alias: table}
    summed = {
        a.this.name
        for e in select.expressions
        for a in e.find_all(exp.Sum, exp.Avg, exp.Min, exp.Max)
        if isinstance(a.this, exp.Column)
        and a.this.table == alias
        and is_value(a.this, tables)
        and not _CODED & set(name_words(a.this.name))
    }
    if len(summed) == 1:
        return next(iter(summed))
    if summed:
        return None
    values = [
        c.name
        for c in table.columns
        if is_value(exp.column(c.name, table=alias), tables)
        and not _CODED & set(name_words(c.name))
    ]
    return values[0] if len(values) == 1 else None
