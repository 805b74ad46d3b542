"""The digits of a name ("ASN.1", "UTF-8") are no number the question asks for (issue
48, round 2).

The question's numbers join its words as terms ("hired in 1888", "protocol number 89"),
and "ASN.1" gave the number "1": every sentence that says "ASN.1" then held one more of
the question's terms, a rare one by its weight, and out-ranked the sentence that
answers in the question's other words ("The C-style /*, */ comments are not supported"
lost to "… a single file with ASN.1 definitions …" on another page). On a real file:
libtasn1's manual (PDF typeset by texinfo), through the product's extractor and chunker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.llm import Passage
from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract
from services.router.offline._extractive import question_numbers, synthesize

MANUAL = Path(__file__).parents[4] / "services/bench/devsets/documents/corpus"


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    name = "libtasn1-utilities.pdf"
    text = normalise(as_markdown(extract((MANUAL / name).read_bytes(), name)))
    chunks = chunk_text(text, ContentType.MARKDOWN)
    return [Passage(str(n), c.text, name, 0.1) for n, c in enumerate(chunks, 1)]


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Can an ASN.1 file have C-style comments?", "comments are not supported"),
        ("How do comments begin in ASN.1 files?", "The comments begin with --"),
    ],
)
def test_a_name_with_digits_does_not_outweigh_the_question_words(
    passages: list[Passage], question: str, said: str
) -> None:
    answer = synthesize(question, passages, (), False)
    assert said in answer.sentences[0].text


def test_numbers_are_still_numbers() -> None:
    assert question_numbers("Which protocol has number 89, hired in 1888?") == ["89", "1888"]
    assert question_numbers("From 2019-2020, at 3.5% of 1,000?") == ["2019", "2020", "3.5", "1,000"]
    assert question_numbers("Are ASN.1, UTF-8 and x86 names?") == []
