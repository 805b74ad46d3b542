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
from services.router.offline._negation import negated_stems, stated_negations, with_negatives

RESULTS = Path(__file__).parents[4] / "bench/results"
PAGES = RESULTS / "ISSUE-48-probes-r3/corpus"


def _passages(path: Path) -> list[Passage]:
    text = normalise(as_markdown(extract(path.read_bytes(), path.name)))
    chunks = chunk_text(text, ContentType.MARKDOWN)
    return [Passage(str(n), c.text, path.name, 0.1) for n, c in enumerate(chunks, 1)]


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    return _passages(PAGES / "cat.html")


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


# Round 4: holding the word is not saying it negated. test(1)'s "-z … is zero" holds
# every word "-n … is nonzero" holds; cut(1)'s -f line "also print any line that
# contains no delimiter" says "print" plainly, -s says "do not print". Files: test.html
# (ISSUE-48-probes-r3) and cut.html (ISSUE-48-probes-r4c), coreutils 9.1.
@pytest.mark.parametrize(
    ("page", "question", "stating", "opposite"),
    [
        (
            "ISSUE-48-probes-r3/corpus/test.html",
            "Which test expression is true when the length of a string is not zero?",
            "-n STRING",
            "-z STRING",
        ),
        (
            "ISSUE-48-probes-r4c/corpus/cut.html",
            "Which cut option makes it not print lines that hold no delimiter?",
            "--only-delimited",
            "--fields",
        ),
    ],
)
def test_the_unit_stating_the_negation_ranks_above_its_opposite(
    page: str, question: str, stating: str, opposite: str
) -> None:
    ranked = ranked_sentences(question, _passages(RESULTS / page))
    assert stating in ranked[0].text
    assert any(opposite in c.text for c in ranked[1:])


def test_a_negation_stated_by_prefix_or_by_a_word_before_it() -> None:
    negated = negated_stems("Which option does not print lines that are not empty?")
    assert negated == {"print", "empty"}
    assert stated_negations("number nonempty lines", negated) == {"empty"}
    assert stated_negations("-n, --no-print do not print; skip non-empty", negated) == {
        "print",
        "empty",
    }
    # The plain word, or a negation a content word away, states nothing negated.
    assert stated_negations("print only empty lines", negated) == frozenset()
    assert stated_negations("never silently print them", negated) == frozenset()
