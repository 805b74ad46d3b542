"""Concise extractive answers: the best-supported sentence first, a second only beside a
close one of the same document, never a number that counts something else; a sentence
splitter that keeps initials, abbreviations, decimals and quotations whole; the words a
rewrite borrows from the best passages."""

from __future__ import annotations

import pytest

from services.common.llm import Passage
from services.router.offline import NO_ANSWER
from services.router.offline._extractive import feedback_words, rewrite, synthesize
from services.router.offline._text import split_sentences

TESLA = Passage(
    "1",
    "In 1884 Tesla moved to New York City, where he was hired by Thomas Edison. "
    "His patented AC motor was licensed by George Westinghouse, who hired Tesla in 1888 "
    "as a consultant. Tesla later worked on wireless lighting.",
    "Nikola Tesla",
    0.9,
)
PLAGUE = Passage(
    "2",
    "The Black Death reached Crimea by 1343. It killed 30-60% of Europe's population. "
    "Historians blamed the heavens for the outbreak at the time.",
    "Black Death",
    0.8,
)
OTHER = Passage(
    "3",
    "Westinghouse Electric was founded in Pittsburgh. It hired many engineers in the 1890s.",
    "Westinghouse Electric",
    0.7,
)


def _text(question: str, *passages: Passage) -> str:
    return " ".join(s.text for s in synthesize(question, passages, (), False).sentences)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Kurt H. Smith went home. Then he left.", ("Kurt H. Smith went home.", "Then he left.")),
        (
            "Allen led them out of St. George's Church. Three years later they left.",
            ("Allen led them out of St. George's Church.", "Three years later they left."),
        ),
        ('He said "stop." Then it ended.', ('He said "stop."', "Then it ended.")),
        (
            "The U.S. Army grew 3.5 percent. It grew.",
            ("The U.S. Army grew 3.5 percent.", "It grew."),
        ),
        (
            "Dr. Who met Mr. Smith. Was it late? Yes!",
            ("Dr. Who met Mr. Smith.", "Was it late?", "Yes!"),
        ),
        ("A list\n- first item\n- second item", ("A list", "first item", "second item")),
    ],
    ids=["initial", "abbreviation", "quote", "acronym-decimal", "titles", "bullets"],
)
def test_sentences_keep_initials_abbreviations_decimals_and_quotes(text, expected):
    assert split_sentences(text) == expected


def test_the_answer_is_the_sentence_holding_what_was_asked():
    # "who … in 1888": the year and the question's words point at Westinghouse's
    # sentence, not Edison's, though both say "hired".
    answer = _text("Who hired Tesla in 1888?", TESLA, PLAGUE)
    assert "George Westinghouse" in answer
    assert "Thomas Edison" not in answer


def test_a_when_question_prefers_a_sentence_with_a_date():
    museum = Passage(
        "1",
        "The museum opened to the public after a long campaign by its founders. "
        "The museum first opened to the public in 1857, in South Kensington.",
        "Museum",
        0.9,
    )
    answer = _text("When did the museum open to the public?", museum)
    assert answer.startswith("The museum first opened to the public in 1857")


def test_an_answer_is_short_and_reads_as_one_source():
    # Another document says nearly the same: the answer still cites one.
    echo = Passage("4", "Westinghouse hired Tesla as a consultant for a year.", "Pittsburgh", 0.8)
    result = synthesize("Who hired Tesla as a consultant?", (TESLA, echo, OTHER, PLAGUE), (), False)
    assert 1 <= len(result.sentences) <= 2
    assert {c for s in result.sentences for c in s.citations} == {"1"}
    assert sum(len(s.text.split()) for s in result.sentences) <= 60


def test_nothing_relevant_is_not_found():
    result = synthesize("What is the capital of France?", (TESLA, PLAGUE), (), False)
    assert not result.supported
    assert [s.text for s in result.sentences] == [NO_ANSWER]


def test_a_count_of_something_else_is_no_answer():
    # The passage counts clinics; the question asks for employees.
    clinics = Passage("1", "Acme Health runs 40 clinics across the state.", "Acme", 0.9)
    assert not synthesize(
        "How many employees does Acme Health have?", (clinics,), (), False
    ).supported
    assert "40 clinics" in _text("How many clinics does Acme Health run?", clinics)


def test_a_paraphrased_question_is_answered_from_its_stems():
    # "originally blamed" against "blamed … at the time": the words differ in form only.
    assert "heavens" in _text("What was the Black Death originally blamed on?", PLAGUE)


def test_feedback_words_are_the_passages_own_for_what_was_asked():
    words = feedback_words("Who licensed the AC motor?", (TESLA, PLAGUE))
    assert "westinghouse" in words and "patented" in words
    assert not {"licensed", "motor"} & set(words)
    assert feedback_words("Who licensed the AC motor?", ()) == []


def test_a_rewrite_carries_the_feedback_words_and_never_repeats():
    first = rewrite("Who licensed the AC motor?", ("Who licensed the AC motor?",), (), (TESLA,))
    assert "westinghouse" in first.query.split()
    second = rewrite("Who licensed the AC motor?", ("Who licensed the AC motor?", first.query), ())
    assert second.query != first.query
