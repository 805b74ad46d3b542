"""A question's "not X" is held by a text's "unX"/"nonX" (issue 48, round 3).

Questions negate with a separate "not" ("output lines that are not empty"), reference
text with a prefix ("number nonempty output lines"). A stem match saw only the plain
word, so the option stating the question's condition lost to one sharing other words
("-s, --squeeze-blank suppress repeated empty output lines"). On a real file: cat(1)
of this machine's coreutils, rendered to HTML (``ISSUE-48-probes-r3/build.py``),
through the product's extractor and chunker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.llm import Passage
from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract
from services.router.offline._extractive import ranked_sentences
from services.router.offline._negation import negated_stems, with_negatives

PAGES = Path(__file__).parents[4] / "bench/results/ISSUE-48-probes-r3/corpus"


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    name = "cat.html"
    text = normalise(as_markdown(extract((PAGES / name).read_bytes(), name)))
    chunks = chunk_text(text, ContentType.MARKDOWN)
    return [Passage(str(n), c.text, name, 0.1) for n, c in enumerate(chunks, 1)]


@pytest.mark.parametrize(
    ("question", "line", "word"),
    [
        ("Which option of cat numbers the lines that are not empty?", "--number-nonblank", "empty"),
    ],
)
def test_a_negated_word_is_held_by_its_prefixed_negative(
    passages: list[Passage], question: str, line: str, word: str
) -> None:
    ranked = ranked_sentences(question, passages)
    stating = next(c for c in ranked if line in c.text)
    assert word in stating.matched
    # Holding one more of the question's words, it ranks above every option line that
    # does not say the condition.
    others = [c for c in ranked if c.text.startswith("-") and line not in c.text]
    assert all(stating.score > c.score for c in others)


def test_the_negated_words_of_a_question() -> None:
    assert negated_stems("Can df report on a file system that is not mounted?") == {"mount"}
    assert negated_stems("What if the files do not exist?") == {"exist"}
    assert negated_stems("What if it isn't known?") == {"known"}
    assert negated_stems("Which files are mounted?") == frozenset()


def test_only_un_and_non_negate() -> None:
    stems = frozenset({"unmount", "nonexistent", "index", "amount"})
    negated = frozenset({"mount", "exist", "dex"})
    assert with_negatives(stems, negated) == stems | {"mount", "exist"}
