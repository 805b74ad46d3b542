"""Issue 45 (s62, cold scripts): a value swap said as a number with its noun ("now 2
bedrooms") after a question that says another number before that noun ("… of 3 bedroom
houses") replaces the number only, however the noun is inflected or joined. The whole
"2 bedrooms" was put in place of a word of the question and the old number stayed beside
it ("… of 3 2 bedrooms houses"), which the SQL service refused."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import resolve

HOUSES = PriorTurn(
    "only 3 bedroom houses",
    "average price per town of 3 bedroom houses?",
    row_count=5,
    sql="SELECT t0.town AS town, AVG(t0.price) AS avg_price FROM public.houses AS t0 "
    "WHERE (t0.bedrooms = 3) GROUP BY t0.town",
)


@pytest.mark.parametrize(
    "follow_up", ["now 2 bedrooms", "what about 2-bedroom ones?", "and 2 bedroom?"]
)
def test_a_number_said_with_its_noun_replaces_the_number_before_that_noun(follow_up: str):
    resolution = resolve(follow_up, [HOUSES])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == "average price per town of 2 bedroom houses?"
    # the value as the question now says it, for the SQL service to place
    assert resolution.builds_on is not None
    assert resolution.builds_on.value == "2 bedroom"


def test_a_number_with_a_noun_the_question_does_not_count_is_no_renumbering():
    # "2 garages": no number of the earlier question is said before "garage", so the
    # bedrooms keep their number and the value goes on as said
    resolution = resolve("now 2 garages", [HOUSES])
    assert "2 bedroom" not in resolution.question
    assert resolution.builds_on is None or resolution.builds_on.value == "2 garages"
