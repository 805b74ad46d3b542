"""A measure with no verb of its own (issue 45, s62): in "How many sales and how much
revenue did each salesperson make in 2023?" the first measure shares the verb, the
grouping and the period of the second. Split at "and how", the first part was asked as
"How many sales" — a whole count of the table, "each salesperson" and "in 2023" dropped,
answered with confidence beside the second part's refusal. Kept whole, the question is
answered with both measures or refused naming what is left over. A first part with a
verb of its own is a question of its own, split as before."""

from __future__ import annotations

import pytest

from services.common.llm import QuestionClass
from services.router.offline._rules import classify, decompose


@pytest.mark.parametrize(
    "question",
    [
        "How many sales and how much revenue did each salesperson make in 2023?",
        "How many flights and how many passengers per airline in 2013?",
        "how much revenue and how many orders did each store have last year",
    ],
)
def test_a_measure_without_a_verb_stays_with_the_measure_that_has_one(question: str) -> None:
    assert [part.text for part in decompose(question)] == [question.strip()]
    assert classify(question) is not QuestionClass.COMPOUND


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("How many sales did we make and what was the revenue?", "How many sales did we make"),
        ("How many customers are there and how many of them are active?",
         "How many customers are there"),
    ],
)  # fmt: skip
def test_a_measure_with_its_own_verb_is_a_question_of_its_own(question: str, first: str) -> None:
    parts = decompose(question)
    assert len(parts) == 2
    assert parts[0].text == first
