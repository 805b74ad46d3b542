"""Right or refused, issue 45: "Which <noun> …?" asks for the noun's rows, shown by what
names them, not by the column that chose them. Each test reads a question with the real
linker and verifier on an invented schema: the column a verb says is a condition (a
comparison, a stored value, a year), and the rows are shown by their label; a table with
no name column is labelled by the text its schema declares first, a reference-free
listing by a name column whose name ends in "name"."""

from __future__ import annotations

from datetime import date

import pytest
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, link_question, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)


def _shown(tree: exp.Select) -> list[str]:
    return [e.unalias().name for e in tree.expressions if isinstance(e.unalias(), exp.Column)]


def _where(tree: exp.Select) -> str:
    where = tree.args.get("where")
    return where.sql(dialect="postgres") if where is not None else ""


# Boats: numbered rows with no name column; the builder and the design said first.
FLEET = Catalog(
    "fleet",
    (
        TableInfo(
            "public",
            "boats",
            columns=(
                col("id"),
                col("builder", "text", ("Beneteau", "Hallberg-Rassy", "Jeanneau")),
                col("design", "text", ("Oceanis 40", "HR 340", "Sun Odyssey 380")),
                col("launched", "integer"),
                col("year", "integer"),
                col("hull_colour", "text", ("white", "navy")),
                col("cost", "numeric(10,2)"),
            ),
            primary_key=("id",),
            row_estimate=3,
        ),
        # numbered pets whose first text is their kind: two kinds over three pets
        TableInfo(
            "public",
            "pets",
            columns=(col("pet_id"), col("pet_kind", "text", ("cat", "dog")), col("age")),
            primary_key=("pet_id",),
            row_estimate=3,
        ),
        TableInfo(
            "public",
            "charters",
            columns=(col("id"), col("boat_id"), col("days")),
            primary_key=("id",),
            foreign_keys=(ForeignKeyInfo(("boat_id",), "public.boats", ("id",)),),
        ),
    ),
)

# Vets with a person's name and a specialty; their clinics' members by a ``…name``
# column whose words do not say "name" on their own.
CLINIC = Catalog(
    "clinic",
    (
        TableInfo(
            "public",
            "vets",
            columns=(
                col("vet_id"),
                col("first_name", "text", ("Ann", "Bo")),
                col("last_name", "text", ("Lind", "Berg")),
                col("specialty", "text", ("surgery", "dentistry", "imaging")),
            ),
            primary_key=("vet_id",),
        ),
        TableInfo(
            "public",
            "members",
            columns=(
                col("mid"),
                col("membername", "text", ("ann_l", "bo_b")),
                col("email", "text", ("a@x.org", "b@x.org")),
            ),
            primary_key=("mid",),
        ),
        TableInfo(
            "public",
            "posts",
            columns=(col("post_id"), col("member_id"), col("body", "text")),
            primary_key=("post_id",),
            foreign_keys=(ForeignKeyInfo(("member_id",), "public.members", ("mid",)),),
        ),
    ),
)


def test_a_column_said_as_the_verb_of_a_comparison_filters_the_rows():
    # "boats cost" spells the column, but "more than" makes it the predicate
    tree = linked_statement("Which boats cost more than 50000?", FLEET, TODAY)
    assert "cost > 50000" in _where(tree)
    assert _shown(tree)[:2] == ["builder", "design"]


def test_a_table_without_a_name_is_shown_by_the_text_declared_first():
    tree = linked_statement("Which boats have a cost above 50000?", FLEET, TODAY)
    # the key is a number a reader cannot read; the colour, declared after a number,
    # is an attribute, not part of what the row is called
    assert _shown(tree)[:2] == ["builder", "design"]
    assert "hull_colour" not in _shown(tree) and "id" not in _shown(tree)


def test_a_kind_of_row_is_no_label():
    tree = linked_statement("Which pets have an age above 3?", FLEET, TODAY)
    assert "pet_kind" not in _shown(tree)
    assert _shown(tree)[0] == "pet_id"


def test_grouped_rows_without_a_name_show_their_key_beside_their_label():
    tree = linked_statement("How many charters does each boat have?", FLEET, TODAY)
    assert _shown(tree) == ["id", "builder", "design"]


def test_a_year_said_after_from_is_the_year_of_the_rows():
    tree = linked_statement("Which boats are from 2021?", FLEET, TODAY)
    assert "year = 2021" in _where(tree)


def test_from_a_year_to_another_is_no_single_year():
    with pytest.raises(LinkError):
        linked_statement("Which boats are from 2021 to 2023?", FLEET, TODAY)


def test_a_verb_before_a_stored_value_is_a_condition_not_what_is_shown():
    tree = linked_statement("Which vets specialise in dentistry?", CLINIC, TODAY)
    assert "specialty = 'dentistry'" in _where(tree)
    assert {"first_name", "last_name"} <= set(_shown(tree))
    assert "specialty" not in _shown(tree)


def test_a_verb_nothing_links_is_still_refused():
    with pytest.raises(LinkError):
        linked_statement("Which vets practise in dentistry?", CLINIC, TODAY)


def test_the_listing_reader_shows_a_name_its_words_do_not_split():
    # the listing reading (the clause reader's fallback) labels members as the clause
    # reader does: ``membername`` beside the key, not the key alone
    vocabulary = Vocabulary(CLINIC, JoinGraph(CLINIC))
    ctx = read_question("Which 2 members have the most posts?", vocabulary, TODAY)
    linked = link_question(ctx)
    verify_statement(ctx, linked.sql)
    assert "membername" in linked.sql


def test_ids_asked_in_the_plural_are_the_keys_not_the_names():
    # the listing reading: a reference asked for by its IDs shows the reference, not the
    # name of the row it points to (now that ``membername`` is read as a name)
    vocabulary = Vocabulary(CLINIC, JoinGraph(CLINIC))
    ctx = read_question(
        "Return the distinct list of member IDs who have written posts.", vocabulary, TODAY
    )
    linked = link_question(ctx)
    verify_statement(ctx, linked.sql)
    assert "member_id" in linked.sql and "membername" not in linked.sql


def test_what_a_verb_asks_for_is_not_its_subject_rows():
    # "what" is the verb's object (a price): the boats themselves do not answer it
    with pytest.raises(LinkError, match="sell"):
        linked_statement("What did the boats sell for?", FLEET, TODAY)


def test_a_column_the_verb_names_answers_what_was_asked():
    tree = linked_statement("What did the boats cost?", FLEET, TODAY)
    assert _shown(tree) == ["cost"]
