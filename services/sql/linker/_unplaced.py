"""A content noun the schema names by another word, linked by meaning with a margin:
"purchase" is ``sales``, "signups" is ``customers``, "money" is ``transactions.amount``.

:func:`~services.sql.linker._meanings.find_meanings` links a word only when a name is
very close to it (:data:`~services.sql.linker._meanings.MEANING_MIN`) among every name of
the catalog; a noun a schema spells with another word sits lower than that, and the
question is refused naming the noun and its nearest names. This is the last reading,
tried only when every other one refused and on the nouns that refusal could not place:
each is linked to the element the question embedder puts clearly nearest, at least
:data:`~services.sql.linker._gradable.CLEAR_MIN` alike and
:data:`~services.sql.linker._gradable.CLEAR_MARGIN` ahead of the next element, where the elements are
the tables the question's other words already place and the tables they join to
directly ("customers who made a purchase": the purchase is a row of ``sales``, which
refers to ``customers``), all tables when they place none, and those tables' number and
text columns (keys aside: a noun names what is stored, not an identifier). Only a word
that can be a common noun is linked: a proper name is a stored value, and a superlative,
a participle or a verb names a rank or a condition (:func:`common_noun`). A near tie links nothing, and the refusal names both; the word linked is
said in the interpretation ("'purchase' read as sales").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from services.sql.catalog import TEXT_TYPES, is_number
from services.sql.linker._context import Meaning
from services.sql.linker._gradable import CLEAR_MARGIN, CLEAR_MIN
from services.sql.linker._lookup import named_tables
from services.sql.linker._meanings import PhraseEmbedder, names_of
from services.sql.linker._plan import is_key
from services.sql.linker._vocabulary import Vocabulary
from services.sql.words import tokenize

_log = logging.getLogger("tandem.sql.meanings")

# Measured with the real model on the study halves' refusals (ISSUE-45, s59): the right
# elements sat 0.51 to 0.73 and 0.16 to 0.20 ahead ("origin" ``singer.country``,
# "purchase" ``sales``); the wrong ones never 0.08 ahead ("signups" ``customers.email``
# 0.50 but 0.06 ahead, "rate" a transaction's price 0.54 but 0.04 ahead): the setting a
# gradable word's measure is linked by (``CLEAR_MIN``, ``CLEAR_MARGIN``).
_MAX_WORDS = 3


async def unplaced_meanings(
    embedder: PhraseEmbedder,
    vocab: Vocabulary,
    question: str,
    words: Sequence[str],
    linked: Sequence[Meaning] = (),
) -> tuple[Meaning, ...]:
    """``words`` (the nouns a refusal could not place) each linked to the element the
    embedder puts clearly nearest among the question's tables (see the module's
    docstring); a word with no clear element, or one ``linked`` already links, is left
    out. Empty when the embedder fails (the question stays refused)."""
    words = list(dict.fromkeys(w.lower() for w in words if w and common_noun(question, w)))
    words = [w for w in words if not any(m.word == w for m in linked)]
    if not words or len(words) > _MAX_WORDS:
        return ()
    try:
        names = await names_of(embedder, vocab)
        vectors = await embedder.embed_phrases(words)
    except Exception as exc:  # optional: the question stays refused
        _log.info(
            "unplaced nouns skipped: the embedder failed",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        return ()
    placed = {t.qualified for t in named_tables(vocab, tokenize(question))}
    keep = placed | {e.other(t) for t in placed for e in vocab.graph.edges_of(t)}
    keep = keep or {t.qualified for t in vocab.catalog.tables}
    elements = [
        i
        for i, (table, column) in enumerate(names.labels)
        if table in keep and (not column or _stored(vocab, table, column))
    ]
    found = []
    for word, vector in zip(words, vectors, strict=True):
        scores = names.vectors @ vector
        ranked = sorted(elements, key=lambda i: -float(scores[i]))
        if not ranked:
            continue
        best = float(scores[ranked[0]])
        runner = float(scores[ranked[1]]) if len(ranked) > 1 else -1.0
        if best < CLEAR_MIN or best - runner < CLEAR_MARGIN:
            continue
        table, column = names.labels[ranked[0]]
        found.append(Meaning(word, table, column, round(best, 4)))
    return tuple(found)


_NOT_NOUN = re.compile(r"(?:est|ing|ed|ly)$")
_VERB_BEFORE = frozenset(
    "do does did to can could will would should may might must not never who".split()
)


def common_noun(question: str, word: str) -> bool:
    """Whether the word can be a common noun as the question writes it: not capitalised
    inside the sentence (a proper name, "Gmail", is a stored value, never a table or a
    column), and not with the ending of a superlative, a participle or an adverb
    ("coldest", "weighing", "produced", "recently"), which name a condition or a rank,
    not an element."""
    if _NOT_NOUN.search(word.lower()):
        return False
    for m in re.finditer(rf"\b{re.escape(word)}\b", question, re.IGNORECASE):
        before = question[: m.start()].rstrip()
        if m.group(0)[:1].isupper() and before and before[-1] not in ".?!":
            return False
        if before.split()[-1:] and before.split()[-1].lower() in _VERB_BEFORE:
            return False  # "to fund", "did receive": a verb right after its auxiliary
    return True


def _stored(vocab: Vocabulary, table: str, column: str) -> bool:
    """A number or text column that is not a key."""
    col = next(
        (c for c in vocab.columns if c.table.qualified == table and c.column.name == column),
        None,
    )
    if col is None or is_key(col):
        return False
    return is_number(col.column.data_type) or col.column.data_type.startswith(TEXT_TYPES)
