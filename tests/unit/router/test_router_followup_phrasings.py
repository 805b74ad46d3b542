"""Follow-ups said in ways the first rules did not read (issue 45, round 3): a row count
changed with a verb ("trim it to 4"), a value said with "instead" or with the one it
replaces ("Texas rather than Ohio"), one earlier row pointed at ("what did he buy?",
"that client"), a regrouping "rather than" the old grouping, a narrowing said in the
past participle ("restricted to"). Each is read for its structure, never for a script's
words; a pointer with no one row to point at is refused, not read as a new question."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

RANKED = PriorTurn(
    "Which 3 customers spent the most?",
    "Which 3 customers spent the most?",
    row_count=3,
    sql="SELECT c.name, SUM(o.amount) AS total FROM customers AS c JOIN orders AS o "
    "ON o.customer_id = c.id GROUP BY c.name ORDER BY total DESC LIMIT 3",
)
IN_OHIO = PriorTurn(
    "How many customers are there in Ohio?",
    "How many customers are there in Ohio?",
    row_count=1,
    sql="SELECT COUNT(*) FROM customers WHERE state = 'Ohio'",
)
IN_TIER = PriorTurn(
    "Which accounts are in tier 2?",
    "Which accounts are in tier 2?",
    row_count=4,
    sql="SELECT name FROM accounts WHERE tier = 2",
)
ONE_CUSTOMER = PriorTurn(
    "Which customer joined first?",
    "Which customer joined first?",
    members=("Ann Lee",),
    row_count=1,
    sql="SELECT name FROM customers ORDER BY joined LIMIT 1",
)
BY_STATE = PriorTurn(
    "How many customers are there in each state?",
    "How many customers are there in each state?",
    row_count=12,
    sql="SELECT state, COUNT(*) FROM customers GROUP BY state",
)


@pytest.mark.parametrize(
    ("question", "rows"),
    [("trim it to 4", 4), ("bring that down to two", 2), ("expand it to 10", 10),
     ("make it a top five", 5), ("keep the leading 2", 2), ("reduce the list to one", 1)],
)  # fmt: skip
def test_a_row_count_changed_with_a_verb_is_a_limit(question: str, rows: int) -> None:
    resolution = resolve(question, [RANKED])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(RANKED.sql, Relation.ROW_LIMIT, limit=rows)


@pytest.mark.parametrize("question", ["Texas instead", "the Texas ones instead.", "Texas then?"])
def test_a_value_said_with_instead_replaces_the_compared_one(question: str) -> None:
    resolution = resolve(question, [IN_OHIO])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == "How many customers are there in Texas?"
    assert resolution.builds_on == BuildsOn(IN_OHIO.sql, Relation.VALUE_SWAP, value="Texas")


def test_a_number_said_with_its_column_word_and_instead_replaces_the_number() -> None:
    resolution = resolve("tier 5 instead", [IN_TIER])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == "Which accounts are in tier 5?"


@pytest.mark.parametrize(
    "question", ["replace Ohio with Texas", "swap Ohio for Texas", "Texas rather than Ohio",
                 "and Texas instead of Ohio?"],
)  # fmt: skip
def test_a_value_said_with_the_one_it_replaces_is_swapped_there(question: str) -> None:
    resolution = resolve(question, [IN_OHIO])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == "How many customers are there in Texas?"


@pytest.mark.parametrize(
    "question", ["Which customers prefer email rather than phone?",
                 "list the accounts that pay yearly instead of monthly"],
)  # fmt: skip
def test_a_question_of_its_own_with_rather_than_is_no_swap(question: str) -> None:
    assert resolve(question, [IN_OHIO]).kind is FollowUpKind.STANDALONE


def test_a_replaced_value_the_previous_question_never_said_is_refused() -> None:
    resolution = resolve("replace Iowa with Texas", [IN_OHIO])
    assert resolution.kind is FollowUpKind.UNRESOLVED
    assert "Iowa" in resolution.reason


@pytest.mark.parametrize(
    "question", ["what did he buy?", "where does she live?", "what is his email?",
                 "how much has that client spent?", "when did this person join?"],
)  # fmt: skip
def test_one_earlier_row_pointed_at_is_asked_about_the_rows(question: str) -> None:
    resolution = resolve(question, [ONE_CUSTOMER])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on == BuildsOn(
        ONE_CUSTOMER.sql, Relation.RESULT_SET, question=question
    )


def test_a_pointer_at_one_row_of_several_is_refused() -> None:
    resolution = resolve("what did he buy?", [RANKED])
    assert resolution.kind is FollowUpKind.UNRESOLVED
    assert "3 rows" in resolution.reason


def test_a_pointer_after_an_answer_that_showed_nothing_is_refused() -> None:
    refused = PriorTurn("Which customer joined first?", "Which customer joined first?")
    resolution = resolve("what did she buy?", [refused])
    assert resolution.kind is FollowUpKind.UNRESOLVED


@pytest.mark.parametrize(
    "question", ["Which customers that joined in 2020 spent the most?",
                 "List the orders that shipped late", "How many orders came in this quarter?"],
)  # fmt: skip
def test_a_relative_that_is_no_pointer(question: str) -> None:
    assert resolve(question, [ONE_CUSTOMER]).kind is FollowUpKind.STANDALONE


def test_that_list_is_the_whole_answer_not_one_row_of_it() -> None:
    resolution = resolve("how many of them are in Ohio from that list?", [RANKED])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE


def test_a_regrouping_rather_than_the_old_grouping_replaces_it() -> None:
    resolution = resolve("split it by city rather than state", [BY_STATE])
    assert resolution.kind is FollowUpKind.BREAKDOWN
    assert resolution.builds_on == BuildsOn(BY_STATE.sql, Relation.REGROUP, dimension="city")


@pytest.mark.parametrize("question", ["restricted to CA", "limited to the CA ones"])
def test_a_narrowing_said_in_the_past_participle_is_a_filter(question: str) -> None:
    resolution = resolve(question, [BY_STATE])
    assert resolution.builds_on == BuildsOn(BY_STATE.sql, Relation.FILTER, condition="CA")
