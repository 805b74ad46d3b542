"""Sentences the records service reads as one question are not split into steps (issue
45, s60): "Which female patients have private insurance? Give their first names, last
names and insurance type." says in its second sentence what to show of all the rows the
first asks for (split, it was asked of the first row's label alone, and the rows came
without the columns asked for); "…, and how many?" has no noun but the count before it
(split, a bare "how many?" was a step of its own). A second sentence about documents
stays a step of its own."""

from __future__ import annotations

from services.router.offline._rules import decompose


def test_a_sentence_saying_what_to_show_of_the_rows_stays_with_them() -> None:
    question = (
        "Which female patients have private insurance? "
        "Give their first names, last names and insurance type."
    )
    assert [p.text for p in decompose(question)] == [question]


def test_a_closing_how_many_stays_with_its_count() -> None:
    question = "Which customers have made more than 3 transactions, and how many?"
    assert [p.text for p in decompose(question)] == [question]


def test_documents_of_the_rows_are_still_a_step_of_their_own() -> None:
    for second in ("Give their call notes.", "Summarise their call notes."):
        parts = decompose(f"Which accounts have the most open deals? {second}")
        assert len(parts) == 2 and parts[1].after_previous


def test_a_count_with_its_own_noun_is_still_a_step_of_its_own() -> None:
    parts = decompose("List the open deals, and how many contacts do we have?")
    assert len(parts) == 2
