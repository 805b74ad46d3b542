"""Rows ranked by a gradable word (issue 45, s59): "the 2 most expensive boats" ranks
the boats by the number column the real model puts clearly nearest the adjective, in
the direction it puts the adjective nearest ("high price"); a verb ("weigh the most")
ranks by its column in the direction "most" or "least" says. A near tie of columns, or
an adjective the model leans neither way ("affordable"), leaves the question refused,
as does a linker with no meanings (no embedder)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np
import pytest
import sqlglot
from sqlglot import exp

from services.embedding import Embedder
from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, find_meanings
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import col

TODAY = date(2026, 11, 30)

MARINA = Catalog(
    "marina",
    (
        TableInfo(
            "public",
            "boats",
            columns=(
                ColumnInfo("boat_id", "integer", False),
                col("name", "text", ("Aurora", "Selkie")),
                col("price", "numeric"),
                col("berths"),
                col("year_built"),
            ),
            primary_key=("boat_id",),
        ),
        TableInfo(
            "public",
            "parcels",
            columns=(
                ColumnInfo("parcel_id", "integer", False),
                col("label", "text", ("fragile", "express")),
                col("weight_grams", "numeric"),
                col("postage", "numeric"),
            ),
            primary_key=("parcel_id",),
        ),
    ),
)
WORDS = Vocabulary(MARINA, JoinGraph(MARINA))


class _Phrases:
    """The real model behind the linker's phrase embedder (queries, as the embedding
    service serves them)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._embedder.embed_queries(list(texts)), dtype=np.float32)


async def _linked(embedder: Embedder, question: str) -> exp.Select:
    meanings = await find_meanings(_Phrases(embedder), WORDS, question)
    linked = QuestionLinker(
        question, WORDS, TODAY, check=verify_statement, meanings=meanings
    ).link()
    tree = sqlglot.parse_one(linked.sql, dialect="postgres")
    assert isinstance(tree, exp.Select)
    return tree


def _ranked(tree: exp.Select) -> tuple[str, bool, str]:
    order = tree.args["order"].expressions[0]
    return order.this.name, bool(order.args.get("desc")), tree.args["limit"].expression.name


@pytest.mark.parametrize(
    ("question", "ranked"),
    [
        ("Which 2 boats are the most expensive?", ("price", True, "2")),
        ("List the 3 most expensive boats.", ("price", True, "3")),
        ("What are the 3 least expensive boats by price?", ("price", False, "3")),
        ("Which 2 parcels weigh the most?", ("weight_grams", True, "2")),
        ("Which 4 parcels weigh the least?", ("weight_grams", False, "4")),
    ],
)
async def test_a_gradable_word_ranks_by_the_column_the_model_puts_nearest(
    real_embedder: Embedder, question: str, ranked: tuple[str, bool, str]
) -> None:
    assert _ranked(await _linked(real_embedder, question)) == ranked


@pytest.mark.parametrize(
    "question",
    [
        "List the 3 most affordable boats.",  # the model leans neither to high nor low
        "Which 2 parcels sing the most?",  # no column is near the verb
    ],
)
async def test_no_clear_column_or_direction_leaves_the_question_refused(
    real_embedder: Embedder, question: str
) -> None:
    with pytest.raises(LinkError):
        await _linked(real_embedder, question)


def test_without_meanings_a_gradable_word_is_refused() -> None:
    with pytest.raises(LinkError):
        QuestionLinker(
            "List the 3 most expensive boats.", WORDS, TODAY, check=verify_statement
        ).link()
