"""Coverage: every content word of the question must be explained by the statement
(a table or column read, a value compared, a defined term, the grammar of questions),
or the question is refused naming the word."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from services.sql._calendar import MONTHS
from services.sql._words import (
    GRAMMAR_WORDS,
    STOP_WORDS,
    cover,
    lemma,
    stem,
    tokenize,
    word_match,
)
from services.sql.linker._context import LinkContext
from services.sql.linker._plan import BE, LinkError, Plan, measures_in
from services.sql.linker._terms import prose_of_definitions
from services.sql.linker._vocabulary import Vocabulary


def check_coverage(ctx: LinkContext, alias: dict[str, str], plan: Plan) -> None:
    """Every content word must be explained by the statement (see ``unexplained``)."""
    conditions = [cond for _, cond in plan.filters] + [c for g in plan.ors for _, c in g]
    conditions += [
        inner.filter[1]
        for m in plan.measures
        for inner in measures_in(m)
        if inner.filter is not None
    ]
    word = unexplained(
        ctx.question,
        ctx.vocab,
        [*alias, *(t.qualified for t in (*plan.anti, *plan.inner))],
        [v for cond in conditions for v in re.findall(r"'([^']*)'", cond)],
        divides=any(m.func in ("EXPR", "SHARE") for m in plan.measures),
        terms=ctx.applied,
        forgiven=prose_of_definitions(ctx) | ctx.known,
    )
    if word is not None:
        raise LinkError(f"nothing in the schema matches {word!r}")


RATIO_WORDS = frozenset(["percentage", "percent", "ratio", "rate", "share", "proportion"])


def unexplained(
    question: str,
    vocab: Vocabulary,
    tables: Sequence[str],
    values: Iterable[str],
    *,
    divides: bool = False,
    terms: Sequence[str] = (),
    extra: Iterable[str] = (),
    documented: bool = False,
    forgiven: Iterable[str] = (),
) -> str | None:
    """The first content word of ``question`` that a statement reading ``tables`` and
    comparing with ``values`` does not explain, or None. A word is explained by a name part
    of a table read (or of its columns), a value compared with, a defined term, or the
    grammar of questions about data. An unexplained word ("open deals") is a condition the
    statement would silently drop, so the question is refused instead."""
    parts: list[str] = []
    for name in tables:
        parts += vocab.table_words.get(name, [])
        table = vocab.catalog.table(name)
        if table is not None:
            parts += [p for alias in vocab.table_aliases[name] for p in alias]
            for column in table.columns:
                parts += vocab.column_words[(name, column.name)]
                parts += [p for alias in vocab.column_aliases[(name, column.name)] for p in alias]
            if documented:
                # the schema's documentation ("active: False when the product is
                # discontinued"), for readers that use it
                notes = " ".join([table.comment, *(c.comment for c in table.columns)])
                extra = [*extra, *(stem(w) for w in re.findall(r"[a-z]+", notes.lower()))]
    value_words = {stem(w) for v in values for w in re.findall(r"[a-z0-9]+", v.lower().strip("%"))}
    value_lemmas = {lemma(w) for w in value_words}
    known = set(extra) | set(forgiven)
    known |= {stem(w) for term in terms for w in re.findall(r"[a-z0-9]+", term.lower())}
    toks = tokenize(question)
    for index, tok in enumerate(toks):
        if tok.quoted or not tok.low.isalpha() or len(tok.low) < 3:
            continue
        w = tok.stem
        if w in STOP_WORDS or tok.low in GRAMMAR_WORDS or w in GRAMMAR_WORDS or tok.low in MONTHS:
            continue
        if (divides and w in RATIO_WORDS) or tok.text in terms or w in known or tok.low in known:
            continue
        # "have been archived?": a state asked about, not a relation (at the clause's end)
        ends = index + 1 == len(toks) or bool(
            re.match(r"\s*[?.!,;]", question[tok.end : toks[index + 1].start])
        )
        predicate = index > 0 and toks[index - 1].low in (*BE, "have", "has", "had") and ends
        if relation_word(tok.low) and not predicate and not vocab.values.get(tok.low):
            continue
        if w in value_words or any(w.startswith(v) for v in value_words if len(v) >= 4):
            continue
        if lemma(tok.low) in value_lemmas:
            continue
        if any(word_match(w, p) for p in parts) or any(
            cover([w], p)[0] >= 0.6 or (len(w) >= 4 and w in p) for p in parts
        ):
            continue
        return tok.text
    return None


def relation_word(word: str) -> bool:
    """Verbs and adverbs that say how things relate ("prescribed", "received", "most
    frequently"): the joins already express them."""
    return len(word) > 4 and word.endswith(("ed", "ing", "ly")) and not word.endswith("ly" * 2)
