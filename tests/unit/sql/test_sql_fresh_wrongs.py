"""First turns a fresh follow-up script (ISSUE-45, s61: written before any engine run, as a
busy user types) got confidently wrong, each shown through the real linker and verifier:
"planes built before 1990 per manufacturer" answered by listing the planes (no count per
manufacturer), and "documents using a book template" answered by the documents' template
ids. Both are refused now; the negative tests keep what was right answered."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)


def _text(name: str, values: tuple[str, ...] = ()) -> ColumnInfo:
    return ColumnInfo(name, "text", True, known_values=values)


# Documents made from templates, each template of a type (shaped as Spider's
# cre_doc_template_mgt is).
TEMPLATES = Catalog(
    "templates",
    (
        TableInfo(
            "public",
            "ref_template_types",
            columns=(
                ColumnInfo("template_type_code", "text", False, known_values=("BK", "PPT")),
                _text("template_type_description", ("Book", "Presentation")),
            ),
            primary_key=("template_type_code",),
        ),
        TableInfo(
            "public",
            "templates",
            columns=(key("template_id"), col("version_number"), _text("template_type_code")),
            primary_key=("template_id",),
            foreign_keys=(
                ForeignKeyInfo(
                    ("template_type_code",), "public.ref_template_types", ("template_type_code",)
                ),
            ),
        ),
        TableInfo(
            "public",
            "documents",
            columns=(
                key("document_id"),
                col("template_id"),
                _text("document_name", ("Robbin CV", "Palm reading")),
            ),
            primary_key=("document_id",),
            foreign_keys=(ForeignKeyInfo(("template_id",), "public.templates", ("template_id",)),),
        ),
        TableInfo(
            "public",
            "rooms",
            columns=(key("room_id"), _text("room_name"), col("price_per_night")),
            primary_key=("room_id",),
        ),
    ),
)


def _vocabulary() -> Vocabulary:
    return Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))


def test_rows_listed_for_a_per_grouping_are_refused() -> None:
    """ "per manufacturer" with nothing counted asks for one number per manufacturer (how
    many planes); a statement that lists the planes (or the manufacturers) is refused,
    and the headless breakdown is read as the count it asks (s62, ``_rephrasing``)."""
    with pytest.raises(LinkError, match="per manufacturer"):
        verify_statement(
            read_question("planes built before 1990 per manufacturer", _vocabulary(), TODAY),
            "SELECT t0.tailnum, t0.manufacturer FROM public.planes AS t0 WHERE t0.year < 1990",
        )
    sql = linked_sql("planes built before 1990 per manufacturer", FLIGHTS, TODAY)
    assert "COUNT(*)" in sql and "GROUP BY t0.manufacturer" in sql and "t0.year < 1990" in sql


def test_a_count_per_a_grouping_is_still_answered() -> None:
    sql = linked_sql("number of planes built before 1990 per manufacturer", FLIGHTS, TODAY)
    assert "COUNT(*)" in sql and "GROUP BY t0.manufacturer" in sql


def test_a_rate_a_column_is_named_for_groups_nothing() -> None:
    """ "price per night" is the column ``price_per_night``: shown, not a grouping."""
    sql = linked_sql("list each room name and its price per night", TEMPLATES, TODAY)
    assert "price_per_night" in sql and "GROUP BY" not in sql


@pytest.mark.parametrize(
    "question",
    [
        "documents using a Book template",  # documents.template_id shown
        "documents using a template of type Book",  # templates.template_id shown
    ],
)
def test_rows_answered_by_their_references_alone_are_refused(question: str) -> None:
    """The documents asked for, template ids shown: refused (it lists templates)."""
    with pytest.raises(LinkError, match="what the documents refer to"):
        linked_sql(question, TEMPLATES, TODAY)


def test_rows_shown_by_their_own_columns_or_ids_asked_pass() -> None:
    named = linked_sql("list documents whose template type is Book", TEMPLATES, TODAY)
    assert "document_name" in named
    ids = linked_sql("template ids of documents named Robbin CV", TEMPLATES, TODAY)
    assert "template_id" in ids
