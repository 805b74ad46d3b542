"""Filters said in shapes the rules missed (issue 45, defog v4 script): the particle of
"leave … out" after its object, a verb of removing whose object is part of the rows
("drop the suspended ones": no request to change data), "of those, which are …?" (a
narrowing, not a question about the rows) and "what about those born after 1985?"
(another condition of the same shape, or one added). Each beside what stays as it was."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, hides_rows, resolve
from tests.unit.router.fix_router import make_router

PER_COUNTRY = PriorTurn(
    "How many users are there in each country?",
    "How many users are there in each country?",
    row_count=9,
    sql="SELECT country, COUNT(*) FROM users GROUP BY country",
)
FEMALE = PriorTurn(
    "List the female patients.",
    "List the female patients.",
    row_count=5,
    sql="SELECT first_name FROM patients WHERE gender = 'Female'",
)
BORN_BEFORE = PriorTurn(
    "How many patients born before 1985 live in each state?",
    "How many patients born before 1985 live in each state?",
    row_count=4,
    sql="SELECT state, COUNT(*) FROM patients WHERE born < '1985-01-01' GROUP BY state",
)


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        ("leave the placebo treatments out", "placebo treatments"),
        ("take the refunds out", "refunds"),
        ("keep the cheap ones out", "cheap"),
        ("drop the suspended ones", "suspended"),
        ("filter out cash", "cash"),
    ],
)
def test_an_exclusion_is_read_with_its_particle_after_the_object(question, condition):
    resolution = resolve(question, [PER_COUNTRY])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(
        PER_COUNTRY.sql, Relation.FILTER, condition=condition, exclude=True
    )


@pytest.mark.parametrize("question", ["leave it out", "take that out"])
def test_leaving_out_the_answer_itself_is_no_exclusion(question):
    assert resolve(question, [PER_COUNTRY]).kind is not FollowUpKind.FILTER


def test_removing_part_of_several_rows_hides_them_and_is_no_write():
    assert hides_rows("drop the suspended ones", [PER_COUNTRY])
    assert hides_rows("remove those that failed", [PER_COUNTRY])


@pytest.mark.parametrize(
    ("prior", "question"),
    [
        (PER_COUNTRY, "drop them"),  # no part of the rows
        (PER_COUNTRY, "delete the cancelled ones"),  # a verb that only changes data
        (PER_COUNTRY, "drop the users table"),  # names data
        (PriorTurn("How many users are there?", "How many users are there?", row_count=1,
                   sql="SELECT COUNT(*) FROM users"), "drop the suspended ones"),  # one row
        (PriorTurn("Which users are suspended?", "Which users are suspended?"),
         "drop the suspended ones"),  # nothing shown
    ],
)  # fmt: skip
def test_a_change_of_data_stays_one(prior, question):
    assert not hides_rows(question, [prior])


async def test_drop_the_ones_after_several_rows_is_resolved_as_an_exclusion():
    resolved = await make_router().follow_ups.resolve("drop the suspended ones", (PER_COUNTRY,))
    assert resolved.resolution.kind is FollowUpKind.FILTER
    assert resolved.resolution.builds_on == BuildsOn(
        PER_COUNTRY.sql, Relation.FILTER, condition="suspended", exclude=True
    )
    declined = await make_router().follow_ups.resolve("drop them", (PER_COUNTRY,))
    assert declined.resolution.kind is FollowUpKind.STANDALONE


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        ("of those, which are privately insured?", "privately insured"),
        ("among them, who were born in Texas?", "born in Texas"),
    ],
)
def test_which_are_after_of_those_narrows_the_rows(question, condition):
    resolution = resolve(question, [FEMALE])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(FEMALE.sql, Relation.FILTER, condition=condition)


@pytest.mark.parametrize(
    "question",
    [
        "of those, which are the oldest?",
        "among them, who are their doctors?",
        "of those, which is cheapest?",
    ],
)
def test_a_question_about_the_rows_after_of_those_is_no_narrowing(question):
    assert resolve(question, [FEMALE]).kind is not FollowUpKind.FILTER


def test_what_about_those_with_another_bound_replaces_the_one_said():
    resolution = resolve("what about those born after 1985?", [BORN_BEFORE])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == "How many patients born after 1985 live in each state?"
    assert resolution.builds_on == BuildsOn(
        BORN_BEFORE.sql, Relation.VALUE_SWAP, value="born after 1985"
    )


def test_what_about_those_with_a_condition_not_said_before_adds_it():
    resolution = resolve("what about those born after 1985?", [FEMALE])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(
        FEMALE.sql, Relation.FILTER, condition="born after 1985"
    )
    # no condition after "those": still a question about the rows
    assert resolve("what about those?", [FEMALE]).kind is FollowUpKind.RESULT_REFERENCE


PER_CUSTOMER = PriorTurn(
    "How many transactions has each customer made?",
    "How many transactions has each customer made?",
    row_count=18,
    sql="SELECT c.name, COUNT(*) FROM customers AS c JOIN transactions AS t "
    "ON t.customer_id = c.id GROUP BY c.id, c.name",
)


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        ("keep the ones with more than 2 transactions", "with more than 2 transactions"),
        ("keep those over 50000", "over 50000"),
        ("keep the vendors we paid more than 10000", "vendors we paid more than 10000"),
    ],
)
def test_keep_with_a_qualified_object_narrows_the_rows(question, condition):
    resolution = resolve(question, [PER_CUSTOMER])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(PER_CUSTOMER.sql, Relation.FILTER, condition=condition)


@pytest.mark.parametrize("question", ["keep the same", "keep the customers", "keep going"])
def test_keep_without_a_qualifier_is_no_narrowing(question):
    assert resolve(question, [PER_CUSTOMER]).kind is not FollowUpKind.FILTER
    # a row count said with "keep" stays one
    assert resolve("keep the top 3", [PER_CUSTOMER]).kind is FollowUpKind.LIMIT


FRENCH = PriorTurn(
    "How many singers are from France?",
    "How many singers are from France?",
    row_count=1,
    sql="SELECT COUNT(*) FROM singer WHERE country = 'France'",
)


@pytest.mark.parametrize(
    ("question", "condition"),
    [
        ("just those who performed at a concert in 2015", "who performed at a concert in 2015"),
        ("only the ones which sold out", "which sold out"),
    ],
)
def test_who_or_which_after_those_is_a_relative_clause_that_narrows(question, condition):
    resolution = resolve(question, [FRENCH])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(FRENCH.sql, Relation.FILTER, condition=condition)


@pytest.mark.parametrize("question", ["just who performed?", "only which ones are French?"])
def test_who_or_which_not_after_those_still_asks(question):
    built = resolve(question, [FRENCH]).builds_on
    assert built is None or built.relation is not Relation.FILTER
