"""Value swaps said in ways the earlier rules misread (issue 45, s58): the new value said
with a verb of changing and no old one ("switch to Texas"), and, where no statement says
which value was compared, the slot chosen from the question's shape: the one the same
preposition opens, never a period for a value that is none, a code for a code and a name
for a name. Each is read for its structure, never for a script's words."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

IN_OHIO = PriorTurn(
    "How many customers are there in Ohio?",
    "How many customers are there in Ohio?",
    row_count=1,
    sql="SELECT COUNT(*) FROM customers WHERE state = 'Ohio'",
)


def _asked(question: str) -> PriorTurn:
    """A previous turn that was refused: no statement says which words were values."""
    return PriorTurn(question, question, row_count=0)


@pytest.mark.parametrize(
    "question", ["switch to Texas", "ok, switch to Texas?", "change to Texas", "move over to Texas"]
)
def test_a_value_said_with_a_verb_of_changing_and_no_old_one_is_swapped(question: str) -> None:
    resolution = resolve(question, [IN_OHIO])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == "How many customers are there in Texas?"
    assert resolution.builds_on == BuildsOn(IN_OHIO.sql, Relation.VALUE_SWAP, value="Texas")


def test_a_question_after_switch_to_is_no_swap() -> None:
    asked = "switch to which customers live in Texas?"
    assert resolve(asked, [IN_OHIO]).kind is not FollowUpKind.VALUE_SWAP


@pytest.mark.parametrize(
    ("prior", "question", "resolved"),
    [
        # the preposition said opens one slot of the previous question
        ("What was the average rainfall at BWI in July?", "and at DCA?",
         "What was the average rainfall at DCA in July?"),
        ("How many trains ran from Leeds to York?", "and from Hull?",
         "How many trains ran from Hull to York?"),
        # a name for a name, not for a code
        ("How many orders did Acme Corp ship out of SEA?", "what about Globex?",
         "How many orders did Globex ship out of SEA?"),
        # never a month for a value that is none
        ("Which stores did Nordic Foods supply in March?", "switch to Baltica",
         "Which stores did Baltica supply in March?"),
    ],
)  # fmt: skip
def test_the_slot_a_new_value_replaces_follows_the_question_shape(
    prior: str, question: str, resolved: str
) -> None:
    resolution = resolve(question, [_asked(prior)])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == resolved


def test_with_nothing_to_go_by_the_last_like_slot_is_replaced() -> None:
    """Two codes and no preposition said: the value the question ended on, as before."""
    resolution = resolve("what about SFO?", [_asked("How many flights went from JFK to LAX?")])
    assert resolution.question == "How many flights went from JFK to SFO?"
    # a month said is a period moved, not a value swapped
    moved = resolve("what about April?", [_asked("Which stores did Nordic Foods supply in March?")])
    assert moved.kind is FollowUpKind.TIME_SHIFT
