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


BUYS = PriorTurn(
    "number of buys per ticker in Q1 2023?",
    "number of buys per ticker in Q1 2023?",
    row_count=4,
    sql="SELECT t.sbtickersymbol, COUNT(*) FROM sbtransaction AS x JOIN sbticker AS t "
    "ON x.sbtxtickerid = t.sbtickerid WHERE x.sbtxdatetime >= '2023-01-01' "
    "AND x.sbtxdatetime < '2023-04-01' AND x.sbtxtype = 'buy' GROUP BY t.sbtickersymbol",
)
CATEGORY = PriorTurn(
    "products per store in the toy category",
    "products per store in the toy category",
    row_count=2,
    sql="SELECT store, COUNT(*) FROM products WHERE category = 'Toy' AND kind = 'Sales' "
    "GROUP BY store",
)


@pytest.mark.parametrize(
    ("prior", "question", "literal"),
    [
        # the value said in the plural of the literal the statement compares with
        # (issue 45 s65 defog v8 broker-p2#3): the literal as the statement spells it
        (BUYS, "all types, not just buys", "buy"),
        (CATEGORY, "all of them, not just toys", "Toy"),
        # a literal stored in the plural is the value said, not a singular of it
        (CATEGORY, "all kinds, not just Sales", "Sales"),
    ],
)
def test_not_just_a_plural_of_a_compared_value_removes_its_condition(prior, question, literal):
    assert drops_condition(question, [prior]) == literal
    resolution = resolve(question, [prior])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(
        prior.sql, Relation.FILTER, condition=literal, remove=True
    )


@pytest.mark.parametrize("question", ["all types, not just sells", "all types, not just bus"])
def test_not_just_a_value_the_statement_does_not_compare_is_no_removal(question):
    assert drops_condition(question, [BUYS]) is None


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
