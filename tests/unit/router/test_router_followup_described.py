"""Issue 45 (s59): "where is she from?" after an answer that was refused. The pointer names
the one row the earlier question asked for; with no rows to point into it was refused,
though the earlier question says which set it asked for ("Which nurses work on ward 3?"),
and asked about that set it is a question of its own ("Where are the nurses that work on
ward 3 from?"). Read for the pronoun's grammar and the earlier question's shape, never
for a script's words; where the earlier question lists no plural set, or the pointer can
name an event or an amount (a bare "that"), it stays refused."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import resolve


def _refused(question: str) -> PriorTurn:
    """A previous turn that was refused: no statement, no rows, no members."""
    return PriorTurn(question, question)


LISTED = _refused("Which nurses work on ward 3?")


@pytest.mark.parametrize(
    ("question", "resolved"),
    [
        ("where is she from?", "Where are the nurses that work on ward 3 from?"),
        ("which shifts does he cover?", "Which shifts do the nurses that work on ward 3 cover?"),
        ("what is his salary?", "What is the salary of the nurses that work on ward 3?"),
        ("how old is that nurse?", "How old are the nurses that work on ward 3?"),
        ("which ward is he on?", "Which ward are the nurses that work on ward 3 on?"),
    ],
)  # fmt: skip
def test_a_pointer_after_a_refused_listing_asks_about_the_set_it_described(
    question: str, resolved: str
) -> None:
    resolution = resolve(question, [LISTED])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.question == resolved
    assert resolution.builds_on is None  # no statement to build on: asked as a question


@pytest.mark.parametrize(
    "prior",
    [
        # a superlative of one: no plural set to name
        "Which nurse joined first?",
        # a count showed one number, no row for "she" to be
        "How many nurses work on ward 3?",
        # an amount: no set at all
        "How much did the ward spend in total?",
    ],
)
def test_a_pointer_after_a_refusal_that_listed_no_set_stays_refused(prior: str) -> None:
    resolution = resolve("where is she from?", [_refused(prior)])
    assert resolution.kind is FollowUpKind.UNRESOLVED
    assert "she" in resolution.reason


@pytest.mark.parametrize("question", ["at which wards was that?", "who made it?"])
def test_a_bare_that_or_it_can_name_an_event_and_stays_refused(question: str) -> None:
    # "that" may be the spending, the visit, the count: not the set the question listed
    assert resolve(question, [LISTED]).kind is FollowUpKind.UNRESOLVED


@pytest.mark.parametrize(
    "question",
    [
        # a relative "that" after its noun: the question says whom it means
        "Which nurses that work on ward 3 are from Leeds?",
        # a pronoun whose antecedent the question itself names
        "Which nurse said she was from Leeds?",
        # a new question that starts with "and"
        "and which doctors work on ward 5?",
    ],
)
def test_a_question_that_names_its_own_referent_stays_standalone(question: str) -> None:
    resolution = resolve(question, [LISTED])
    assert resolution.kind is FollowUpKind.STANDALONE
    assert resolution.question == question


def test_their_after_a_refused_who_are_question_names_the_set_it_asked_for() -> None:
    # "Who are the …?" asks for a set as "Which …?" does: the copula's complement names it
    prior = _refused("Who are the top 3 nurses by overtime?")
    resolution = resolve("and their phone numbers?", [prior])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.question == "The phone numbers of the top 3 nurses by overtime?"


@pytest.mark.parametrize("prior", ["Who is the oldest nurse?", "Who trained the nurses on ward 3?"])
def test_a_who_question_that_asks_for_no_set_names_none(prior: str) -> None:
    # "who is" asks for one person, "who trained …" for the subject of a verb: no set
    resolution = resolve("and their phone numbers?", [_refused(prior)])
    assert resolution.kind is FollowUpKind.UNRESOLVED
