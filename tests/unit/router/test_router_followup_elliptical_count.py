"""An elliptical count (issue 45, s60): "and how many of type Other?" after "How many
houses are listed?" names no rows of its own — a preposition follows "how many" at once —
so its rows are the previous count's, with the value it says in place of the compared
one. Read as a question of its own it counted nothing, and the "their" of the next turn
had no result set to point at. A partitive ("how many of the singers ...") or a count
after a question that counted nothing is a question of its own, as before."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

HOUSES = PriorTurn(
    "How many houses are listed?",
    "How many houses are listed?",
    row_count=1,
    sql="SELECT COUNT(*) AS count FROM public.properties AS t0 "
    "WHERE (t0.property_type_code = 'House')",
)


@pytest.mark.parametrize(
    "question",
    ["and how many of type Other?", "how many of type Other", "And how many of type Other?"],
)
def test_a_count_with_no_noun_of_its_own_swaps_the_previous_counts_value(question: str) -> None:
    resolution = resolve(question, [HOUSES])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.builds_on == BuildsOn(HOUSES.sql, Relation.VALUE_SWAP, value="type Other")


def test_an_elliptical_count_of_a_period_moves_the_previous_counts_period() -> None:
    resolution = resolve("and how many in 2014?", [HOUSES])
    assert resolution.kind is FollowUpKind.TIME_SHIFT
    assert resolution.builds_on == BuildsOn(HOUSES.sql, Relation.TIME_SHIFT, period="in 2014")


@pytest.mark.parametrize(
    "question",
    ["and how many of the singers are French?", "how many of all the flats have a garden?"],
)
def test_a_partitive_count_names_its_rows_and_is_asked_as_said(question: str) -> None:
    assert resolve(question, [HOUSES]).kind is FollowUpKind.STANDALONE


def test_after_a_question_that_counted_nothing_the_count_is_asked_as_said() -> None:
    listed = PriorTurn(
        "List the houses.", "List the houses.", row_count=3,
        sql="SELECT t0.property_name FROM public.properties AS t0",
    )  # fmt: skip
    assert resolve("and how many of type Other?", [listed]).kind is FollowUpKind.STANDALONE
