"""Issue 45 (s60): "of those, how many were Envoy Air flights?" after one count ("How
many flights had a departure delay of more than 3 hours?") counts fewer of the same
rows: a narrowing of the earlier question, as "of those, which were …" is. It was read
as a question about each earlier row and answered with a count per flight number, a
confident wrong answer. After a breakdown (a count per group) the words stay a question
about the rows, and "how many are the cheapest" is no state a row is in."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import Relation, resolve

COUNT = PriorTurn(
    "How many orders were shipped late?",
    "How many orders were shipped late?",
    row_count=1,
    sql="SELECT COUNT(*) FROM orders WHERE shipped_at > due_at",
)
PER_REGION = PriorTurn(
    "How many orders did each region place?",
    "How many orders did each region place?",
    row_count=4,
    sql="SELECT region, COUNT(*) FROM orders GROUP BY region",
)


@pytest.mark.parametrize(
    ("follow_up", "condition"),
    [
        ("of those, how many were express orders?", "express"),
        ("and of those, how many were refunded?", "refunded"),
        ("among them, how many are from Acme Corp?", "from Acme Corp"),
    ],
)
def test_how_many_of_one_count_narrows_the_count(follow_up: str, condition: str):
    resolution = resolve(follow_up, [COUNT])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on is not None
    assert resolution.builds_on.relation is Relation.FILTER
    assert resolution.builds_on.condition == condition
    assert resolution.question.startswith("How many orders") and "late" in resolution.question


def test_how_many_after_a_breakdown_stays_about_the_rows():
    resolution = resolve("of those, how many were express orders?", [PER_REGION])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE


def test_how_many_are_the_superlative_is_no_narrowing():
    resolution = resolve("of those, how many are the cheapest?", [COUNT])
    assert resolution.kind is not FollowUpKind.FILTER
