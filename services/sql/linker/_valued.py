"""A noun that says a stored value in other words, read as that value by meaning:
"women" is ``patients.gender = 'Female'``, "men" is ``'Male'``.

The linker finds a value only where the question spells it (or a word of it); a noun a
column's few stored values say in other words is refused ("could not place 'women'").
This is the last reading, tried only when every other one refused and on the nouns that
refusal could not place (as :mod:`~services.sql.linker._unplaced` is): each is compared
by the question embedder with the sampled values of the text columns of the tables the
question's other words place (and the tables they join to directly; every table when
they place none), keys aside, and read as the one value clearly nearest — as alike as
a name must be to be linked catalog-wide (:data:`~services.sql.linker._meanings.MEANING_MIN`)
and :data:`~services.sql.linker._meanings.MEANING_MARGIN` ahead of every other value of
every such column, so a word two values or two columns could hold links nothing. The
floor is the catalog-wide one, not the lower one an element of the question's tables is
linked by: with the real model "women" sits 0.69 from 'Female' and "men" 0.67 from
'Male', while "adults" sits 0.54 from 'Male' and 0.11 ahead of 'Female' — no value it
says. Only sampled
values are candidates: a column with few distinct values is a category a word can name;
the value index of proper names (``known_values``) is never read by meaning. The value
is said where the word was and the question read again, so the linker places it as it
places any stored value; the interpretation says which word was read as which value.

A noun for a kind or a member of a category is no name of it: "hospitals" sits 0.69
from ``industry = 'Healthcare'`` and "banks" 0.67 from 'Financial Services' — as near
as "women" to 'Female' — but a count of banks is not the count of financial-services
companies. A name of a value says its column too ("women" is a gender: 0.63 from the
column's words "gender", "men" 0.58), while a kind of row says its own kind and not the
column's ("hospitals" 0.44 from "industry", "banks" 0.37, "schools" 0.41): the word must
also sit at least :data:`~services.sql.linker._gradable.CLEAR_MIN` from the words of the
value's column, the floor a word links a column of the question's tables by
(:func:`_names_its_column`). A column whose name says nothing of its values ("type",
"category", "sex" 0.42 from "women") then reads nothing by meaning: refused, as before.

The values' vectors are part of the catalog's load, not of any question: every
question this rule reaches is one a reading refused, and embedding up to
:data:`_MAX_VALUES` values on a refusal was CPU and an embedding round trip per refused
question; embedded in the background from the first question instead, a question had to
wait for them or step aside, so the same question was answered or refused by how far a
background task had got (s65: up to 9 s of waiting under load). :meth:`ValueVectors.load`
embeds the candidate values of a whole catalog, and the words of their columns, while the
catalog loads (``services.sql.catalog.CatalogCache.prepare_with``): the catalog is served
only once they are in, so every question of a load reads the same vectors. The load is
bounded by work, not by seconds: at most :data:`LOAD_TEXTS_MAX` texts, taken table by
table in the catalog's order, a table whose texts no longer fit skipped whole (a wide
warehouse's look-alike copies store the same values, so they add few texts). A question
whose candidates hold a text the load did not embed reads nothing by this rule, on every
load alike. The question's own words are embedded with the question (one call of at most
:data:`_MAX_WORDS` words, held, so a refused question asked again asks the embedder
nothing). A batch the embedder fails is asked again a few times (:data:`_ATTEMPTS`: a
service busy at start); an embedder that still fails makes the rule step aside (the
question stays refused, as without it, its reason saying the values' meanings are not
loaded yet: :data:`PENDING`, where the rule had a word and values to read with them,
:func:`has_candidates`), and the catalog, served without the vectors, has them
embedded again in the background (``CatalogCache``), never by a question.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.sql.catalog import TEXT_TYPES, Catalog
from services.sql.linker._gradable import CLEAR_MIN
from services.sql.linker._lookup import named_tables
from services.sql.linker._meanings import MEANING_MARGIN, MEANING_MIN, PhraseEmbedder, Vectors
from services.sql.linker._plan import is_key
from services.sql.linker._unplaced import common_noun
from services.sql.linker._vocabulary import Col, Vocabulary, column_words
from services.sql.words import tokenize

_log = logging.getLogger("tandem.sql.meanings")

_MAX_WORDS = 3
# more candidates than a few categorical columns hold is no question of which value a
# word means: nothing is read
_MAX_VALUES = 200
# the most texts (values and the words of their columns) one catalog load embeds: 2,000
# is what s64 embedded in the background for a whole catalog; a catalog holding more
# (a wide warehouse) has its first tables' in the catalog's order
LOAD_TEXTS_MAX = 2_000
# the most question words one load keeps; past it they start again
_WORDS_MAX = 20_000
_BATCH = 32
# each batch is asked this many times before the load gives up, waiting twice as long
# before each try: the embedding service's 2 s call deadline is missed while every
# database's load (and a stack's document ingestion) asks it at once at start
_ATTEMPTS = 3
_RETRY_S = 0.5


# What a refusal adds when the load's vectors are not in (its embedding failed and is
# being tried again in the background): the question may read otherwise once they are.
PENDING = (
    "the meanings of the stored values are still being loaded, so a word that says a "
    "stored value in other words could not be read; ask again shortly"
)


class ValueVectors:
    """The vectors of one catalog load: its candidate values' and their columns' words,
    embedded by :meth:`load` while the catalog loads, and the words questions asked about
    since. The model gives a text one vector whichever column stores it or question says
    it, so every catalog of the load (a narrowed one, a principal's view) reads them."""

    def __init__(self) -> None:
        self.by_text: dict[str, Vectors] = {}
        self.words: dict[str, Vectors] = {}
        self.ready = False  # the load's texts are all in ``by_text``

    async def load(self, embedder: PhraseEmbedder, catalog: Catalog) -> bool:
        """Embed the catalog's candidate values and their columns' words (see the
        module's docstring), batch after batch; True when all are in. A failure keeps
        nothing (the rule reads nothing on this load until it is loaded again)."""
        texts = load_texts(catalog)
        found: dict[str, Vectors] = {}
        for begin in range(0, len(texts), _BATCH):
            batch = texts[begin : begin + _BATCH]
            for attempt in range(_ATTEMPTS):
                try:
                    vectors = await embedder.embed_phrases(batch)
                    if len(vectors) != len(batch):
                        raise ValueError("the embedder returned another number of vectors")
                except Exception as exc:
                    if attempt + 1 == _ATTEMPTS:
                        _log.info(
                            "value vectors not kept: the embedder failed",
                            extra={"fields": {"error.type": type(exc).__name__}},
                        )
                        return False
                    # a service busy at start (every database's load at once) answers later
                    await asyncio.sleep(_RETRY_S * 2**attempt)
                else:
                    found.update(zip(batch, vectors, strict=True))
                    break
        self.by_text, self.ready = found, True
        return True

    async def words_of(self, embedder: PhraseEmbedder, words: Sequence[str]) -> Vectors:
        """One vector per word, in order: held ones at once, the rest embedded (one call,
        within the asking request); raises as the embedder does."""
        wanted = [w for w in dict.fromkeys(words) if w not in self.words]
        if wanted:
            vectors = await embedder.embed_phrases(wanted)
            if len(vectors) != len(wanted):
                raise ValueError("the embedder returned another number of vectors")
            if len(self.words) + len(wanted) > _WORDS_MAX:
                self.words.clear()
            self.words.update(zip(wanted, vectors, strict=True))
        return np.stack([self.words[w] for w in words])


def load_texts(catalog: Catalog) -> list[str]:
    """What one load embeds: every candidate value of the catalog and the words of its
    column, table by table in the catalog's order, at most :data:`LOAD_TEXTS_MAX` distinct
    texts; a table whose new texts do not fit in what is left is skipped whole, and the
    next tables are still taken (the same catalog always gives the same texts)."""
    taken: dict[str, None] = {}
    for table in catalog.tables:
        words = column_words(table)
        own: dict[str, None] = {}
        for column in table.columns:
            values = _column_candidates(Col(table, column))
            if values:
                own.update(dict.fromkeys(values))
                own[" ".join(words[column.name])] = None
        new = [t for t in own if t not in taken]
        if len(taken) + len(new) <= LOAD_TEXTS_MAX:
            taken.update(dict.fromkeys(new))
    return list(taken)


@dataclass(frozen=True)
class ValueMeaning:
    """A word read as a stored value: the question embedder put them ``similarity`` alike."""

    word: str
    table: str
    column: str
    value: str
    similarity: float

    def text(self) -> str:
        return (
            f"{self.word!r} read as {self.table.rsplit('.', 1)[-1]}.{self.column} = "
            f"'{self.value}' (similarity {self.similarity:.2f})"
        )


async def value_meanings(
    embedder: PhraseEmbedder,
    vocab: Vocabulary,
    question: str,
    words: Sequence[str],
    memory: ValueVectors | None,
) -> tuple[ValueMeaning, ...]:
    """``words`` (the nouns a refusal could not place) each read as the sampled value
    the embedder puts clearly nearest (see the module's docstring); a word with no clear
    value is left out. ``memory``: the vectors of the load ``vocab``'s catalog comes
    from; nothing is read when there is none (a catalog no load prepared), when it holds
    not every candidate's vector (beyond the load's bound, or its embedding failed), or
    when the embedder fails on the words (the question stays refused)."""
    if memory is None or not memory.ready:
        return ()
    words, candidates = _to_read(vocab, question, words)
    if not candidates:
        return ()
    columns = _column_texts(vocab, candidates)
    texts = [*(v for _, _, v in candidates), *columns.values()]
    if any(t not in memory.by_text for t in texts):
        # a table past the load's bound: the same on every load of this catalog
        return ()
    try:
        said = await memory.words_of(embedder, words)
    except Exception as exc:  # optional: the question stays refused
        _log.info(
            "value meanings skipped: the embedder failed",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return ()
    values = np.stack([memory.by_text[v] for _, _, v in candidates])
    column_of = {key: memory.by_text[text] for key, text in columns.items()}
    found = []
    for i, word in enumerate(words):
        scores = values @ said[i]
        ranked = sorted(range(len(candidates)), key=lambda j: -float(scores[j]))
        best, runner = float(scores[ranked[0]]), float(scores[ranked[1]])
        value_said = candidates[ranked[0]][2].lower()
        if best < MEANING_MIN or best - runner < MEANING_MARGIN or value_said == word:
            continue
        table, column, value = candidates[ranked[0]]
        if not _names_its_column(said[i], column_of[(table, column)]):
            continue
        found.append(ValueMeaning(word, table, column, value, round(best, 4)))
    return tuple(found)


def has_candidates(vocab: Vocabulary, question: str, words: Sequence[str]) -> bool:
    """Whether the rule has a word and values to compare it with, before any vector:
    only then could the load's vectors, once in, change the refusal, so only then does
    it say the values' meanings are still being loaded (:data:`PENDING`). A refusal whose
    unplaced words are no common nouns, or whose tables hold no few stored values to
    read, is what it is on every load."""
    return bool(_to_read(vocab, question, words)[1])


def _to_read(
    vocab: Vocabulary, question: str, words: Sequence[str]
) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The common nouns of ``words`` the rule reads and the candidate values it compares
    them with (those of the tables the question's other words place and the tables they
    join to directly; every table when they place none); no candidates when there is no
    such noun, more nouns than it reads, or not two to :data:`_MAX_VALUES` values."""
    words = list(dict.fromkeys(w.lower() for w in words if w and common_noun(question, w)))
    if not words or len(words) > _MAX_WORDS:
        return words, []
    placed = {t.qualified for t in named_tables(vocab, tokenize(question))}
    keep = placed | {e.other(t) for t in placed for e in vocab.graph.edges_of(t)}
    candidates = _candidates(vocab, keep or None)
    if len(candidates) < 2 or len(candidates) > _MAX_VALUES:
        return words, []
    return words, candidates


def _candidates(vocab: Vocabulary, tables: set[str] | None) -> list[tuple[str, str, str]]:
    """(table, column, value) for each candidate value (:func:`_column_candidates`) of
    the columns of ``tables`` (every table when None)."""
    return [
        (col.table.qualified, col.column.name, value)
        for col in vocab.columns
        if tables is None or col.table.qualified in tables
        for value in _column_candidates(col)
    ]


def _column_candidates(col: Col) -> tuple[str, ...]:
    """The sampled values with a letter of a text column that is no key."""
    if not col.column.data_type.startswith(TEXT_TYPES) or is_key(col):
        return ()
    return tuple(v for v in dict.fromkeys(col.column.sample_values) if re.search(r"[A-Za-z]", v))


def _column_texts(
    vocab: Vocabulary, candidates: Sequence[tuple[str, str, str]]
) -> dict[tuple[str, str], str]:
    """The words of each candidate value's column, as the linker names it, by column."""
    return {
        (table, column): " ".join(vocab.column_words[(table, column)])
        for table, column, _ in candidates
    }


def _names_its_column(word: Vectors, column: Vectors) -> bool:
    """Whether the word says the value's column as well as the value: a name of the
    value ("women": gender), not a kind of row that falls under it ("hospitals",
    "banks": no industry). See the module's docstring for the measured similarities."""
    return float(word @ column) >= CLEAR_MIN


def said_as_values(question: str, meanings: Sequence[ValueMeaning]) -> str:
    """The question with each word said as the stored value it was read as."""
    for m in meanings:
        # the value as a literal replacement: a backslash in it is no group reference
        question = re.sub(
            rf"\b{re.escape(m.word)}\b",
            m.value.replace("\\", "\\\\"),
            question,
            flags=re.IGNORECASE,
        )
    return question
