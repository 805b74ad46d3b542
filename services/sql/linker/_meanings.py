"""Meanings: a word no table or column name spells, linked to the name closest to it in
meaning ("nation" to ``singer.country``, "store" to ``shop``) by the question embedder
the SQL service already has (the embedding service's model).

Only the words no mention covers are embedded, and only for a question the reading by
names refused (most questions cost nothing here); every table and column name is
embedded once per catalog. A word
is linked when its closest name is at least :data:`MEANING_MIN` alike and ahead of the
next different name by :data:`MEANING_MARGIN`; a near tie is no meaning. Every word
linked this way is said in the interpretation, so a reader sees what was assumed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from services.sql.linker._agents import agent_asked
from services.sql.linker._context import Meaning
from services.sql.linker._gradable import gradable_meanings
from services.sql.linker._lookup import named_tables
from services.sql.linker._mentions import chart
from services.sql.linker._vocabulary import Vocabulary
from services.sql.linker.clauses import needs_a_name
from services.sql.words import tokenize

_log = logging.getLogger("tandem.sql.meanings")

# Set on the development sets: single words and short names sit lower than sentences.
MEANING_MIN = 0.65
MEANING_MARGIN = 0.08
_MAX_WORDS = 8

Vectors = npt.NDArray[np.float32]


class PhraseEmbedder(Protocol):
    """Embeds short texts (words, names) as queries, all with one model."""

    async def embed_phrases(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order; raises when the embedder is unavailable."""
        ...


class _Names:
    """Every table and column name of one catalog, as words and as vectors."""

    def __init__(self, labels: list[tuple[str, str]], vectors: Vectors) -> None:
        self.labels = labels  # (qualified table, column or "")
        self.vectors = vectors


async def find_meanings(
    embedder: PhraseEmbedder, vocab: Vocabulary, question: str
) -> tuple[Meaning, ...]:
    """The question's unplaced words linked by meaning; none when every word is placed,
    when the embedder fails (the question is then read by names alone), or when no
    word is close enough to one name. The verb of a "who <verb> the <noun>" question is
    linked too, to the column that says who did it (``_agents``), and a gradable phrase
    ("most expensive") to the measure it ranks by (``_gradable``)."""
    found = list(await _word_meanings(embedder, vocab, question))
    found += await gradable_meanings(embedder, vocab, question)
    if not any(m.word == (agent_asked(question) or ("",))[0] for m in found):
        agent = await _agent_meaning(embedder, vocab, question)
        if agent is not None:
            found.append(agent)
    return tuple(found)


async def _word_meanings(
    embedder: PhraseEmbedder, vocab: Vocabulary, question: str
) -> tuple[Meaning, ...]:
    found_chart = chart(vocab, question)
    words = list(
        dict.fromkeys(
            t.low
            for i, t in enumerate(found_chart.tokens)
            if needs_a_name(vocab, t) and not found_chart.covering(i)
        )
    )
    if not words or len(words) > _MAX_WORDS:
        return ()
    try:
        names = await names_of(embedder, vocab)
        vectors = await embedder.embed_phrases(words)
    except Exception as exc:  # the embedder is optional: read by names alone
        _log.info(
            "meanings skipped: the embedder failed",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return ()
    found = []
    for word, vector in zip(words, vectors, strict=True):
        meaning = _closest(word, names, names.vectors @ vector)
        if meaning is not None:
            found.append(meaning)
    return tuple(found)


async def _agent_meaning(
    embedder: PhraseEmbedder, vocab: Vocabulary, question: str
) -> Meaning | None:
    """The column "who <verb>" means among the columns of the tables the rest of the
    question names: at least :data:`NEAR_MIN` alike and :data:`MEANING_MARGIN` ahead of
    the next column of those tables (a near tie is no agent); None otherwise, or when
    the embedder fails (the question is then refused naming the verb)."""
    asked = agent_asked(question)
    if asked is None:
        return None
    verb, rest = asked
    tables = {t.qualified for t in named_tables(vocab, tokenize(rest))}
    if not tables:
        return None
    try:
        names = await names_of(embedder, vocab)
        vector = (await embedder.embed_phrases([f"who {verb}"]))[0]
    except Exception:  # the embedder is optional: refused naming the verb
        return None
    scored = sorted(
        (
            (float(score), label)
            for score, label in zip(names.vectors @ vector, names.labels, strict=True)
            if label[0] in tables and label[1]
        ),
        reverse=True,
    )
    if not scored or scored[0][0] < NEAR_MIN:
        return None
    if len(scored) > 1 and scored[0][0] - scored[1][0] < MEANING_MARGIN:
        return None
    score, (table, column) = scored[0]
    return Meaning(verb, table, column, round(score, 4))


# A name this alike, and no further behind the closest, is worth suggesting to a person
# (a refusal's "nearest"), not linking: set on the development sets' refusals, where
# short names ("id") sit near 0.47 to any word.
NEAR_MIN = 0.5
NEAR_SPREAD = 0.1


async def nearest_names(
    embedder: PhraseEmbedder, vocab: Vocabulary, words: Sequence[str], *, top: int = 3
) -> dict[str, tuple[tuple[str, str, float], ...]]:
    """For each word, the table and column names closest to it in meaning (qualified
    table, column or "", similarity), closest first, at least :data:`NEAR_MIN` alike and
    within :data:`NEAR_SPREAD` of the closest: what a refusal offers a person to choose
    from, so there is no margin to clear as a link has. Empty when the embedder fails
    (the refusal then names neighbours in spelling)."""
    words = list(dict.fromkeys(w for w in words if w))[:_MAX_WORDS]
    if not words:
        return {}
    try:
        names = await names_of(embedder, vocab)
        vectors = await embedder.embed_phrases(words)
    except Exception as exc:  # suggestions are optional
        _log.info(
            "nearest names skipped: the embedder failed",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return {}
    found: dict[str, tuple[tuple[str, str, float], ...]] = {}
    for word, vector in zip(words, vectors, strict=True):
        scores = names.vectors @ vector
        order = [int(i) for i in np.argsort(-scores)[:top]]
        floor = max(NEAR_MIN, float(scores[order[0]]) - NEAR_SPREAD)
        found[word] = tuple(
            (*names.labels[i], round(float(scores[i]), 4)) for i in order if scores[i] >= floor
        )
    return found


def _closest(word: str, names: _Names, scores: Vectors) -> Meaning | None:
    """The name clearly closest to the word: at least :data:`MEANING_MIN` alike and
    :data:`MEANING_MARGIN` ahead of the closest name of another table (a table and its
    own column close together is the table: "firms" is ``companies``, not its
    ``industry``); or of another column of the same table."""
    order = [int(i) for i in np.argsort(-scores)]
    best = order[0]
    table, column = names.labels[best]
    own = names.labels.index((table, ""))
    if column and scores[best] - scores[own] < MEANING_MARGIN:
        best, column = own, ""
    rivals = [
        i
        for i in order
        if names.labels[i][0] != table or (column and names.labels[i] != (table, column)
                                           and names.labels[i][1])
    ]  # fmt: skip
    margin = scores[best] - (scores[rivals[0]] if rivals else -1.0)
    if scores[best] < MEANING_MIN or margin < MEANING_MARGIN:
        return None
    return Meaning(word, table, column, round(float(scores[best]), 4))


async def names_of(embedder: PhraseEmbedder, vocab: Vocabulary) -> _Names:
    """The catalog's names and their vectors, embedded once per vocabulary."""
    cached = vocab.word_memo.get(("meaning names", ""))
    if isinstance(cached, _Names):
        return cached
    labels: list[tuple[str, str]] = []
    texts: list[str] = []
    for table in vocab.catalog.tables:
        labels.append((table.qualified, ""))
        texts.append(" ".join(vocab.table_words[table.qualified]))
        for column in table.columns:
            labels.append((table.qualified, column.name))
            texts.append(" ".join(vocab.column_words[(table.qualified, column.name)]))
    names = _Names(labels, await embedder.embed_phrases(texts))
    vocab.remember(("meaning names", ""), names)
    return names
