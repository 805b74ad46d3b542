"""Issue 45 (s60): a regroup replaces the earlier question's whole grouping phrase. "by
carrier instead" after "How many flights went to MIA from each origin airport in
September?" was read as "... from each carrier airport in September?", a question the
SQL service cannot read, where the earlier turn left no statement to regroup; the
spelled-out "... for each carrier" is answered. A grouping said with two nouns ("each
origin airport", "per product category") is replaced whole; a verb after the grouping
("did each carrier operate from EWR") stays."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import resolve


def _said(question: str) -> PriorTurn:
    # an earlier turn whose statement is gone (refused): the question is rewritten
    return PriorTurn(question, question, row_count=0)


@pytest.mark.parametrize(
    ("earlier", "follow_up", "resolved"),
    [
        (
            "How many flights went to MIA from each origin airport in September?",
            "by carrier instead",
            "How many flights went to MIA from each carrier in September?",
        ),
        (
            "How many shipments left from each loading dock?",
            "per warehouse instead",
            "How many shipments left from each warehouse?",
        ),
        (
            "How many orders did each sales region have?",
            "by customer instead",
            "How many orders did each customer have?",
        ),
        (
            "What was the revenue for each product category last year?",
            "by store instead",
            "What was the revenue for each store last year?",
        ),
    ],
)
def test_a_grouping_said_with_two_nouns_is_replaced_whole(earlier, follow_up, resolved):
    resolution = resolve(follow_up, [_said(earlier)])
    assert (resolution.kind, resolution.question) == (FollowUpKind.BREAKDOWN, resolved)


@pytest.mark.parametrize(
    ("earlier", "follow_up", "resolved"),
    [
        # the word after the grouping is the verb an auxiliary waits for
        (
            "How many flights did each carrier operate from EWR in July?",
            "by origin instead",
            "How many flights did each origin operate from EWR in July?",
        ),
        # one noun, then a preposition: as before
        (
            "What was the average temperature at each airport in 2013?",
            "by month instead",
            "What was the average temperature at each month in 2013?",
        ),
    ],
)
def test_the_words_after_a_one_noun_grouping_stay(earlier, follow_up, resolved):
    resolution = resolve(follow_up, [_said(earlier)])
    assert (resolution.kind, resolution.question) == (FollowUpKind.BREAKDOWN, resolved)
