"""First questions refused because a value or a condition is said otherwise than the
schema stores or the readers know it (issue 45, s59), on schemas of their own (no dev
set's): a stored code joined by "_" or "-" said with spaces ("credit card" for
'credit_card'); rows bounded by "over"/"under" and a number, their age; "Name the …" as
"List the …"; "took place" as "happened". And what none of these may do: fold a code
that is no words, take "age" from the end of "average", or read a place that is one."""

from __future__ import annotations

from datetime import date

import pytest
from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary
from tests.unit.sql.schemas import col, key, linked_statement

TODAY = date(2026, 11, 30)


SHOP = Catalog(
    "shop",
    (
        TableInfo(
            "public",
            "payments",
            columns=(
                key("payment_id"),
                col("amount", "numeric"),
                col("method", "text", ("bank_transfer", "cash", "credit_card")),
                col("plan_code", "text", ("A-1", "B-2")),
            ),
            primary_key=("payment_id",),
        ),
        TableInfo(
            "public",
            "refunds",
            columns=(
                key("refund_id"),
                col("amount", "numeric"),
                col("method", "text", ("cash", "credit_card")),
            ),
            primary_key=("refund_id",),
        ),
    ),
)

CHOIR = Catalog(
    "choir",
    (
        TableInfo(
            "public",
            "singer",
            columns=(key("singer_id"), col("name", "text", ("Ines", "Ravi")), col("age")),
            primary_key=("singer_id",),
        ),
        TableInfo(
            "public",
            "hall",
            columns=(
                key("hall_id"),
                col("name", "text", ("Apollo", "Lyric")),
                col("location", "text", ("Leeds", "York")),
                col("average"),
                col("capacity"),
            ),
            primary_key=("hall_id",),
        ),
        TableInfo(
            "public",
            "recital",
            columns=(key("recital_id"), col("title", "text", ("Dawn", "Dusk")), col("year")),
            primary_key=("recital_id",),
        ),
    ),
)


def _where(tree: exp.Select) -> str:
    where = tree.args.get("where")
    return where.sql(dialect="postgres") if where is not None else ""


def test_a_stored_code_joined_by_an_underscore_is_found_as_said_with_spaces() -> None:
    tree = linked_statement("What is the total amount of credit card payments?", SHOP, TODAY)
    assert tree.find(exp.Sum) is not None
    assert _where(tree) == "WHERE (t0.method = 'credit_card')"
    tree = linked_statement("How many payments were made by bank transfer?", SHOP, TODAY)
    assert _where(tree) == "WHERE (t0.method = 'bank_transfer')"


def test_only_codes_of_letter_words_are_said_with_spaces() -> None:
    words = Vocabulary(SHOP, JoinGraph(SHOP)).names
    assert {(c.table.name, v) for c, v in words["credit card"]} == {
        ("payments", "credit_card"),
        ("refunds", "credit_card"),
    }
    assert "a 1" not in words  # 'A-1' is a code, not words: it is said as written
    assert "credit_card" in words  # as stored, still found


def test_rows_over_or_under_a_number_are_bounded_by_their_age() -> None:
    tree = linked_statement("List the singers under 35.", CHOIR, TODAY)
    assert _where(tree) == "WHERE (t0.age < 35)"
    assert "name" in [e.alias_or_name for e in tree.expressions]
    tree = linked_statement("Show the singers over 40.", CHOIR, TODAY)
    assert _where(tree) == "WHERE (t0.age > 40)"


def test_rows_without_an_age_are_not_bounded_by_a_column_ending_in_age() -> None:
    # ``hall.average`` ends in "age" and says none: refused, never "average > 5000"
    for question in ("List the halls over 5000.", "Which halls are older than 30?"):
        with pytest.raises(LinkError):
            linked_statement(question, CHOIR, TODAY)


def test_name_the_rows_asks_for_them_as_list_the_rows_does() -> None:
    tree = linked_statement("Name the singers older than 30.", CHOIR, TODAY)
    assert _where(tree) == "WHERE (t0.age > 30)"
    assert "name" in [e.alias_or_name for e in tree.expressions]


def test_took_place_is_an_idiom_of_happening() -> None:
    tree = linked_statement("Which recitals took place in 2015?", CHOIR, TODAY)
    assert _where(tree) == "WHERE (t0.year = 2015)"
    assert {t.name for t in tree.find_all(exp.Table)} == {"recital"}


def test_a_place_said_as_a_place_is_still_read() -> None:
    # "place" outside the idiom is a word like any other: it must be placed or refused
    with pytest.raises(LinkError):
        linked_statement("Which recitals had a place in 2015?", CHOIR, TODAY)


def _lettings(*, second_kinds: bool = False) -> Catalog:
    """Homes with a kind code a lookup table describes; ``second_kinds`` gives the
    listings a kind column of their own holding the same words."""
    kinds = ("Flat", "House", "Shop")
    listing_columns: tuple[ColumnInfo, ...] = (key("listing_id"), key("home_id"))
    if second_kinds:
        listing_columns += (col("listing_type", "text", kinds),)
    described = ("Flat, Apartment, etc.", "House, Bungalow, etc.")
    return Catalog(
        "lettings",
        (
            TableInfo(
                "public",
                "ref_home_types",
                columns=(
                    col("home_type_code", "text", kinds),
                    col("home_type_description", "text", described),
                ),
                primary_key=("home_type_code",),
            ),
            TableInfo(
                "public",
                "homes",
                columns=(
                    key("home_id"),
                    col("home_type_code", "text", kinds),
                    col("home_name", "text", ("Alder", "Birch")),
                    col("owner", "text", ("Ash", "Rowan")),
                    col("room_count"),
                ),
                primary_key=("home_id",),
                foreign_keys=(
                    ForeignKeyInfo(
                        ("home_type_code",), "public.ref_home_types", ("home_type_code",)
                    ),
                ),
            ),
            TableInfo(
                "public",
                "listings",
                columns=listing_columns,
                primary_key=("listing_id",),
                foreign_keys=(ForeignKeyInfo(("home_id",), "public.homes", ("home_id",)),),
            ),
        ),
    )


def test_a_common_noun_stored_as_a_kind_names_the_rows_of_that_kind() -> None:
    # 'House' is stored in ``homes.home_type_code`` and in the lookup table it references:
    # the referencing column holds the rows (not the one row describing the kind)
    for question in ("How many houses are listed?", "How many houses are there?"):
        tree = linked_statement(question, _lettings(), TODAY)
        assert tree.find(exp.Count) is not None
        assert {t.name for t in tree.find_all(exp.Table)} == {"homes"}
        assert _where(tree) == "WHERE (t0.home_type_code = 'House')"


def test_a_kind_two_columns_store_is_not_guessed() -> None:
    with pytest.raises(LinkError):
        linked_statement("How many houses are listed?", _lettings(second_kinds=True), TODAY)


def test_a_noun_stored_in_a_column_of_no_kinds_is_no_kind() -> None:
    # 'Rowan' is an owner's name, not a kind of home: "rowans" names no rows
    with pytest.raises(LinkError):
        linked_statement("How many rowans are listed?", _lettings(), TODAY)


def test_a_condition_after_values_joined_by_or_is_not_guessed() -> None:
    # "houses or flats with more than 2 rooms": every one, or the flats alone? Unsaid
    with pytest.raises(LinkError):
        linked_statement(
            "Which homes are House or Flat with room count above 2?", _lettings(), TODAY
        )


def test_values_joined_by_or_and_one_value_with_a_condition_are_still_read() -> None:
    tree = linked_statement("Which homes are House or Flat?", _lettings(), TODAY)
    assert " OR " in _where(tree)
    tree = linked_statement("Which homes are House with room count above 2?", _lettings(), TODAY)
    assert "t0.room_count > 2" in _where(tree) and "'House'" in _where(tree)


DEPOT = Catalog(
    "depot",
    (
        TableInfo(
            "public",
            "crates",
            columns=(
                key("crate_id"),
                col("label", "text", ("Anchor", "Buoy")),
                col("weight"),
                ColumnInfo("year", "integer", True, span=(1990, 2020)),
            ),
            primary_key=("crate_id",),
        ),
    ),
)


def test_a_superlative_before_its_own_dimension_is_that_dimension_at_its_extreme() -> None:
    # "the heaviest crate weight" says what "the maximum crate weight" says
    tree = linked_statement("What was the heaviest crate weight in 2019?", DEPOT, TODAY)
    found = tree.find(exp.Max)
    assert found is not None and found.this.name == "weight"
    assert _where(tree) == "WHERE (t0.year = 2019)"
    assert tree.args.get("limit") is None


def test_a_superlative_before_rows_still_ranks_them() -> None:
    tree = linked_statement("List the 2 heaviest crates.", DEPOT, TODAY)
    assert tree.find(exp.Max) is None
    assert tree.args["limit"].expression.name == "2"


SCHOOL = Catalog(
    "school",
    (
        TableInfo(
            "public",
            "instructor",
            columns=(key("instructor_id"), col("name", "text", ("Mara", "Tove")), col("age")),
            primary_key=("instructor_id",),
        ),
        TableInfo(
            "public",
            "lesson_plan",
            columns=(key("instructor_id"), key("lesson_id"), col("grade")),
            primary_key=("instructor_id", "lesson_id"),
            foreign_keys=(
                ForeignKeyInfo(("instructor_id",), "public.instructor", ("instructor_id",)),
            ),
        ),
    ),
)


def test_a_column_then_a_number_ending_the_question_is_a_condition() -> None:
    # "grade 1" names the rows whose grade is 1, as "in grade 1" does
    tree = linked_statement("Which instructors instruct grade 1?", SCHOOL, TODAY)
    assert _where(tree).endswith("WHERE sj1.instructor_id = t0.instructor_id AND sj1.grade = 1)")
    assert "grade" not in [e.alias_or_name for e in tree.expressions]


def test_a_column_then_a_number_among_the_things_shown_is_not_read_as_one() -> None:
    with pytest.raises(LinkError):
        linked_statement("List the instructors and grade 1.", SCHOOL, TODAY)


def _gallery(*, second_spent: bool = False) -> Catalog:
    """Visits to a gallery, each with what its visitor spent; ``second_spent`` gives the
    visits a second number column named by the same verb."""
    spent: tuple[ColumnInfo, ...] = (col("total_spent", "numeric"),)
    if second_spent:
        spent += (col("fee_spent", "numeric"),)
    return Catalog(
        "gallery",
        (
            TableInfo(
                "public",
                "patron",
                columns=(key("id"), col("name", "text", ("Ines Sola", "Ravi Arun")), col("age")),
                primary_key=("id",),
            ),
            TableInfo(
                "public",
                "visit",
                columns=(key("visit_id"), key("patron_id"), *spent),
                primary_key=("visit_id",),
                foreign_keys=(ForeignKeyInfo(("patron_id",), "public.patron", ("id",)),),
            ),
        ),
    )


def test_how_much_someone_verbed_is_the_sum_of_the_column_the_verb_names() -> None:
    tree = linked_statement("How much did Ines Sola spend in total?", _gallery(), TODAY)
    found = tree.find(exp.Sum)
    assert found is not None and found.this.name == "total_spent"
    assert "'Ines Sola'" in _where(tree)


def test_how_much_with_a_verb_two_columns_name_is_not_guessed() -> None:
    with pytest.raises(LinkError):
        linked_statement("How much did Ines Sola spend?", _gallery(second_spent=True), TODAY)
