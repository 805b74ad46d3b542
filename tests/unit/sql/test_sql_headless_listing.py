"""A first question typed as a bare noun phrase ("teachers older than 35", issue 45, s63):
no question word, no verb, no request. It is read as the listing it is typed for ("List
teachers older than 35"), the one reading of "list <rows> …", so the noun still has to
be a table's name and every word after it placed; as asked, the clause reader knew no
such form and the list-oriented reading dropped the comparative ("the statement does
not use the number 35"), which lost the Spider v8 course_teach conversation. A noun
alone, a breakdown, a greeting or a sentence with a verb of its own is not read so."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, TableInfo
from services.sql.linker import LinkError
from services.sql.linker._rephrasing import listed_bare
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)

SCHOOL = Catalog(
    "school",
    (
        TableInfo(
            "public",
            "teacher",
            columns=(
                key("teacher_id"),
                col("name", "text", ("Anne Walker", "Joseph Huts")),
                col("age"),
                col("hometown", "text", ("Bolton", "Horwich")),
            ),
            primary_key=("teacher_id",),
        ),
    ),
)


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        ("teachers older than 35", "t0.age > 35"),
        ("the teachers younger than 30", "t0.age < 30"),
        ("teachers under 35", "t0.age < 35"),
    ],
)
def test_a_headless_listing_is_read_as_the_listing_it_is_typed_for(
    question: str, condition: str
) -> None:
    sql = linked_sql(question, SCHOOL, TODAY)
    assert f"WHERE ({condition})" in sql
    assert "FROM public.teacher AS t0" in sql and "t0.name" in sql


def test_every_word_after_the_noun_is_still_placed() -> None:
    sql = linked_sql("teachers older than 35 from Bolton", SCHOOL, TODAY)
    assert "t0.age > 35" in sql and "t0.hometown = 'Bolton'" in sql
    with pytest.raises(LinkError):  # a sentence with a verb of its own: no listing
        linked_sql("teachers must submit grades within 30 days", SCHOOL, TODAY)


@pytest.mark.parametrize(
    "fragment",
    [
        "teachers",  # a noun alone says nothing to list
        "hello there",  # no plural noun opens it
        "singers by country",  # a headless breakdown: counted (``counted_bare``)
        "transactions per ticker type",
        "List teachers older than 35",  # a head of its own
        "How many teachers are older than 35?",
        "average age of teachers",  # a measure
        "teacher older than 35",  # no rows' plural noun
    ],
)
def test_what_is_no_headless_listing_is_left_as_it_is(fragment: str) -> None:
    assert listed_bare(fragment) == fragment


def test_a_headless_listing_gets_the_listing_head() -> None:
    assert listed_bare("flights from JFK in June") == "List flights from JFK in June"
    assert listed_bare("The teachers older than 35?") == "List teachers older than 35?"


def test_the_refusal_as_asked_stands_where_both_refuse() -> None:
    """Read as a listing, "teachers older than Anne Walker" is refused too; the refusal
    is the one as asked, in the user's words."""
    with pytest.raises(LinkError, match="older than"):
        linked_sql("teachers older than Anne Walker", SCHOOL, TODAY)
