"""A phrase said alone after an answer whose statement compares a text value ("delta?"
after the United flights per origin, ISSUE-45 s62, nycflights13 v5): offered to the SQL
service as a swap of that value, said as asked (whether the phrase is a stored value of
the compared column is read there, from the stored values; where it is none, the phrase
is read as asked, as before). The router reads no schema and rewrites nothing around
the phrase. Before, "delta?" was read as a new question and refused."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

UNITED = PriorTurn(
    "just united",
    "number of flights per origin airport that are united?",
    row_count=3,
    sql="SELECT t0.origin, COUNT(*) FROM flights AS t0 JOIN airlines AS a "
    "ON a.carrier = t0.carrier WHERE a.name = 'United Air Lines Inc.' GROUP BY t0.origin",
)
PER_ORIGIN = PriorTurn(
    "number of flights per origin airport",
    "number of flights per origin airport",
    row_count=3,
    sql="SELECT origin, COUNT(*) FROM flights GROUP BY origin",
)


@pytest.mark.parametrize(("question", "value"), [("delta?", "delta"), ("JetBlue", "JetBlue")])
def test_a_bare_phrase_after_a_compared_text_value_is_offered_as_a_swap(
    question: str, value: str
) -> None:
    resolution = resolve(question, [UNITED])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == question  # read as asked where it swaps nothing
    assert resolution.builds_on == BuildsOn(UNITED.sql, Relation.VALUE_SWAP, value=value)


@pytest.mark.parametrize(
    ("question", "prior"),
    [("delta?", PER_ORIGIN), ("thanks", UNITED), ("why?", UNITED), ("only those", UNITED),
     ("from lga?", UNITED), ("list everything", UNITED)],
)  # fmt: skip
def test_other_bare_phrases_stay_new_questions(question: str, prior: PriorTurn) -> None:
    """After a statement that compares no text value there is nothing to swap; a word of
    conversation, a pointer or a phrase led by a preposition is no value."""
    assert resolve(question, [prior]).kind is not FollowUpKind.VALUE_SWAP
