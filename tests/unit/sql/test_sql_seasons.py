"""A season said where the data keeps months (ISSUE-45, s61, flights6): "just those in the
summer" was refused with "no column of the previous answer's tables fits 'in the
summer'", and "… in the summer?" asked alone with "could not place 'summer'", though
``flights.month`` exists. Which months a season spans depends on the hemisphere and the
convention, so it is never guessed: the refusal says what it could not place and where
the months are kept, on first questions and follow-ups alike. A season the data itself
names (a stored value) is read as that value; the verb "fall" is no season."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.conversation import FollowUpError, Prior, Relation, built
from services.sql.linker import LinkError, QuestionLinker, Vocabulary
from services.sql.verify import verify_statement
from tests.unit.sql.flights import FLIGHTS

TODAY = date(2026, 11, 30)


def _linked(question: str, catalog: Catalog = FLIGHTS) -> str:
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    linked = QuestionLinker(question, vocabulary, TODAY, (), check=verify_statement).link()
    return " ".join(linked.sql.split())


def _refused(question: str, catalog: Catalog = FLIGHTS) -> str:
    with pytest.raises(LinkError) as refused:
        _linked(question, catalog)
    return str(refused.value)


@pytest.mark.parametrize(
    ("question", "season"),
    [
        ("What was the total distance flown by flights from LGA to ORD in the summer?", "summer"),
        ("How many flights departed from JFK during the winter?", "winter"),
    ],
)
def test_a_season_on_first_questions_names_the_month_column(question: str, season: str) -> None:
    refusal = _refused(question)
    assert refusal.startswith(f"'{season}': which months it spans is unsaid")
    assert "flights.month" in refusal


def test_a_season_stored_as_a_value_is_that_value() -> None:
    """A table that stores its seasons says which rows are the summer's: no refusal."""
    terms = TableInfo(
        "public",
        "terms",
        columns=(
            ColumnInfo("term_id", "integer", False),
            ColumnInfo("season", "text", False, sample_values=("summer", "winter")),
            ColumnInfo("year", "integer", False),
            ColumnInfo("month", "integer", False),
        ),
        primary_key=("term_id",),
    )
    sql = _linked("How many terms are in the summer?", Catalog("school", (terms,)))
    assert "'summer'" in sql


def test_the_verb_fall_is_no_season() -> None:
    refusal = _refused("Which flights fall under the carrier XX9?")
    assert "months it spans" not in refusal


class _Linker:
    """The linker's seam: it places no season (as the real linker does not)."""

    async def __call__(self, question: str) -> str | None:
        return None


FLOWN = (
    "SELECT SUM(t0.distance) AS total FROM public.flights AS t0 "
    "WHERE (t0.origin = 'LGA') AND (t0.dest = 'ORD')"
)


async def test_a_season_on_a_follow_up_names_the_month_column() -> None:
    prior = Prior(FLOWN, Relation.FILTER, condition="in the summer")
    with pytest.raises(FollowUpError) as refused:
        await built(FLOWN, prior, FLIGHTS, _Linker())
    assert str(refused.value).startswith("'summer': which months it spans is unsaid")
    assert "flights.month" in str(refused.value)


async def test_a_follow_up_condition_without_a_season_is_refused_as_before() -> None:
    prior = Prior(FLOWN, Relation.FILTER, condition="in the dry spell")
    with pytest.raises(FollowUpError) as refused:
        await built(FLOWN, prior, FLIGHTS, _Linker())
    assert "months it spans" not in str(refused.value)
