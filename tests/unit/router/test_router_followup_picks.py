"""Picks out of the earlier rows by what they do ("which of them visited X?", "who among
them are from japan?", "of those, who sang in 2015?") and "keep the ones using …" are
narrowings of the earlier rows, not questions about them (issue 45, s60); a ranking, a
copula before anything but a place or a comparison, a second question word, and a pick
after a count stay what they were."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

VISITORS = PriorTurn(
    "Show the names and ages of all visitors.",
    "Show the names and ages of all visitors.",
    members=("Arjen Robben", "Fernando Gago", "Raúl Brown"),
    row_count=3,
    sql="SELECT name, age FROM visitor",
)
COUNTED = PriorTurn(
    "How many singers are from France?",
    "How many singers are from France?",
    row_count=1,
    sql="SELECT COUNT(*) FROM singer WHERE country = 'France'",
)


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        (
            "which of these visited the Willow Grande Museum?",
            "that visited the Willow Grande Museum",
        ),
        ("who among them teach History?", "that teach History"),
        ("of those, who sang in a concert in 2015?", "that sang in a concert in 2015"),
        ("which of them have a visit?", "that have a visit"),
        ("who among them are from japan?", "from japan"),
        ("keep the ones using a Presentation template", "using a Presentation template"),
    ],
)
def test_a_pick_by_a_deed_narrows_the_rows(question, condition):
    resolution = resolve(question, [VISITORS])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(VISITORS.sql, Relation.FILTER, condition=condition)


@pytest.mark.parametrize(
    "question",
    [
        "which of them is the oldest?",
        "which of them visited the most museums?",
        "who among them was hired first?",
        "which of them scored highest?",
        "what are their names?",
        "which of them live where?",
        "who among them are their managers?",
    ],
)
def test_a_question_about_the_rows_is_no_pick(question):
    resolution = resolve(question, [VISITORS])
    assert resolution.kind is not FollowUpKind.FILTER


def test_a_pick_after_a_count_is_no_narrowing_of_the_count():
    """ "which of them sang in 2015?" after "how many …": it asks for rows the count did
    not list, not a smaller count."""
    resolution = resolve("which of them sang in 2015?", [COUNTED])
    assert resolution.kind is not FollowUpKind.FILTER
