"""A noun that says a stored value in other words, read as that value by meaning (issue
45, s63 women): "women" is ``gender = 'Female'`` and "men" ``'Male'`` — the value the real
model puts clearly nearest among the sampled values of the question's tables, as alike as
a name linked catalog-wide — and the interpretation says so. A word near no value ("adults",
0.54 from 'Male') or near two ("persons") reads nothing, and the question stays refused.
The follow-up "women only" after a count per insurance type is read through the same
pipeline (``conversation._conditions`` asks the linker), so it is this rule's too."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np
import pytest

from services.embedding import Embedder
from services.sql.ask import SchemaView
from services.sql.ask._offline import OfflineGenerator
from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo
from services.sql.linker import Vocabulary, value_meanings
from tests.unit.sql.schemas import col

TODAY = date(2026, 11, 30)

CLINIC = Catalog(
    "clinic",
    (
        TableInfo(
            "public",
            "patients",
            columns=(
                ColumnInfo("patient_id", "integer", False),
                col("first_name", "text", ("Ann", "Bob")),
                col("gender", "text", ("Female", "Male")),
                col("ins_type", "text", ("private", "medicare", "medicaid")),
            ),
            primary_key=("patient_id",),
        ),
    ),
)
VIEW = SchemaView("clinic", CLINIC, CLINIC.tables, "", TODAY)


class _Phrases:
    """The real model behind the linker's phrase embedder (queries, as served)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._embedder.embed_queries(list(texts)), dtype=np.float32)


@pytest.mark.parametrize(("word", "value"), [("women", "Female"), ("men", "Male")])
async def test_a_noun_saying_a_stored_value_is_read_as_it(
    real_embedder: Embedder, word: str, value: str
) -> None:
    reading = await OfflineGenerator(_Phrases(real_embedder)).reading(
        f"How many patients by insurance type are {word}?", VIEW
    )
    assert reading.sql == (
        "SELECT t0.ins_type AS ins_type, COUNT(*) AS count FROM public.patients AS t0 "
        f"WHERE (t0.gender = '{value}') GROUP BY t0.ins_type"
    )
    assert f"'{word}' read as patients.gender = '{value}'" in reading.interpretation


@pytest.mark.parametrize("word", ["adults", "persons"])
async def test_a_word_near_no_one_value_reads_nothing_and_stays_refused(
    real_embedder: Embedder, word: str
) -> None:
    question = f"How many patients are {word}?"
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    assert await value_meanings(_Phrases(real_embedder), vocab, question, [word]) == ()
    reading = await OfflineGenerator(_Phrases(real_embedder)).reading(question, VIEW)
    assert not reading.sql
    assert word in reading.reason


async def test_a_proper_name_is_never_read_as_a_value_by_meaning(
    real_embedder: Embedder,
) -> None:
    """A capitalised word inside the sentence is a name the value index holds or not;
    never a category said in other words."""
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    found = await value_meanings(
        _Phrases(real_embedder), vocab, "How many patients are Women?", ["Women"]
    )
    assert found == ()
