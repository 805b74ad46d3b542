"""A noun the schema names by another word, linked by meaning with a margin (issue 45,
s59): after every other reading refused, "earnings" is read as the salary column the
real model puts clearly nearest (below the catalog-wide meaning floor, well ahead of the
next element), and the interpretation says so. A near tie ("pay": a salary and a
budget) links nothing, nor does a proper name ("Citywide", near ``city``) or a participle
("funded", near ``budget``), however near: the question stays refused."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np
import pytest

from services.embedding import Embedder
from services.sql.ask import SchemaView
from services.sql.ask._offline import OfflineGenerator
from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo
from services.sql.catalog._catalog import ForeignKeyInfo
from services.sql.linker import MEANING_MIN, Vocabulary, unplaced_meanings
from tests.unit.sql.schemas import col

TODAY = date(2026, 11, 30)

WORKS = Catalog(
    "works",
    (
        TableInfo(
            "public",
            "employees",
            columns=(
                ColumnInfo("employee_id", "integer", False),
                col("name", "text", ("Ann Lee", "Bob Kim")),
                col("salary", "numeric"),
                col("city", "text", ("Oslo", "Rome")),
            ),
            primary_key=("employee_id",),
        ),
        TableInfo(
            "public",
            "projects",
            columns=(
                ColumnInfo("project_id", "integer", False),
                col("title", "text", ("Atlas", "Borealis")),
                col("budget", "numeric"),
                ColumnInfo("employee_id", "integer", False),
            ),
            primary_key=("project_id",),
            foreign_keys=(ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),),
        ),
    ),
)
VIEW = SchemaView("works", WORKS, WORKS.tables, "", TODAY)


class _Phrases:
    """The real model behind the linker's phrase embedder (queries, as served)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._embedder.embed_queries(list(texts)), dtype=np.float32)


async def test_a_noun_clearly_nearest_one_column_is_read_as_it(real_embedder: Embedder) -> None:
    reading = await OfflineGenerator(_Phrases(real_embedder)).reading(
        "What is the total earnings of employees?", VIEW
    )
    assert reading.sql == "SELECT SUM(t0.salary) AS sum_salary FROM public.employees AS t0"
    assert "'earnings' read as employees.salary" in reading.interpretation
    # below the catalog-wide floor: only the margin rule links it
    vocab = Vocabulary(WORKS, JoinGraph(WORKS))
    (meaning,) = await unplaced_meanings(
        _Phrases(real_embedder), vocab, "What is the total earnings of employees?", ["earnings"]
    )
    assert meaning.similarity < MEANING_MIN


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("What is the average pay of the employees?", "pay"),  # salary and budget near tie
        ("How many employees work for Citywide?", "Citywide"),  # a proper name: a value
    ],
)
async def test_a_near_tie_or_a_name_links_nothing_and_stays_refused(
    real_embedder: Embedder, question: str, word: str
) -> None:
    vocab = Vocabulary(WORKS, JoinGraph(WORKS))
    assert await unplaced_meanings(_Phrases(real_embedder), vocab, question, [word]) == ()
    reading = await OfflineGenerator(_Phrases(real_embedder)).reading(question, VIEW)
    assert not reading.sql
    assert word in reading.reason


async def test_a_participle_is_no_noun_however_near(real_embedder: Embedder) -> None:
    """ "funded" sits 0.52 from ``projects.budget`` and 0.11 ahead: a condition, not the
    budget."""
    vocab = Vocabulary(WORKS, JoinGraph(WORKS))
    found = await unplaced_meanings(
        _Phrases(real_embedder), vocab, "Which projects were funded?", ["funded"]
    )
    assert found == ()


async def test_a_noun_may_name_a_column_of_a_table_joined_to_the_ones_placed(
    real_embedder: Embedder,
) -> None:
    """ "the total funds of employees": only ``employees`` is placed, and the funds are
    the budgets of the projects that refer to them; among the placed table's own columns
    alone nothing is near enough (``salary`` 0.33)."""
    vocab = Vocabulary(WORKS, JoinGraph(WORKS))
    (meaning,) = await unplaced_meanings(
        _Phrases(real_embedder), vocab, "What is the total funds of employees?", ["funds"]
    )
    assert (meaning.table, meaning.column) == ("public.projects", "budget")


async def test_a_word_after_to_is_a_verb_and_links_nothing(real_embedder: Embedder) -> None:
    """ "projects to fund": after "to" the word is a verb, a condition on the projects,
    not the budget it is near as a noun ("the fund of each project" links it)."""
    vocab = Vocabulary(WORKS, JoinGraph(WORKS))
    phrases = _Phrases(real_embedder)
    assert (
        await unplaced_meanings(phrases, vocab, "Which projects are there to fund?", ["fund"]) == ()
    )
    (noun,) = await unplaced_meanings(phrases, vocab, "What is the fund of each project?", ["fund"])
    assert noun.column == "budget"
