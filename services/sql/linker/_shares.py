"""Shares and ratios: "what percentage of X are Y" (rows meeting a condition per hundred
rows) and "the ratio of X to Y" (two counts divided); the one ratio builder."""

from __future__ import annotations

import re

from services.sql.linker._composition import compose
from services.sql.linker._conditions import link_conditions
from services.sql.linker._context import LinkContext
from services.sql.linker._coverage import unexplained
from services.sql.linker._measures import read_measure
from services.sql.linker._plan import Linked, LinkError, Measure, Plan, quote, table_sql
from services.sql.linker._vocabulary import Col
from services.sql.words import (
    STOP_WORDS,
    Tok,
    lemma,
    stem,
    word_match,
)


def link_share(ctx: LinkContext, toks: list[Tok]) -> Linked | None:
    """ "What percentage of companies are Enterprise?", "What share of opportunities
    came from partners?": rows meeting a stored value or flag, per hundred rows (to two
    decimals). "What is the ratio of X to Y?": two counts divided."""
    ratio = re.search(
        r"\bratio\s+of\s+(?:the\s+)?(.+?)\s+to\s+(?:the\s+)?(.+?)(?=[?.,;]|$)", ctx.low
    )
    if ratio:
        return link_ratio(ctx, ratio.group(1), ratio.group(2))
    m = re.search(
        r"\b(percentage|percent|share|proportion|fraction)\s+of\s+(?:all\s+|the\s+)?([a-z]+(?:\s[a-z]+)?)\s+(?:are|is|were|was|have|has|had|that|which|who|with|came|come|got)\b(.*)$",
        ctx.low,
    )
    if m is None:
        return None
    words = [stem(w) for w in m.group(2).split() if w not in STOP_WORDS]
    hits = ctx.vocab.tables_named(words)
    if not hits:
        return None
    table = hits[0][0]
    tail_start = m.start(3)
    plan = Plan()
    counted = Measure("COUNT", table=table, label=m.group(2))
    plan.measures.append(counted)
    link_conditions(ctx, plan, ctx.question, toks)
    inside = [
        f for f in plan.filters if f[0].table is table and mentioned_after(ctx, f, toks, tail_start)
    ]
    if len(inside) != 1:
        return None
    plan.filters.remove(inside[0])
    col, cond = inside[0]
    share = Measure("SHARE", table=table, label=m.group(0), filter=(col, cond))
    plan.measures = [share]
    return compose(ctx, plan)


def link_ratio(ctx: LinkContext, first: str, second: str) -> Linked:
    """ "ratio of products to suppliers": two counts; of one table with two stored
    values ("active to inactive customers") they are filtered counts of that table."""
    a = read_measure(ctx, "number of " + first)
    b = read_measure(ctx, "number of " + second)
    if a is None or b is None or a.table is None or b.table is None:
        missing = first if a is None else second
        raise LinkError(f"nothing in the schema matches {missing!r}", phrase=missing)
    tables = [a.table.qualified, b.table.qualified]
    values = [f[1] for f in (a.filter, b.filter) if f is not None]
    word = unexplained(
        ctx.question,
        ctx.vocab,
        tables,
        re.findall(r"'([^']*)'", " ".join(values)),
        divides=True,
        terms=ctx.applied,
    )
    if word is not None:
        raise LinkError(f"nothing in the schema matches {word!r}", phrase=word)

    def count(m: Measure) -> str:
        where = ""
        if m.filter is not None:
            where = " WHERE " + m.filter[1].replace("{c}", quote(m.filter[0].column.name))
        assert m.table is not None
        return f"(SELECT COUNT(*) FROM {table_sql(m.table)}{where})"

    sql = f"SELECT {count(a)} * 1.0 / NULLIF({count(b)}, 0) AS ratio"
    explanation = f"Divides the number of {a.table.name} by the number of {b.table.name}."
    return Linked(sql, tuple(dict.fromkeys(tables)), explanation, tuple(ctx.applied))


def mentioned_after(ctx: LinkContext, found: tuple[Col, str], toks: list[Tok], start: int) -> bool:
    """The condition's value is written after ``start`` in the question."""
    col, cond = found
    values = re.findall(r"'((?:[^']|'')*)'", cond)
    if not values:
        parts = ctx.vocab.column_words[col.key]
        return any(t.start >= start and any(word_match(t.stem, p) for p in parts) for t in toks)
    value = values[0].lower()
    inside = {lemma(w) for w in re.findall(r"[a-z]+", value)}
    return any(
        t.start >= start
        and (
            t.low == value
            or (len(value) >= 4 and t.low.startswith(value))
            or (len(inside) > 1 and lemma(t.low) in inside)
        )
        for t in toks
    )
