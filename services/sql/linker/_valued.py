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

The values' vectors are paid for once per vocabulary (one catalog load, one principal's
view of it), not per question: every question this rule reaches is one a reading refused,
and embedding up to :data:`_MAX_VALUES` values again on each refusal was CPU and an
embedding round trip per refused question (the fault matrix's Ask ran past its deadline).
The catalog's values are embedded in the background when its first question with more
than :data:`_WAIT_RESERVE_S` left is asked (:meth:`ValueVectors.prefill`), in tasks no
question's deadline cancels; a question awaits only the batches holding its own words
and values, and one asked again asks the embedder nothing. Within a request, a question
waits for its vectors at most half of the time it has left and never into its last two
seconds (:data:`_WAIT_SHARE`, :data:`_WAIT_RESERVE_S`), then steps aside while they go
on being embedded for the next question; a request with less than that left starts no
embedding at all. An embedder that fails makes the rule step aside (the question stays
refused, as without it) and keeps nothing, so the next question asks again.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.common import remaining
from services.sql.catalog import TEXT_TYPES
from services.sql.linker._gradable import CLEAR_MIN
from services.sql.linker._lookup import named_tables
from services.sql.linker._meanings import MEANING_MARGIN, MEANING_MIN, PhraseEmbedder, Vectors
from services.sql.linker._plan import is_key
from services.sql.linker._unplaced import common_noun
from services.sql.linker._vocabulary import Vocabulary
from services.sql.words import tokenize

_log = logging.getLogger("tandem.sql.meanings")

_MAX_WORDS = 3
# more candidates than a few categorical columns hold is no question of which value a
# word means: nothing is embedded
_MAX_VALUES = 200
# the most vectors one vocabulary keeps (a catalog samples far fewer text values);
# past it the memory starts again, so no sequence of questions grows it without bound
_HELD_MAX = 20_000
# a catalog sampling at most this many candidate values has them all embedded in the
# background when its first question is asked; texts per embedding call
_PREFILL_MAX = 2_000
_BATCH = 32
# the most of a request's remaining time a question waits for the vectors it needs,
# and what it keeps for the rest of its reading (a request with less left never
# waits: a client's tight deadline, the router's last seconds)
_WAIT_SHARE = 0.5
_WAIT_RESERVE_S = 2.0
_MEMO_KEY = ("value vectors", "")


class ValueVectors:
    """The vectors embedded so far for one catalog load (one principal's view of it), by
    text: the sampled values this rule compares words with, and the words (a refused
    question asked again, as a person or a retrying client does, asks the embedder
    nothing). The model gives a text one vector whichever column stores it or question
    says it, so a narrowed catalog of the load shares them.

    Texts are embedded by one background task per call, batch after batch (never a
    burst of calls that queue every other question's embedding behind them), outside
    any request: not under the asking request's deadline, which outgoing calls inherit
    (``services.common.effective_timeout``), and never cancelled with it. A question cut
    off by its deadline still leaves the vectors for the next one, instead of each
    retry embedding the same values again and being cut off again (the fault matrix's
    Ask with retrieval killed). :meth:`prefill` starts the catalog's values when its
    first question is asked; a question waits only for the batches holding its own
    texts. A failed batch keeps nothing (the next question asks again)."""

    def __init__(self) -> None:
        self.by_text: dict[str, Vectors] = {}
        self._running: dict[str, tuple[asyncio.Future[Vectors], int]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._prefilled = False

    def prefill(self, embedder: PhraseEmbedder, vocab: Vocabulary) -> None:
        """Start embedding every candidate value of ``vocab``'s catalog (once per
        memory; nothing for a catalog sampling more than :data:`_PREFILL_MAX` of them,
        whose questions embed their own tables' values as they come). A request that
        could not wait for them starts nothing: the next one with time does."""
        if self._prefilled or not _may_wait():
            return
        self._prefilled = True
        candidates = _candidates(vocab, None)
        values = list(dict.fromkeys(v for _, _, v in candidates))
        if len(values) <= _PREFILL_MAX:
            texts = [*values, *_column_texts(vocab, candidates).values()]
            self._start(embedder, [t for t in dict.fromkeys(texts) if t not in self.by_text])

    async def embed(self, embedder: PhraseEmbedder, texts: Sequence[str]) -> Vectors:
        """One vector per text, in order: held ones at once, running ones awaited, the
        rest started and awaited; raises as the embedder does."""
        wanted = list(dict.fromkeys(texts))
        self._start(embedder, [t for t in wanted if t not in self.by_text])
        rows = {t: self.by_text[t] for t in wanted if t in self.by_text}
        waits = {t: self._running[t] for t in wanted if t not in rows}
        for text, (batch, index) in waits.items():
            # shielded: a question cancelled here leaves the batch to finish for others
            rows[text] = (await asyncio.shield(batch))[index]
        return np.stack([rows[t] for t in texts])

    def _start(self, embedder: PhraseEmbedder, texts: Sequence[str]) -> None:
        texts = [t for t in texts if t not in self._running]
        if not texts:
            return
        loop = asyncio.get_running_loop()
        batches: list[tuple[list[str], asyncio.Future[Vectors]]] = []
        for begin in range(0, len(texts), _BATCH):
            batch, future = texts[begin : begin + _BATCH], loop.create_future()
            # a failure nobody awaits is no "exception never retrieved" warning
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
            for index, text in enumerate(batch):
                self._running[text] = (future, index)
            batches.append((batch, future))
        # an empty context: no request's deadline, trace or principal rides along
        task = loop.create_task(self._fill(embedder, batches), context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fill(
        self, embedder: PhraseEmbedder, batches: list[tuple[list[str], asyncio.Future[Vectors]]]
    ) -> None:
        for batch, future in batches:
            try:
                vectors = await embedder.embed_phrases(batch)
                if len(vectors) != len(batch):
                    raise ValueError("the embedder returned another number of vectors")
            except Exception as exc:
                _log.info(
                    "value vectors not kept: the embedder failed",
                    extra={"fields": {"error.type": type(exc).__name__}},
                )
                future.set_exception(exc)
            else:
                if len(self.by_text) + len(batch) > _HELD_MAX:
                    self.by_text.clear()
                self.by_text.update(zip(batch, vectors, strict=True))
                future.set_result(vectors)
            finally:
                for text in batch:
                    if self._running.get(text, (None,))[0] is future:
                        del self._running[text]


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
    memory: ValueVectors | None = None,
) -> tuple[ValueMeaning, ...]:
    """``words`` (the nouns a refusal could not place) each read as the sampled value
    the embedder puts clearly nearest (see the module's docstring); a word with no clear
    value is left out. Empty when the embedder fails (the question stays refused).
    ``memory``: the catalog load's :class:`ValueVectors` (the vocabulary's own when
    none is given)."""
    words = list(dict.fromkeys(w.lower() for w in words if w and common_noun(question, w)))
    if not words or len(words) > _MAX_WORDS or not _may_wait():
        # no time to wait for any vector: nothing is started for a request that could
        # not use it (the router's last seconds, a client's tight deadline)
        return ()
    placed = {t.qualified for t in named_tables(vocab, tokenize(question))}
    keep = placed | {e.other(t) for t in placed for e in vocab.graph.edges_of(t)}
    candidates = _candidates(vocab, keep or None)
    if len(candidates) < 2 or len(candidates) > _MAX_VALUES:
        return ()
    held = memory if memory is not None else _memory_of(vocab)
    left = remaining()
    # within a request, waited for no longer than a share of what is left of it, and
    # not at all with little left: the question is then read as without the rule
    wait = None if left is None else max(min(left * _WAIT_SHARE, left - _WAIT_RESERVE_S), 0.0)
    columns = _column_texts(vocab, candidates)
    try:
        async with asyncio.timeout(wait):
            vectors = await held.embed(
                embedder, [*words, *(v for _, _, v in candidates), *columns.values()]
            )
    except TimeoutError:
        _log.info("value meanings skipped: the values are still being embedded")
        return ()
    except Exception as exc:  # optional: the question stays refused
        _log.info(
            "value meanings skipped: the embedder failed",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return ()
    values = vectors[len(words) : len(words) + len(candidates)]
    column_of = dict(zip(columns, vectors[len(words) + len(candidates) :], strict=True))
    found = []
    for i, word in enumerate(words):
        scores = values @ vectors[i]
        ranked = sorted(range(len(candidates)), key=lambda j: -float(scores[j]))
        best, runner = float(scores[ranked[0]]), float(scores[ranked[1]])
        said = candidates[ranked[0]][2].lower()
        if best < MEANING_MIN or best - runner < MEANING_MARGIN or said == word:
            continue
        table, column, value = candidates[ranked[0]]
        if not _names_its_column(vectors[i], column_of[(table, column)]):
            continue
        found.append(ValueMeaning(word, table, column, value, round(best, 4)))
    return tuple(found)


def _candidates(vocab: Vocabulary, tables: set[str] | None) -> list[tuple[str, str, str]]:
    """(table, column, value) for each sampled value with a letter of the text columns
    (keys aside) of ``tables`` (every table when None)."""
    return [
        (col.table.qualified, col.column.name, value)
        for col in vocab.columns
        if (tables is None or col.table.qualified in tables)
        and col.column.data_type.startswith(TEXT_TYPES)
        and not is_key(col)
        for value in dict.fromkeys(col.column.sample_values)
        if re.search(r"[A-Za-z]", value)
    ]


def _may_wait() -> bool:
    """Whether the current request (if any) has more than :data:`_WAIT_RESERVE_S` left:
    one with less never waits for value vectors, so it starts no embedding either. A
    burst of such requests (the fault matrix's 1.5 s Asks, the router's last seconds)
    embedding a catalog's values in the background took the CPU their own answers
    needed: 8 to 31 of them ran past their deadline where main had 4 to 12."""
    left = remaining()
    return left is None or left > _WAIT_RESERVE_S


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


def _memory_of(vocab: Vocabulary) -> ValueVectors:
    held = vocab.word_memo.get(_MEMO_KEY)
    if isinstance(held, ValueVectors):
        return held
    fresh = ValueVectors()
    vocab.remember(_MEMO_KEY, fresh)
    return fresh


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
