"""A path through a table the question never names, while the question names a reference
of the near table that may hold the far table's rows itself. On a schema of its own (no
dev set's): shipments carry a ``receiver_id`` and a ``sender_id`` that no join is known
for (each refers to depots or to customers, by turns) and a ``crate_id`` to crates, whose
``depot_id`` refers to depots. "Which depots received the most weight?" joined through
crates sums the weight shipped in each depot's crates: refused, naming the word and both
paths. Said of the crates, or with no word naming a reference, the path stands."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, read_question
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 24)

SHIPPING = Catalog(
    "shipping",
    (
        TableInfo(
            "public",
            "depots",
            columns=(
                ColumnInfo("depot_id", "integer", False),
                ColumnInfo("name", "text", False, known_values=("Leeds", "Hull")),
            ),
            primary_key=("depot_id",),
        ),
        TableInfo(
            "public",
            "crates",
            columns=(
                ColumnInfo("crate_id", "integer", False),
                ColumnInfo("depot_id", "integer", False),
                ColumnInfo("colour", "text", False, known_values=("red", "blue")),
            ),
            primary_key=("crate_id",),
            foreign_keys=(ForeignKeyInfo(("depot_id",), "public.depots", ("depot_id",)),),
        ),
        TableInfo(
            "public",
            "shipments",
            columns=(
                ColumnInfo("shipment_id", "integer", False),
                ColumnInfo("sender_id", "integer", False),
                ColumnInfo("receiver_id", "integer", False),
                ColumnInfo("crate_id", "integer", True),
                ColumnInfo("weight", "numeric", False),
            ),
            primary_key=("shipment_id",),
            foreign_keys=(ForeignKeyInfo(("crate_id",), "public.crates", ("crate_id",)),),
        ),
    ),
)
VOCABULARY = Vocabulary(SHIPPING, JoinGraph(SHIPPING))

THROUGH_CRATES = (
    "SELECT t2.name AS name, SUM(t0.weight) AS sum_weight FROM public.shipments AS t0"
    " JOIN public.crates AS t1 ON t1.crate_id = t0.crate_id"
    " JOIN public.depots AS t2 ON t2.depot_id = t1.depot_id"
    " GROUP BY t2.name, t2.depot_id ORDER BY sum_weight DESC LIMIT 3"
)


def _verify(question: str, sql: str = THROUGH_CRATES) -> None:
    verify_statement(read_question(question, VOCABULARY, TODAY), sql)


@pytest.mark.parametrize(
    ("question", "word", "column"),
    [
        ("Which 3 depots received the highest total weight?", "received", "receiver_id"),
        ("Which 3 depots sent the highest total weight?", "sent", "sender_id"),
    ],
)
def test_a_bridge_beside_a_reference_the_question_names_is_refused(
    question: str, word: str, column: str
) -> None:
    with pytest.raises(LinkError) as refused:
        _verify(question)
    said = str(refused.value)
    assert f"'{word}' names shipments.{column}" in said
    # both paths are named: the reference the word points at and the bridge taken
    assert "through crates" in said
    assert "shipments.crate_id → crates.crate_id" in said


def test_the_linker_refuses_the_path_round_the_named_reference() -> None:
    with pytest.raises(LinkError, match=r"'received' names shipments\.receiver_id"):
        QuestionLinker(
            "Which 3 depots received the highest total weight?",
            VOCABULARY,
            TODAY,
            check=verify_statement,
        ).link()


def test_a_bridge_the_question_names_or_no_named_reference_passes() -> None:
    # the crates are said: the path through them is what is asked
    _verify("Which 3 depots have crates with the highest total shipped weight?")
    # no word names a reference of the shipments: nothing points elsewhere
    _verify("Which 3 depots have the highest total weight?")
    # the bridge shown (a column of it used): a join like any other
    _verify(
        "Which 3 depots received the highest total weight?",
        "SELECT t2.name AS name, t1.colour AS colour, SUM(t0.weight) AS w"
        " FROM public.shipments AS t0 JOIN public.crates AS t1 ON t1.crate_id = t0.crate_id"
        " JOIN public.depots AS t2 ON t2.depot_id = t1.depot_id"
        " GROUP BY t2.name, t1.colour ORDER BY w DESC LIMIT 3",
    )
