"""A follow-up that removes a condition of the previous statement ("drop the delay
filter", issue 45 r6#2): a filter edit of the statement, not a request to change data,
only after an answer whose statement has a condition; requests to change data ("delete
all cancelled orders", "drop the orders table", "remove the cancelled orders") stay
declined, with or without an earlier answer."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, drops_condition, resolve
from tests.unit.router.fix_router import make_router

LATE = PriorTurn(
    "flights arriving more than 2 hours late per origin",
    "flights arriving more than 2 hours late per origin",
    row_count=3,
    sql="SELECT origin, COUNT(*) FROM flights WHERE arr_delay > 120 AND origin = 'JFK' "
    "GROUP BY origin",
)
UNFILTERED = PriorTurn(
    "How many flights per origin?",
    "How many flights per origin?",
    row_count=3,
    sql="SELECT origin, COUNT(*) FROM flights GROUP BY origin",
)
WRITES = ("Delete all cancelled orders", "drop the orders table", "remove the cancelled orders")


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("drop the delay filter", "delay"),
        ("remove the 2023 filter", "2023"),
        ("without the date condition", "date"),
        ("no filter on status", "status"),
        ("ok, lift the restriction", "filter"),
        ("all of them, not just JFK", "JFK"),
        # the name of a compared column, no "filter" said (issue 45 s64 car_dealership-p2#2)
        ("forget the origin, count them all", "origin"),
        ("ignore the arr delay", "arr delay"),
    ],
)
def test_removing_a_condition_builds_on_the_statement(question: str, words: str):
    assert drops_condition(question, [LATE]) == words
    resolution = resolve(question, [LATE])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(LATE.sql, Relation.FILTER, condition=words, remove=True)


@pytest.mark.parametrize(
    ("history", "question"),
    [
        ((), "drop the delay filter"),  # no earlier answer
        ((UNFILTERED,), "drop the delay filter"),  # a statement without a condition
        ((PriorTurn("q", "q", row_count=2),), "drop the delay filter"),  # no statement
        ((LATE,), "all of them, not just Delta"),  # a value it does not keep its rows to
        ((LATE,), "forget the carrier"),  # no column its conditions compare
        ((LATE,), "forget the JFK"),  # a value, not the name of a compared column
        *(((LATE,), write) for write in WRITES),  # data, not a condition
    ],
)
def test_no_condition_of_an_earlier_statement_named_is_no_removal(history, question):
    assert drops_condition(question, history) is None


@pytest.mark.parametrize("history", [(), (LATE,)])
@pytest.mark.parametrize("question", WRITES)
async def test_a_request_to_change_data_needs_no_resolving_before_or_after_an_answer(
    question: str, history: tuple[PriorTurn, ...]
):
    resolved = await make_router().follow_ups.resolve(question, history)
    assert resolved.resolution.kind is FollowUpKind.STANDALONE
    assert resolved.resolution.question == question


async def test_drop_the_filter_is_resolved_as_a_removal_not_declined():
    resolved = await make_router().follow_ups.resolve("drop the delay filter", (LATE,))
    assert resolved.resolution.kind is FollowUpKind.FILTER
    assert resolved.resolution.builds_on is not None and resolved.resolution.builds_on.remove
    assert "drop" not in resolved.resolution.question.lower()
