"""Coverage: every content word of the question must be explained by the statement
(a table or column read, a value compared, a defined term, the grammar of questions),
or the question is refused naming the word."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from services.sql.catalog import ColumnInfo
from services.sql.linker._context import LinkContext
from services.sql.linker._plan import BE, LinkError, Plan, measures_in
from services.sql.linker._terms import prose_of_definitions
from services.sql.linker._vocabulary import Vocabulary
from services.sql.words import (
    CHANGE_VERBS,
    GRAMMAR_WORDS,
    MONTHS,
    STOP_WORDS,
    Tok,
    cover,
    do_support_verb,
    irregular_past,
    lemma,
    name_words,
    said_as_name,
    stem,
    stored_as_verb,
    tokenize,
    units_of,
    word_match,
)


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
        forgiven=prose_of_definitions(ctx)
        | ctx.known
        | units_of(ctx.question, _numbers(conditions)),
    )
    if word is not None and word.lower() in CHANGE_VERBS:
        raise LinkError(
            f"the question asks whether a figure changed ({word!r}): ask for the figure "
            "in each period to compare them",
            phrase=word,
        )
    if word is not None:
        raise LinkError(f"nothing in the schema matches {word!r}", phrase=word)


def _numbers(conditions: Iterable[str]) -> set[float]:
    """The numbers the plan's conditions compare with (outside quoted values)."""
    return {
        float(n)
        for cond in conditions
        for n in re.findall(r"(?<![\w.'])\d+(?:\.\d+)?(?![\w'])", re.sub(r"'[^']*'", "", cond))
    }


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
    columns: set[tuple[str, str]] | None = None,
) -> str | None:
    """The first content word of ``question`` that a statement reading ``tables`` and
    comparing with ``values`` does not explain, or None. A word is explained by a name part
    of a table read (or of its columns), a value compared with, a defined term, or the
    grammar of questions about data. An unexplained word ("open deals") is a condition the
    statement would silently drop, so the question is refused instead. With ``columns``
    only those columns' names explain words (a column of a table read, but not used,
    explains nothing)."""
    parts: list[str] = []
    # strict (``columns`` given): each table's explaining parts, and all its columns'
    # parts, for a word beside one the table explains ("outcome assessments")
    own: dict[str, list[str]] = {}
    near: dict[str, list[str]] = {}
    for name in tables:
        parts += vocab.table_words.get(name, [])
        table = vocab.catalog.table(name)
        if table is not None:
            parts += [p for alias in vocab.table_aliases[name] for p in alias]
            own[name] = [*vocab.table_words.get(name, [])]
            near[name] = []
            for column in table.columns:
                used = columns is None or (name, column.name) in columns
                if used or not _flag(column):
                    # a flag not used ("is_male") is a condition left out, never part
                    # of the noun's name: "male singers" counted all singers
                    near[name] += vocab.column_words[(name, column.name)]
                if not used:
                    continue
                own[name] += vocab.column_words[(name, column.name)]
                parts += vocab.column_words[(name, column.name)]
                if columns is not None:
                    # a used column's own description explains words too
                    parts += [stem(w) for w in re.findall(r"[a-z]+", column.comment.lower())
                              if w not in STOP_WORDS]  # fmt: skip
                parts += [p for alias in vocab.column_aliases[(name, column.name)] for p in alias]
            if columns is not None:
                parts += [stem(w) for w in re.findall(r"[a-z]+", table.comment.lower())
                          if w not in STOP_WORDS]  # fmt: skip
            if documented:
                # the schema's documentation ("active: False when the product is
                # discontinued"), for readers that use it
                notes = " ".join([table.comment, *(c.comment for c in table.columns)])
                extra = [*extra, *(stem(w) for w in re.findall(r"[a-z]+", notes.lower()))]
    values = list(values)
    value_words = {stem(w) for v in values for w in re.findall(r"[a-z0-9]+", v.lower().strip("%"))}
    # a standard code compared with explains the place's name ("Texas" for 'TX')
    value_words |= {stem(w) for v in values for w in vocab.code_words.get(v.lower().strip(), ())}
    value_lemmas = {lemma(w) for w in value_words}
    known = set(extra) | set(forgiven)
    known |= {stem(w) for term in terms for w in re.findall(r"[a-z0-9]+", term.lower())}
    coded = any(_text_key_read(vocab, name, columns) for name in tables)
    whole_name = any(_whole_name_read(vocab, name, columns) for name in tables)
    toks = tokenize(question)
    verb = do_support_verb(question)
    # "across all treatments", "over all customers": the scope of an aggregate, all rows
    scope = {m.start(1) for m in re.finditer(r"\b(?:across|over) (?:all )?(?:the )?(\w+)",
                                              question, re.I)}  # fmt: skip
    for index, tok in enumerate(toks):
        if tok.quoted or not tok.low.isalpha() or len(tok.low) < 2 or tok.start in scope:
            continue
        # a two-letter word is a code a condition may hold ("in XY", "of gm"), unless it
        # is grammar or an ordinal's ending ("2nd")
        if len(tok.low) == 2 and (
            tok.low in _SHORT_GRAMMAR or (tok.start and question[tok.start - 1].isdigit())
        ):
            continue
        w = tok.stem
        if w in STOP_WORDS or tok.low in GRAMMAR_WORDS or w in GRAMMAR_WORDS or tok.low in MONTHS:
            continue
        if (divides and w in RATIO_WORDS) or tok.text in terms or w in known or tok.low in known:
            continue
        if whole_name and tok.low == "full" and _next_is(toks, index, ("name", "names")):
            continue  # "the full name": the one ``name`` column holds the whole name
        if coded and tok.low in ("code", "codes"):
            continue  # "the carrier code": the text key the rows are known by, read
        # "have been archived?": a state asked about, not a relation (at the clause's end)
        ends = index + 1 == len(toks) or bool(
            re.match(r"\s*[?.!,;]", question[tok.end : toks[index + 1].start])
        )
        predicate = index > 0 and toks[index - 1].low in (*BE, "have", "has", "had") and ends
        if (
            relation_word(tok.low)
            and not predicate
            and not said_as_name(question, tok.start, tok.text)
            and not (columns is not None and _compound(question, tok.start, tok.end))
            and not vocab.values.get(tok.low)
        ):
            continue
        if (
            tok.low == verb
            and tok.low not in CHANGE_VERBS
            and not stored_as_verb(tok.low, vocab.values)
        ):
            continue  # "how many flights did JetBlue operate?": the verb relates them
        if w in value_words or any(w.startswith(v) for v in value_words if len(v) >= 4):
            continue
        if lemma(tok.low) in value_lemmas:
            continue
        if _explains(w, parts):
            continue
        if columns is not None and any(
            _explains(toks[k].stem, own[t]) and _explains(w, near[t])
            for t in own
            for k in (index - 1, index + 1)
            if 0 <= k < len(toks) and not toks[k].quoted
        ):
            continue  # a compound with a word its table explains ("itch VAS score")
        return tok.text
    return None


# Two-letter words of a question's grammar that the stop words leave out.
_SHORT_GRAMMAR = frozenset({"no", "up", "if", "so", "ok", "vs", "am", "pm", "he", "id", "eg", "ie"})


def _text_key_read(vocab: Vocabulary, name: str, columns: set[tuple[str, str]] | None) -> bool:
    """Whether ``name`` is a table known by a text key (``airlines.carrier``: 'UA') that
    the statement reads (with ``columns``, the strict reading, among those used): a
    text key is the code its rows are known by, so the word "code" names it."""
    table = vocab.catalog.table(name)
    if table is None or len(table.primary_key) != 1:
        return False
    key = table.column(table.primary_key[0])
    if key is None or key.data_type not in ("text", "character varying", "character"):
        return False
    return columns is None or (name, key.name) in columns


# Columns that hold a part of a name: where a table has one, "full name" asks for more
# than any single column.
_NAME_PARTS = frozenset({"first", "last", "middle", "given", "family", "surname", "fname", "lname"})


def _whole_name_read(vocab: Vocabulary, name: str, columns: set[tuple[str, str]] | None) -> bool:
    """Whether ``name`` is a table whose ``name`` column, read by the statement (with
    ``columns``, among those used), holds the whole name: no column of the table holds
    a part of one (``first_name``), so "full name" is that column, nothing to add."""
    table = vocab.catalog.table(name)
    if table is None or table.column("name") is None:
        return False
    if any(_NAME_PARTS & set(re.findall(r"[a-z]+", c.name.lower())) for c in table.columns):
        return False
    return columns is None or (name, "name") in columns


# The values of a yes/no column stored as text ('T'/'F', 'Y'/'N', 'yes'/'no').
_YES_NO = (
    frozenset({"t", "f"}),
    frozenset({"y", "n"}),
    frozenset({"yes", "no"}),
    frozenset({"true", "false"}),
)


def _flag(column: ColumnInfo) -> bool:
    """A yes/no column: boolean, named as a predicate ("is_male", "has_garden"), or
    holding only the two values of a yes/no. Its name word states a condition on the
    rows ("male singers"), so it explains a question's word only where it is used."""
    if column.data_type == "boolean" or name_words(column.name)[:1] in (["is"], ["has"]):
        return True
    stored = {v.strip().lower() for v in column.sample_values}
    return any(stored and stored <= pair for pair in _YES_NO)


def _next_is(toks: Sequence[Tok], index: int, words: tuple[str, ...]) -> bool:
    return index + 1 < len(toks) and toks[index + 1].low in words


def _explains(word: str, parts: Sequence[str]) -> bool:
    return any(word_match(word, p) for p in parts) or any(
        cover([word], p)[0] >= 0.6 or (len(word) >= 4 and word in p) for p in parts
    )


def _compound(text: str, start: int, end: int) -> bool:
    """A word hyphened to another ("left-handed", "red-haired") is part of a compound
    adjective that qualifies a noun, a condition on its rows: neither half is the verb
    or adverb that relates two tables, whatever its ending ("handed") or past form
    ("left"). Held in the strict reading only (``columns`` given: the verifier's, of a
    statement already composed); the linker's own coverage, which picks among readings,
    is left as it was."""
    return text[end : end + 1] == "-" or (start > 0 and text[start - 1] == "-")


def relation_word(word: str) -> bool:
    """Verbs and adverbs that say how things relate ("prescribed", "received", "most
    frequently"): the joins already express them."""
    if irregular_past(word):
        return True  # "flew", "built": past forms no suffix shows
    return len(word) > 4 and word.endswith(("ed", "ing", "ly")) and not word.endswith("ly" * 2)
