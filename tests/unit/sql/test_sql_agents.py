""" "Who <verb> the <noun> …?" asks for the verb's agent: on schemas of their own (no dev
set's), the statement shows the column the verb is linked to by meaning for the rows the
rest names, a statement showing only the noun's columns is refused naming the verb, the
real model ties "who made" to a manufacturer column, and a follow-up ("who built
them?") shows that column for the earlier answer's rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np
import pytest

from services.embedding import Embedder
from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.conversation import labels, restrict, shows_only_rows, subject
from services.sql.linker import (
    LinkError,
    Meaning,
    QuestionLinker,
    Vocabulary,
    agent_asked,
    find_meanings,
    read_question,
)
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 24)

YARD = Catalog(
    "yard",
    (
        TableInfo(
            "public",
            "boats",
            columns=(
                ColumnInfo("boat_id", "integer", False),
                ColumnInfo("name", "text", False),
                ColumnInfo("year", "integer", False),
                ColumnInfo("builder", "text", False, known_values=("Feadship", "Lurssen")),
                ColumnInfo("length", "integer", False),
            ),
            primary_key=("boat_id",),
        ),
    ),
)
YARD_WORDS = Vocabulary(YARD, JoinGraph(YARD))
BUILT = (Meaning("built", "public.boats", "builder", 0.6),)

HANGAR = Catalog(
    "hangar",
    (
        TableInfo(
            "public",
            "aircraft",
            columns=(
                ColumnInfo("registration", "text", False),
                ColumnInfo("year", "integer", True),
                ColumnInfo("manufacturer", "text", True),
                ColumnInfo("model", "text", True),
                ColumnInfo("seats", "integer", True),
                ColumnInfo("engines", "integer", True),
            ),
            primary_key=("registration",),
        ),
    ),
)


def _linked(question: str, meanings: Sequence[Meaning] = ()) -> str:
    linked = QuestionLinker(
        question, YARD_WORDS, TODAY, check=verify_statement, meanings=meanings
    ).link()
    return " ".join(linked.sql.split())


def test_who_and_a_verb_taking_an_object_asks_for_its_agent() -> None:
    assert agent_asked("Who built the boats with a length above 50?") == (
        "built",
        "the boats with a length above 50",
    )
    # a verb of being or having asks about the subject's own rows; no "who", no agent
    assert agent_asked("Who is the oldest builder?") is None
    assert agent_asked("Who has the most boats?") is None
    assert agent_asked("Which boats were built before 1950?") is None


def test_the_column_the_verb_means_is_shown_for_the_rows_the_rest_names() -> None:
    sql = _linked("Who built the boats with a length above 50?", BUILT)
    # the length beside the builder: it chose the boats (``results.with_deciding``); the
    # boats' key and names before it, whose builder each is (``results.with_labels``)
    assert sql.startswith(
        "SELECT t0.boat_id AS boat_id, t0.name AS name, t0.builder AS builder, "
        "t0.length AS length "
        "FROM public.boats AS t0 WHERE"
    )
    assert "t0.length > 50" in sql


def test_a_statement_showing_only_the_nouns_rows_is_refused_naming_the_verb() -> None:
    ctx = read_question("Who built the boats with a length above 50?", YARD_WORDS, TODAY)
    # the boats' names and lengths: what was built, not who built it
    rows = (
        "SELECT t0.name AS name, t0.length AS length FROM public.boats AS t0 WHERE (t0.length > 50)"
    )
    with pytest.raises(LinkError, match="shows only columns of the boats") as refused:
        verify_statement(ctx, rows)
    assert refused.value.phrase == "built"
    # the column the verb means passes
    linked = read_question(
        "Who built the boats with a length above 50?", YARD_WORDS, TODAY, meanings=BUILT
    )
    verify_statement(
        linked, "SELECT t0.builder AS builder FROM public.boats AS t0 WHERE (t0.length > 50)"
    )


class _Phrases:
    """The real model behind the linker's phrase embedder (as the embedding service
    serves it: queries)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._embedder.embed_queries(list(texts)), dtype=np.float32)


async def test_the_real_model_ties_who_made_to_the_manufacturer(real_embedder: Embedder) -> None:
    words = Vocabulary(HANGAR, JoinGraph(HANGAR))
    question = "Who made the aircraft built before 1960?"
    found = await find_meanings(_Phrases(real_embedder), words, question)
    assert [(m.word, m.table, m.column) for m in found] == [
        ("made", "public.aircraft", "manufacturer")
    ]


def test_a_follow_up_asking_who_shows_the_agent_for_the_earlier_rows() -> None:
    earlier = "SELECT t0.name AS name, t0.year AS year FROM public.boats AS t0 WHERE t0.year < 1950"
    about = subject(earlier, YARD)
    # "who built them?" as the router rewrites it, pointed at the earlier rows' table
    linked = _linked("Who built the boats?", BUILT)
    assert linked == (
        "SELECT t0.boat_id AS boat_id, t0.name AS name, t0.builder AS builder "
        "FROM public.boats AS t0"
    )
    assert not shows_only_rows("Who built the previous answer's rows?", linked, about, YARD)
    sql = restrict(linked, earlier, about, labels(earlier, about, YARD))
    assert "t0.builder" in sql and "t0.year < 1950" in sql
