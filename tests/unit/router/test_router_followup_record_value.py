"""Issue 45 (s60): a follow-up that narrows or swaps a value of the previous SQL answer
stays on its statement, though the value is named with a record noun or reads like a
question. After "How many paragraphs are there in total?", "only in the document
Customer reviews" was read as a question about what documents say (the word
"document") and lost the statement; "and in How to write a CV?" (a stored document
title) was read as a new question ("How to ..."). A record noun before a value says
where the value is, and a value swapped in is data, not a cue; a follow-up asking what
text says still leaves the statement."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import Relation, resolve

COUNT = PriorTurn(
    "How many pages are there in total?",
    "How many pages are there in total?",
    row_count=1,
    sql="SELECT COUNT(*) AS count FROM public.pages AS t0",
)
NARROWED = PriorTurn(
    "only in the document Travel guide",
    "How many pages in the document Travel guide are there in total?",
    row_count=1,
    sql="SELECT COUNT(*) AS count FROM public.pages AS t0 JOIN public.documents AS t1"
    " ON t1.document_id = t0.document_id WHERE (t1.document_name = 'Travel guide')",
)


@pytest.mark.parametrize("noun", ["document", "sheet"])
def test_a_narrowing_to_a_named_record_keeps_the_statement(noun: str):
    resolution = resolve(f"only in the {noun} Travel guide", [COUNT])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on is not None
    assert (resolution.builds_on.relation, resolution.builds_on.sql) == (
        Relation.FILTER,
        COUNT.sql,
    )


def test_a_title_swapped_in_keeps_the_statement_whatever_its_words():
    resolution = resolve("and in How to bake bread?", [COUNT, NARROWED])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert (
        resolution.question
        == "How many pages in the document How to bake bread are there in total?"
    )
    assert resolution.builds_on is not None
    assert (resolution.builds_on.sql, resolution.builds_on.value) == (
        NARROWED.sql,
        "How to bake bread",
    )


@pytest.mark.parametrize(
    "follow_up",
    ["only those whose notes mention pricing", "what do their documents say about pricing?"],
)
def test_a_follow_up_about_what_text_says_leaves_the_statement(follow_up: str):
    resolution = resolve(follow_up, [COUNT])
    assert resolution.builds_on is None or not resolution.builds_on.sql


@pytest.mark.parametrize("follow_up", ["and in which year?", "and in how many documents?"])
def test_a_question_after_and_in_is_no_swap(follow_up: str):
    assert resolve(follow_up, [COUNT, NARROWED]).kind is FollowUpKind.STANDALONE


LISTED = PriorTurn(
    "List the names of properties with fewer than 5 rooms.",
    "List the names of properties with fewer than 5 rooms.",
    members=("Longacre", "Parc East"),
    row_count=2,
    sql="SELECT t0.property_name FROM public.properties AS t0 WHERE (t0.room_count < 5)",
)


@pytest.mark.parametrize(
    "follow_up", ["just those with a feature", "only the ones that have at least one feature"]
)
def test_a_filter_saying_only_that_a_related_row_exists_keeps_the_statement(follow_up: str):
    """'feature' is a reading cue ("product features"), but said as the having of one
    related row it names a kind of row, not text: the SQL service reads it (before: the
    follow-up left the statement for the documents and was refused)."""
    resolution = resolve(follow_up, [LISTED])
    assert resolution.builds_on is not None
    assert (resolution.builds_on.relation, resolution.builds_on.sql) == (
        Relation.FILTER,
        LISTED.sql,
    )


@pytest.mark.parametrize(
    "follow_up", ["only those whose notes mention a feature", "just those with feature requests"]
)
def test_a_filter_naming_text_beside_having_one_still_leaves_the_statement(follow_up: str):
    resolution = resolve(follow_up, [LISTED])
    assert resolution.builds_on is None or not resolution.builds_on.sql
