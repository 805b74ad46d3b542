"""A measure named by a gradable word: "the 5 most expensive cars" ranks the cars by
their cost, "which 3 patients weigh the most?" the patients by their weight.

English ranks rows by an adjective ("most expensive") or a verb ("weigh the most") that
names a measure by meaning, not by a column's name, and neither reader places such a
word: the question was refused. The word is linked here, by the question embedder, to a
number column of the tables the question names, and the question is read once more
with the column said ("the 5 cars with the highest cost", "which 3 patients have the
highest weight kg?"); the linker reads it only when the question as asked is refused.

Three forms are read, each from its grammar:

- "the N most|least <adjective> <rows>" (the rows a table's name);
- "<rows> is|are the most|least <adjective>" at the end of the question;
- "<rows> <verb> the most|least" at the end of the question.

The column is the number column (no key) of the tables the question names closest in
meaning to the word, at least :data:`CLEAR_MIN` alike and :data:`CLEAR_MARGIN` ahead of the
next such column: a near tie is no measure ("hold" is as near a stadium's capacity as
anything else it stores). A verb says no direction ("weigh the least" is the least
weight), an adjective does: "expensive" is a high cost, "cheap" a low one. The direction
is the embedder's too: the adjective has to be :data:`POLE_MARGIN` closer to "high
<column>" than to "low <column>" (or the reverse), else the question stays refused
("affordable" is as near both). A trailing "by <column>" that says the column chosen
is dropped as said twice ("the most expensive cars by cost").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from services.sql.catalog import is_number
from services.sql.linker._context import Meaning
from services.sql.linker._mentions import chart
from services.sql.linker._plan import is_key
from services.sql.linker._vocabulary import Col, Vocabulary
from services.sql.linker.clauses import needs_a_name
from services.sql.words import STOP_WORDS, name_words, stem

_log = logging.getLogger("tandem.sql.meanings")

# A link tried only as the last reading of a refused question, among the few columns of
# the tables it names (a gradable word's measure here; an unplaced noun, ``_unplaced``):
# the nearest this alike and this far ahead of the next. Set on the study halves'
# refusals: "expensive" sits 0.75 from ``cars.cost`` and 0.15 ahead of ``cars.price``;
# unrelated words sit near 0.3 to any name.
CLEAR_MIN = 0.5
CLEAR_MARGIN = 0.08
# "expensive" is 0.07 nearer "high cost" than "low cost", "cheap" 0.07 nearer "low
# cost"; "costly" (0.02) and "affordable" (0.00) say no direction clearly enough.
POLE_MARGIN = 0.04

_BE = frozenset({"is", "are", "was", "were", "be", "been"})
_NOT_MEASURES = _BE | frozenset({"have", "has", "had", "do", "does", "did", "get", "got"})
_ADJECTIVE = re.compile(
    r"\b(?P<lead>(?:the\s+)?(?:\d+\s+)?)(?P<most>most|least)\s+(?P<word>[a-z]+)\s+"
    r"(?P<rest>[a-z][a-z ]*)",
    re.IGNORECASE,
)
_PREDICATE = re.compile(
    r"\b(?P<be>is|are|was|were)\s+the\s+(?P<most>most|least)\s+(?P<word>[a-z]+)\s*[?.!]?\s*$",
    re.IGNORECASE,
)
_VERB = re.compile(r"\b(?P<word>[a-z]+)\s+the\s+(?P<most>most|least)\s*[?.!]?\s*$", re.IGNORECASE)
_BY = re.compile(r"^\s+by\s+(?:the\s+|their\s+|its\s+)?(?P<said>[a-z]+(?:\s+[a-z]+)?)", re.I)

Vectors = npt.NDArray[np.float32]


class PhraseEmbedder(Protocol):
    """Embeds short texts (words, names) as queries, all with one model."""

    async def embed_phrases(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order; raises when the embedder is unavailable."""
        ...


def _gradable(vocab: Vocabulary, question: str) -> tuple[re.Match[str], str] | None:
    """The gradable phrase of the question and its form ("adjective", "predicate",
    "verb"); None when it has none, or its word is one a reader places."""
    found: tuple[re.Match[str], str] | None = None
    m = _ADJECTIVE.search(question)
    if m is not None and _rows_named(vocab, m.group("rest")):
        found = (m, "adjective")
    elif (m := _PREDICATE.search(question)) is not None:
        found = (m, "predicate")
    elif (m := _VERB.search(question)) is not None and m.group("word").lower() not in (
        _NOT_MEASURES
    ):
        found = (m, "verb")
    if found is None:
        return None
    word = found[0].group("word").lower()
    drawn = chart(vocab, question)
    unplaced = {
        t.low
        for i, t in enumerate(drawn.tokens)
        if needs_a_name(vocab, t) and not drawn.covering(i)
    }
    return found if word in unplaced else None


def _rows_named(vocab: Vocabulary, rest: str) -> int:
    """How many of the first words of ``rest`` name a table (the rows ranked), 0 when
    none do."""
    words = rest.split()
    # the rows end at the first word of the grammar ("cars by cost", "cars in 2020")
    words = words[: next((i for i, w in enumerate(words) if w.lower() in STOP_WORDS), len(words))]
    for size in range(min(3, len(words)), 0, -1):
        if vocab.tables_named([stem(w) for w in words[:size]]):
            return size
    return 0


def _measures(vocab: Vocabulary, question: str) -> list[Col]:
    """The number columns, keys aside, of the tables the question names."""
    stems = [stem(w) for w in re.findall(r"[A-Za-z]+", question)]
    named = {
        t.qualified for i in range(len(stems)) for t, _ in vocab.tables_named(stems[i : i + 1])
    }
    named |= {
        t.qualified for i in range(len(stems) - 1) for t, _ in vocab.tables_named(stems[i : i + 2])
    }
    return [
        c
        for c in vocab.columns
        if c.table.qualified in named and is_number(c.column.data_type) and not is_key(c)
    ]


async def gradable_meanings(
    embedder: PhraseEmbedder, vocab: Vocabulary, question: str
) -> tuple[Meaning, ...]:
    """The question's gradable phrase linked to the measure it names (see the module's
    docstring): its ``word`` the phrase ("most expensive", "weigh the most"), which no
    token of the question is, so no reader places it as a name; ``ranks`` "highest" or
    "lowest". None when there is no such phrase, no clear column or direction, or the
    embedder fails."""
    found = _gradable(vocab, question)
    if found is None:
        return ()
    m, form = found
    columns = _measures(vocab, question)
    if not columns:
        return ()
    word = m.group("word").lower()
    texts = [" ".join(vocab.column_words[c.key]) for c in columns]
    try:
        vectors = await embedder.embed_phrases([word, *texts])
    except Exception as exc:  # optional: the question stays refused
        _log.info(
            "gradable words skipped: the embedder failed",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return ()
    scores = vectors[1:] @ vectors[0]
    order = [int(i) for i in np.argsort(-scores)]
    best = order[0]
    if scores[best] < CLEAR_MIN or (
        len(order) > 1 and scores[best] - scores[order[1]] < CLEAR_MARGIN
    ):
        return ()
    most = m.group("most").lower() == "most"
    if form == "verb":
        high = most
    else:
        try:
            poles = await embedder.embed_phrases([f"high {texts[best]}", f"low {texts[best]}"])
        except Exception:  # optional: the question stays refused
            return ()
        lean = float(poles[0] @ vectors[0] - poles[1] @ vectors[0])
        if abs(lean) < POLE_MARGIN or (lean < 0 and not most):
            return ()  # no clear direction; "least cheap" says none a reader trusts
        high = (lean > 0) == most
    col = columns[best]
    return (
        Meaning(
            _said(m, form),
            col.table.qualified,
            col.column.name,
            round(float(scores[best]), 4),
            ranks="highest" if high else "lowest",
        ),
    )


def gradable_asked(vocab: Vocabulary, question: str, meanings: Sequence[Meaning]) -> str | None:
    """``question`` with its gradable phrase said as the column it ranks by ("What are
    the 5 most expensive cars?" -> "What are the 5 cars with the highest cost?"); None
    when it has none, or no meaning was found for it."""
    found = _gradable(vocab, question)
    if found is None:
        return None
    m, form = found
    said = _said(m, form)
    meaning = next((x for x in meanings if x.word == said and x.ranks and x.column), None)
    if meaning is None:
        return None
    noun = " ".join(name_words(meaning.column))
    if form != "adjective":
        tail = question[max(m.end("most"), m.end("word")) :]
        return f"{question[: m.start()]}have the {meaning.ranks} {noun}{tail}"
    rest = m.group("rest").split()
    rows = rest[: _rows_named(vocab, m.group("rest"))]
    # where the rows end in the question: after the first words of ``rest``
    kept = re.match(r"\s*" + r"\s+".join(map(re.escape, rows)), question[m.start("rest") :])
    if kept is None:
        return None
    after = question[m.start("rest") + kept.end() :]
    by = _BY.match(after)
    if by is not None:
        said_stems = {stem(w) for w in by.group("said").split()}
        if said_stems <= {stem(w) for w in name_words(meaning.column)}:
            after = after[by.end() :]
    lead = question[m.start() : m.start("most")]
    said_rows = " ".join(rows)
    return f"{question[: m.start()]}{lead}{said_rows} with the {meaning.ranks} {noun}{after}"


def _said(m: re.Match[str], form: str) -> str:
    """The gradable phrase as a meaning's word: "most expensive", "weigh the most"."""
    word, most = m.group("word").lower(), m.group("most").lower()
    return f"{word} the {most}" if form == "verb" else f"{most} {word}"
