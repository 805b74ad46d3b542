"""Words no name spells, linked by meaning: only the words no reading by names places are
embedded, a word is linked to the one name clearly closest to it, a near tie or a far
name links nothing, a failing embedder only leaves the question to names, and every word
so linked is said in the interpretation."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np
import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import (
    MEANING_MIN,
    NEAR_MIN,
    QuestionLinker,
    Vocabulary,
    find_meanings,
    nearest_names,
)
from services.sql.verify import verify_statement

SINGERS = Catalog(
    "music",
    (
        TableInfo(
            "public",
            "singer",
            columns=(
                ColumnInfo("singer_id", "integer", False),
                ColumnInfo("name", "text", True),
                ColumnInfo("country", "text", True),
                ColumnInfo("age", "integer", True),
            ),
            primary_key=("singer_id",),
        ),
    ),
)
VOCABULARY = Vocabulary(SINGERS, JoinGraph(SINGERS))


class FakeEmbedder:
    """Unit vectors by text: each known text on its own axis, a word on a mix of them."""

    def __init__(self, words: dict[str, dict[str, float]]) -> None:
        self.axes = ["singer", "singer id", "name", "country", "age"]
        self.words = words
        self.asked: list[list[str]] = []

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.append(list(texts))
        rows = []
        for text in texts:
            row = np.zeros(len(self.axes), dtype=np.float32)
            for axis, weight in self.words.get(text, {text: 1.0}).items():
                if axis in self.axes:
                    row[self.axes.index(axis)] = weight
            norm = float(np.linalg.norm(row))
            rows.append(row / norm if norm else row)
        return np.array(rows)


async def test_a_word_no_name_spells_is_linked_to_the_clearly_closest_name() -> None:
    embedder = FakeEmbedder({"nation": {"country": 0.9, "name": 0.2}})
    found = await find_meanings(embedder, VOCABULARY, "What is the nation of each singer?")
    assert [(m.word, m.table, m.column) for m in found] == [("nation", "public.singer", "country")]
    assert found[0].similarity >= MEANING_MIN
    # only the unplaced word was embedded, beside the names (once per vocabulary)
    assert ["nation"] in embedder.asked
    linked = QuestionLinker(
        "What is the nation of each singer?",
        VOCABULARY,
        date(2026, 11, 24),
        meanings=found,
        check=verify_statement,
    ).link()
    assert "t0.country" in linked.sql
    assert "'nation' read as singer.country" in linked.explanation


@pytest.mark.parametrize(
    "mix",
    [
        {"country": 0.5, "age": 0.5},  # a near tie between two names: no meaning
        {"country": 0.4, "name": 0.3, "age": 0.3, "singer": 0.3, "singer id": 0.3},  # far
    ],
)
async def test_a_near_tie_or_a_far_name_links_nothing(mix: dict[str, float]) -> None:
    found = await find_meanings(FakeEmbedder({"nation": mix}), VOCABULARY, "List each nation.")
    assert found == ()


async def test_nothing_is_embedded_when_every_word_is_placed() -> None:
    embedder = FakeEmbedder({})
    assert await find_meanings(embedder, VOCABULARY, "What is the country of each singer?") == ()
    assert embedder.asked == []


async def test_a_failing_embedder_leaves_the_question_to_names() -> None:
    class Down:
        async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
            raise ConnectionError("down")

    assert await find_meanings(Down(), VOCABULARY, "What is the nation of each singer?") == ()


async def test_the_names_nearest_a_word_are_offered_closest_first_within_a_spread() -> None:
    """What a refusal suggests: names at least NEAR_MIN alike and close to the best, no
    margin needed (a near tie is two suggestions, not a link)."""
    embedder = FakeEmbedder({"origin": {"country": 0.55, "name": 0.5, "age": 0.45}})
    near = await nearest_names(embedder, VOCABULARY, ["origin"])
    assert [(table, column) for table, column, _ in near["origin"]] == [
        ("public.singer", "country"),
        ("public.singer", "name"),
    ]
    assert all(score >= NEAR_MIN for *_, score in near["origin"])
    assert await find_meanings(embedder, VOCABULARY, "List the origin of each singer.") == ()


async def test_a_failing_embedder_offers_no_names() -> None:
    class Down:
        async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
            raise ConnectionError("down")

    assert await nearest_names(Down(), VOCABULARY, ["origin"]) == {}
