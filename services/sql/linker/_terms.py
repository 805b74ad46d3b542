"""Business definitions (the database's glossary, the request's instructions, the
question's own "X refers to Y"): terms expanded into their words, definitions written in
SQL parsed against the catalog, conditions and measures they define."""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlglot
from sqlglot import exp

from services.sql.definitions import GlossaryEntry, is_wordy, trim_definition
from services.sql.gate import identifier
from services.sql.linker._context import LinkContext
from services.sql.linker._plan import LinkError, Measure, Plan
from services.sql.linker._vocabulary import Col, Vocabulary
from services.sql.words import (
    stem,
    word_match,
)

# Parsed definitions remembered per catalog (a glossary's entries, a request's own).
DEFINITIONS_MAX = 512


def expand_terms(
    vocab: Vocabulary, glossary: Sequence[GlossaryEntry], applied: list[str], question: str
) -> str:
    """Replace a defined term (an acronym like "TSC", or a phrase) by its definition
    when the definition is words ("TSC = Total Sales Count"); the terms replaced are
    added to ``applied``."""
    for entry in glossary:
        body = entry.definition or entry.expression
        for name in entry.names:
            if not name:
                continue
            pattern = re.compile(rf"\b{re.escape(name)}\b")
            operations = {stem(w) for w in re.findall(r"[a-z]+", body.lower())} & OPERATIONS
            if (
                pattern.search(question)
                and body
                and is_wordy(body)
                and not operations
                and sql_definition(vocab, entry) is None
            ):
                replacement = trim_definition(body)
                question = pattern.sub(replacement.replace("\\", r"\\"), question)
                applied.append(entry.term)
                break
    return question


def sql_columns(vocab: Vocabulary, tree: exp.Expr) -> dict[int, Col] | None:
    """Every column a definition's SQL names, resolved in the catalog (``table.column``
    or a column name only one table has); None when one does not resolve."""
    resolved: dict[int, Col] = {}
    for column in tree.find_all(exp.Column):
        name, table = column.name.lower(), column.table.lower()
        found = [
            c
            for c in vocab.columns
            if c.column.name.lower() == name and (not table or c.table.name.lower() == table)
        ]
        if len(found) != 1:
            return None
        resolved[id(column)] = found[0]
    return resolved


def sql_definition(
    vocab: Vocabulary, entry: GlossaryEntry
) -> tuple[exp.Expr, dict[int, Col]] | None:
    """A definition written in SQL ("SUM(cost) / NULLIF(SUM(clicks), 0)", "status =
    'active'"), parsed with sqlglot: no subqueries, only catalog columns."""
    cache = vocab.definitions
    if entry in cache:
        return cache[entry]
    if len(cache) >= DEFINITIONS_MAX:
        cache.clear()
    cache[entry] = found = parse_definition(vocab, entry)
    return found


def parse_definition(
    vocab: Vocabulary, entry: GlossaryEntry
) -> tuple[exp.Expr, dict[int, Col]] | None:
    body = (entry.expression or entry.definition).strip().rstrip(";")
    if not body or (is_wordy(body) and not re.search(r"[()=<>]", body)):
        return None
    try:
        tree = sqlglot.parse_one(body, dialect="postgres")
    except sqlglot.errors.SqlglotError:
        return None  # prose, not SQL
    if tree.find(exp.Select, exp.Subquery) is not None or tree.find(exp.Column) is None:
        return None
    columns = sql_columns(vocab, tree)
    return (tree, columns) if columns is not None else None


def without_conditions(ctx: LinkContext, phrase: str) -> str:
    """The phrase less the terms defined as conditions ("open deals" -> "deals"): a
    condition narrows the rows, it names no column to show."""
    for entry in ctx.glossary:
        if is_condition(ctx.vocab, entry):
            for name in entry.names:
                phrase = re.sub(rf"\b{re.escape(name.lower())}\b\s*", "", phrase)
    return phrase.strip()


def is_condition(vocab: Vocabulary, entry: GlossaryEntry) -> bool:
    """Whether the entry defines a condition in SQL (``stage = 'won'``), not a value."""
    parsed = sql_definition(vocab, entry)
    return (
        parsed is not None
        and parsed[0].find(exp.AggFunc) is None
        and isinstance(parsed[0], exp.Predicate | exp.Not | exp.And | exp.Or | exp.Paren)
    )


def term_spans(ctx: LinkContext) -> list[tuple[int, int]]:
    """Where the question uses a term of an applied definition: its words are that
    term, not values or names of their own ("win rate" is not a 'Closed Won' filter)."""
    spans = []
    for entry in ctx.glossary:
        if entry.term not in ctx.applied:
            continue
        for name in entry.names:
            for m in re.finditer(rf"\b{re.escape(name)}\b", ctx.question, re.I):
                spans.append((m.start(), m.end()))
    return spans


def sql_measure(ctx: LinkContext, entry: GlossaryEntry) -> Measure | None:
    parsed = sql_definition(ctx.vocab, entry)
    if parsed is None or parsed[0].find(exp.AggFunc) is None:
        return None
    tree, columns = parsed
    tables = tuple(dict.fromkeys(c.table for c in columns.values()))
    return Measure("SQLEXPR", label=entry.term, expr=[tree, columns], tables=tables)


def sql_conditions(ctx: LinkContext, plan: Plan) -> None:
    """Conditions the glossary defines in SQL ("active" = ``status = 'active'``), for
    the terms the question uses."""
    for entry in ctx.glossary:
        if not any(
            re.search(rf"\b{re.escape(name)}\b", ctx.question, re.I) for name in entry.names
        ):
            continue
        parsed = sql_definition(ctx.vocab, entry)
        if parsed is None or parsed[0].find(exp.AggFunc) is not None:
            continue
        tree, columns = parsed
        if not isinstance(tree, exp.Predicate | exp.Not | exp.And | exp.Or | exp.Paren):
            continue
        plan.raw.append((tree, columns))
        plan.raw_terms.append(entry.term)
        if entry.term not in ctx.applied:
            ctx.applied.append(entry.term)


def prose_of_definitions(ctx: LinkContext) -> set[str]:
    """Words of the definitions applied that name nothing in the schema or its values
    ("CAW = cohort average weight"): a definition's prose, not a condition."""
    words: set[str] = set()
    for entry in ctx.glossary:
        if entry.term not in ctx.applied:
            continue
        for raw in re.findall(r"[a-z]+", (entry.definition or entry.expression).lower()):
            w = stem(raw)
            if ctx.vocab.values.get(raw) or ctx.vocab.values.get(w):
                continue
            named = any(
                word_match(w, p) >= 0.9
                for parts in [
                    *ctx.vocab.table_words.values(),
                    *ctx.vocab.column_words.values(),
                ]
                for p in parts
            )
            if not named and w not in OPERATIONS:
                words.add(w)
    return words


def render_sql(tree: exp.Expr, columns: dict[int, Col], alias: dict[str, str]) -> str:
    """A glossary definition's SQL with each column qualified by its table's alias."""
    copy = tree.copy()
    originals = list(tree.find_all(exp.Column))
    for old, new in zip(originals, copy.find_all(exp.Column), strict=True):
        col = columns[id(old)]
        if col.table.qualified not in alias:
            raise LinkError(f"the definition's table {col.table.name} is not joined")
        new.set("table", exp.to_identifier(alias[col.table.qualified]))
        new.set("this", identifier(col.column.name))
    return copy.sql(dialect="postgres")


# Words that ask for an operation the linker does not compose (windows, comparisons over
# time); a definition that uses them is not mere prose.
OPERATIONS = frozenset(
    [
        "previous",
        "prev",
        "prior",
        "change",
        "latest",
        "recent",
        "earliest",
        "rank",
        "increase",
        "decrease",
        "difference",
        "growth",
        "cumulative",
        "running",
        "moving",
        "lag",
        "lead",
        "new",
        "signup",
        "signups",
    ]
)
