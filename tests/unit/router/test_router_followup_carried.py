"""Issue 45 (s59): a value swap after a question about the earlier rows, which says no
value itself ("how many trips did each of them make there?" after "Which drivers drove
to Leeds?"), replaces the value its statement carried from the question that said it.
It was unresolved ("the previous question names nothing that 'York' could replace").
Read for the statement's structure, never for a script's words."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import Relation, resolve

FIRST = PriorTurn(
    "Which drivers drove to Leeds?",
    "Which drivers drove to Leeds?",
    members=("ann", "bo"),
    row_count=2,
    sql="SELECT DISTINCT t0.driver AS driver FROM public.trips AS t0 WHERE (t0.town = 'Leeds')",
)
THERE = PriorTurn(
    "how many trips did each of them make there?",
    "How many trips did each of the previous answer's rows make there?",
    row_count=2,
    sql=(
        "SELECT t0.driver AS driver, COUNT(*) AS count FROM public.trips AS t0 WHERE t0.driver"
        " IN (SELECT earlier.driver FROM (SELECT DISTINCT earlier_t0.driver AS driver FROM"
        " public.trips AS earlier_t0 WHERE (earlier_t0.town = 'Leeds')) AS earlier) AND"
        " t0.town = 'Leeds' GROUP BY t0.driver"
    ),
)


@pytest.mark.parametrize("question", ["switch to York", "what about York?"])
def test_the_value_the_statement_carried_is_swapped(question: str) -> None:
    resolution = resolve(question, [FIRST, THERE])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert "York in place of Leeds" in resolution.question
    assert resolution.builds_on is not None
    assert resolution.builds_on.relation is Relation.VALUE_SWAP
    assert (resolution.builds_on.sql, resolution.builds_on.value) == (THERE.sql, "York")


def test_a_value_no_question_said_or_of_another_shape_is_not_swapped() -> None:
    # a code for a name: not the value the statement carried
    assert resolve("what about YRK?", [FIRST, THERE]).kind is FollowUpKind.UNRESOLVED
    # the statement's value was never said by a question of the conversation
    unsaid = PriorTurn(FIRST.question, "Which drivers drove there?", FIRST.members, 2,
                       sql=FIRST.sql)  # fmt: skip
    assert resolve("switch to York", [unsaid, THERE]).kind is FollowUpKind.UNRESOLVED
