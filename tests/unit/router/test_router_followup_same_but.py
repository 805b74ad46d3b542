"""A follow-up led by "same but" (ISSUE-45, s61 fresh script): the previous request with
what follows "but" changed, read as that change said alone ("by customer state", "only
buys", "top 3"). Before, "same but by customer state" was a new question and refused
("could not place 'but'"). A change that alone reads as a new question ("from lga") is
a value of the previous request said with its preposition, read as "what about from
lga?" says it (s62: dropped in s61 only because the first turn it swapped on was wrong,
which it no longer is); "but" without "same", and "same" words that are no such lead,
stay as they were."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import resolve

BY_TYPE = PriorTurn(
    "how many transactions per ticker type",
    "how many transactions per ticker type",
    row_count=2,
    sql="SELECT t.type, COUNT(*) FROM transactions x JOIN tickers t ON x.ticker_id = t.id "
    "GROUP BY t.type",
)
FROM_JFK = PriorTurn(
    "top 5 destinations from jfk by number of flights",
    "top 5 destinations from jfk by number of flights",
    row_count=5,
    sql="SELECT dest, COUNT(*) AS n FROM flights WHERE origin = 'JFK' GROUP BY dest "
    "ORDER BY n DESC LIMIT 5",
)


@pytest.mark.parametrize(
    ("question", "prior", "kind", "resolved"),
    [
        ("same but by customer state", BY_TYPE, FollowUpKind.BREAKDOWN, "customer state"),
        ("same thing, but only buys", BY_TYPE, FollowUpKind.FILTER, "buys"),
        ("Same but top 3", FROM_JFK, FollowUpKind.LIMIT, "top 3"),
    ],
)
def test_same_but_changes_the_previous_request(
    question: str, prior: PriorTurn, kind: FollowUpKind, resolved: str
) -> None:
    resolution = resolve(question, [prior])
    assert resolution.kind is kind
    assert resolved in resolution.question and "same" not in resolution.question.lower()
    assert resolution.builds_on is not None and resolution.builds_on.sql == prior.sql


def test_same_but_a_value_with_its_preposition_swaps_the_value() -> None:
    resolution = resolve("same but from lga", [FROM_JFK])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.builds_on is not None and resolution.builds_on.value.lower() == "lga"
    assert resolution.builds_on.sql == FROM_JFK.sql
    assert "from lga" in resolution.question and "jfk" not in resolution.question


@pytest.mark.parametrize(
    "question", ["but from lga", "same day flights but not from jfk", "same but by state"]
)
def test_other_leads_are_left_as_they_were(question: str) -> None:
    """ "but" alone, a "same" that qualifies a noun, "same but" with nothing before it,
    and a change that alone is a new question are read as before (a new question)."""
    history = [FROM_JFK] if question != "same but by state" else []
    assert resolve(question, history).kind is FollowUpKind.STANDALONE
