"""Issue 45 (s59): a value swap that says the words before the earlier question's number
("switch to floor 7" after "Which rooms are on floor 2?") replaces that number. Where no
statement says which words were values (the earlier turn was refused), it was read as a
narrowing, "Which rooms are on floor 2 in floor 7?", a question asking for both floors.
Read for its structure (the same words before a number, said once), never for a script's
words."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import resolve


def _asked(question: str) -> PriorTurn:
    """A previous turn that was refused: no statement says which words were values."""
    return PriorTurn(question, question, row_count=0)


@pytest.mark.parametrize(
    ("prior", "question", "resolved"),
    [
        ("Which rooms are on floor 2?", "switch to floor 7", "Which rooms are on floor 7?"),
        ("How many seats are in row 12?", "what about row 14?", "How many seats are in row 14?"),
        ("List the members at level 1.", "level 3 instead", "List the members at level 3?"),
    ],
)  # fmt: skip
def test_the_number_after_the_same_words_is_replaced(
    prior: str, question: str, resolved: str
) -> None:
    resolution = resolve(question, [_asked(prior)])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == resolved


@pytest.mark.parametrize(
    ("prior", "question"),
    [
        # other words before the number: not the same thing, nothing is replaced by it
        ("Which rooms are on floor 2?", "switch to wing 7"),
        # the words said before two numbers: which one is meant is unsaid
        ("Which rooms on floor 2 face floor 3?", "what about floor 7?"),
    ],
)  # fmt: skip
def test_no_number_is_replaced_unless_the_same_words_say_it_once(prior: str, question: str) -> None:
    # the earlier number stays: the rule replaced nothing (the earlier reading holds)
    assert "floor 2" in resolve(question, [_asked(prior)]).question
