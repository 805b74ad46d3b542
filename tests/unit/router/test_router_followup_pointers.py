"""Follow-ups said in ways the rules did not read (issue 45, round 4): a row count said as
what the user wants ("I only need the first 2", "I'd like to see 5", "a single one is
fine", "show just the first"), one earlier row pointed at by a last "it" or "that" ("who
makes it?", "what size is that?") or by "that <noun>'s" after a contracted "is", and a
count said with a demonstrative ("those five"). Each is read for its shape, never for a
script's words. A pointer with no one row to point at is refused: read as a question of
its own, "who makes it?" answers about every row of the table (a confident wrong)."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

RANKED = PriorTurn(
    "Which 4 stores sold the most?",
    "Which 4 stores sold the most?",
    members=("North", "South", "East", "West"),
    row_count=4,
    sql="SELECT s.name, SUM(o.total) AS sold FROM stores AS s JOIN orders AS o "
    "ON o.store_id = s.id GROUP BY s.name ORDER BY sold DESC LIMIT 4",
)
ONE_PRODUCT = PriorTurn(
    "Which product sold the most?",
    "Which product sold the most?",
    members=("Kettle",),
    row_count=1,
    sql="SELECT p.name FROM products AS p ORDER BY p.sold DESC LIMIT 1",
)
REFUSED = PriorTurn("Which product sold the most?", "Which product sold the most?")


@pytest.mark.parametrize(
    ("question", "rows"),
    [("I only need the first 3", 3), ("I'd like to see 2", 2), ("i want the top two", 2),
     ("a single one is fine", 1), ("just a single one", 1), ("show just the first", 1),
     ("only the top", 1)],
)  # fmt: skip
def test_a_row_count_said_as_what_is_wanted_is_a_limit(question: str, rows: int) -> None:
    resolution = resolve(question, [RANKED])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(RANKED.sql, Relation.ROW_LIMIT, limit=rows)


@pytest.mark.parametrize(
    "question", ["I need the stores in Ohio", "I want to see all orders over 50"]
)
def test_a_wish_that_is_no_row_count_stays_a_question(question: str) -> None:
    assert resolve(question, [RANKED]).kind is not FollowUpKind.LIMIT


@pytest.mark.parametrize(
    "question", ["who makes it?", "what size is that?", "what's that product's price?"]
)
def test_a_last_it_or_that_after_one_row_asks_about_that_row(question: str) -> None:
    resolution = resolve(question, [ONE_PRODUCT])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on == BuildsOn(ONE_PRODUCT.sql, Relation.RESULT_SET, question=question)


@pytest.mark.parametrize(
    "question", ["who makes it?", "what size is that?", "what's that product's price?"]
)
def test_a_last_it_or_that_with_no_one_row_to_point_at_is_refused(question: str) -> None:
    assert resolve(question, [REFUSED]).kind is FollowUpKind.UNRESOLVED
    assert resolve(question, [RANKED]).kind is FollowUpKind.UNRESOLVED


def test_an_it_its_own_question_owns_is_no_pointer() -> None:
    asked = "Which product sold the most and who makes it?"
    assert resolve(asked, [REFUSED]).kind is FollowUpKind.STANDALONE


def test_a_count_with_a_demonstrative_must_be_the_rows_count() -> None:
    same = resolve("where are those four?", [RANKED])
    assert same.kind is FollowUpKind.RESULT_REFERENCE
    assert "four" not in same.question
    assert resolve("where are those two?", [RANKED]).kind is FollowUpKind.UNRESOLVED
