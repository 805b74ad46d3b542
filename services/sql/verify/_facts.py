"""What the question checks read: a statement's facts, parsed back once from its text
(the tables and columns it reads, its literals, aggregates, ordering, grouping, what it
outputs), and the question's text less its quoted values.

The question checks are many and small; each reads these facts rather than walking the
tree again, and none knows a schema beyond what the link context says of a column (its
words, whether it says when)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

from sqlglot import exp

from services.sql.gate import parse_statements
from services.sql.linker import DATE_NAME_WORDS, LinkContext, LinkError, is_number, is_temporal
from services.sql.results import period_grain
from services.sql.verify._statement import conjuncts
from services.sql.words import ISO_DATE, stem

_TIME_NAMES = frozenset(stem(w) for w in DATE_NAME_WORDS)


@dataclass
class StatementFacts:
    """What a statement does, read back from its text."""

    columns: set[tuple[str, str]] = field(default_factory=set)  # (table, column) used
    tables: set[str] = field(default_factory=set)  # every table read
    strings: list[str] = field(default_factory=list)
    numbers: set[float] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    ordered: bool = False
    limited: bool = False
    grouped: bool = False
    distinct: bool = False
    negated: bool = False
    nested: bool = False
    ranked: bool = False
    # equality conditions ANDed in one WHERE: (table, column) -> values
    required: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # what the outer GROUP BY groups by: (table, column), and the grain of a period
    # (``period_grain``: a DATE_TRUNC or an EXTRACT)
    groups: set[tuple[str, str]] = field(default_factory=set)
    grains: set[str] = field(default_factory=set)
    # the columns the outer SELECT returns, bare or inside an expression: (table, column)
    outputs: set[tuple[str, str]] = field(default_factory=set)
    base: str = ""  # the outer FROM's table


def statement_facts(sql: str) -> StatementFacts:
    """The facts of one SELECT as the linker writes it (every column qualified by a table
    alias, or an output name in ORDER BY)."""
    statements = parse_statements(sql, shared=True)  # read, never changed
    if len(statements) != 1:
        raise LinkError("the linker wrote no single statement")
    tree = statements[0]
    facts = StatementFacts()
    nodes: dict[type, list[exp.Expr]] = {}
    for node in tree.walk():  # one pass; every kind asked about below, by type
        nodes.setdefault(type(node), []).append(node)

    def every(*kinds: type) -> list[exp.Expr]:
        return [n for kind in kinds for n in nodes.get(kind, [])]

    aliases: dict[str, str] = {}
    for table in every(exp.Table):
        assert isinstance(table, exp.Table)
        qualified = f"{table.db}.{table.name}" if table.db else table.name
        aliases[table.alias_or_name] = qualified
        facts.tables.add(qualified)
    outputs = {e.alias: e.this for e in every(exp.Alias) if isinstance(e.parent, exp.Select)}
    for column in every(exp.Column):
        assert isinstance(column, exp.Column)
        if column.table and column.table in aliases:
            facts.columns.add((aliases[column.table], column.name))
        elif column.name in outputs:
            for inner in outputs[column.name].find_all(exp.Column):
                if inner.table in aliases:
                    facts.columns.add((aliases[inner.table], inner.name))
    for literal in every(exp.Literal):
        assert isinstance(literal, exp.Literal)
        if literal.is_string:
            facts.strings.append(literal.this)
        else:
            with contextlib.suppress(ValueError):
                facts.numbers.add(float(literal.this))
    names = {exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX"}
    facts.aggregates = {name for kind, name in names.items() if kind in nodes}
    facts.ordered = exp.Order in nodes
    facts.limited = exp.Limit in nodes
    facts.grouped = exp.Group in nodes
    facts.distinct = exp.Distinct in nodes
    facts.negated = (
        exp.Not in nodes
        or exp.NEQ in nodes
        or any(isinstance(i.expression, exp.Null) for i in every(exp.Is))
    )
    facts.ranked = exp.Window in nodes
    facts.nested = any(
        isinstance(s.parent, exp.Subquery | exp.In | exp.Exists)
        for s in every(exp.Select)
        if s is not tree
    )
    group = tree.args.get("group")
    selected = tree.expressions if isinstance(tree, exp.Select) else []
    first = tree.args.get("from_")
    if first is not None and isinstance(first.this, exp.Table):
        facts.base = aliases.get(first.this.alias_or_name, "")
    for output in selected:
        for column in output.find_all(exp.Column):
            if column.table in aliases:
                facts.outputs.add((aliases[column.table], column.name))
    for said in group.expressions if group is not None else ():
        key = said
        if isinstance(said, exp.Literal) and said.is_int and 0 < int(said.this) <= len(selected):
            key = selected[int(said.this) - 1]  # GROUP BY 1: the first output
        for column in key.find_all(exp.Column):
            if column.table in aliases:
                facts.groups.add((aliases[column.table], column.name))
        if period_grain(key):
            facts.grains.add(period_grain(key))
        for literal in key.find_all(exp.Literal):
            facts.grains.add(literal.this.lower())
    where = tree.args.get("where")
    if where is not None:
        for condition in conjuncts(where.this):
            if isinstance(condition, exp.EQ) and isinstance(condition.this, exp.Column):
                value = condition.expression
                if isinstance(value, exp.Literal) and condition.this.table in aliases:
                    key = (aliases[condition.this.table], condition.this.name)
                    facts.required.setdefault(key, []).append(value.this)
    return facts


def without_quotes(low: str) -> str:
    """The question less its quoted values: a quoted value is the data's, not a phrase."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", " ", low)


def column_words(ctx: LinkContext, facts: StatementFacts) -> set[str]:
    """The words (and numbers: ``day100_score``) of the names of every column the
    statement uses."""
    words: set[str] = set()
    for table, column in facts.columns:
        words.update(ctx.vocab.column_words.get((table, column), []))
        words.update(re.findall(r"[a-z]+|\d+", column.lower()))
    return words


def dated(ctx: LinkContext, column: tuple[str, str]) -> bool:
    """A column that says when: a date or timestamp, or a year, month or day by name."""
    if any(c.key == column and is_temporal(c.column.data_type) for c in ctx.vocab.columns):
        return True
    return bool(_TIME_NAMES & {stem(w) for w in ctx.vocab.column_words.get(column, [])})


def dated_condition(sql: str, facts: StatementFacts) -> bool:
    """Whether the statement bounds something in time: a date among its literals, or an
    interval."""
    return any(ISO_DATE.search(s) for s in facts.strings) or "INTERVAL" in sql.upper()


def numbers_shown(ctx: LinkContext, facts: StatementFacts) -> bool:
    """Whether a column the statement shows holds amounts: numbers that are no label. A
    key of its table (``cars.id``) or a reference to another table's rows
    (``sales.car_id``) is a number that names a row; "how much did the cars sell for?"
    answered with the cars' ids shows no amount."""
    labels = {(e.child, e.child_columns[0]) for e in ctx.graph.edges if len(e.child_columns) == 1}
    return any(
        c.key in facts.outputs
        and is_number(c.column.data_type)
        and c.table.primary_key != (c.column.name,)
        and (c.column.name,) not in c.table.unique_keys
        and c.key not in labels
        for c in ctx.vocab.columns
    )
