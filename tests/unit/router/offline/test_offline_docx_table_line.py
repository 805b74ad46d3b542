"""A table answer from a Word table is one line, labels and row included, even when the
row's cells are long prose (issue 48: "a table question's answer is one line").

The row a question picks by a long prose cell ("Which tail option reopens a file that
has not changed size …") was named by that whole cell: "Meaning with --follow=name,
reopen a FILE … rarely useful — Option --max-unchanged-stats=N (row 6)", 46 words. Now
the naming cell is quoted by the words of it that hold the question's, and a long value
is cut where a clause ends, each cut marked "…". A row read as an option with its
description, whose first sentence alone is longer than an option's unit, is quoted up
to the semicolon that keeps it within it ("--foreground — Meaning: when not running
timeout directly from a shell prompt, allow COMMAND to read from the TTY and get TTY
signals"), the rest a sentence of its own. On real files: tail(1)'s and timeout(1)'s
options as DOCX tables (``tests/fixtures/docx/``), through the product's extractor and
chunker."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.llm import Passage
from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract
from services.router.offline._cells import LINE_WORDS
from services.router.offline._extractive import synthesize

FIXTURES = Path(__file__).parents[3] / "fixtures" / "docx"


def _passages(name: str, title: str) -> list[Passage]:
    """The guide's chunks, its table's first (as a search for an option ranks them)."""
    text = normalise(as_markdown(extract((FIXTURES / name).read_bytes(), name)))
    chunks = chunk_text(text, ContentType.MARKDOWN)
    ordered = [c for c in chunks if "| row |" in c.text] + [
        c for c in chunks if "| row |" not in c.text
    ]
    return [Passage(str(n), c.text, title, 0.1) for n, c in enumerate(ordered, 1)]


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    return _passages("tail-guide.docx", "tail: output the last part of files")


def _words(text: str) -> int:
    return len(text.replace(" [1]", "").split())


@pytest.mark.parametrize(
    "question",
    [
        "Which tail option reopens a file that has not changed size, to see if it was "
        "unlinked or renamed?",
        "Which option reopens a file which has not changed size after N iterations?",
        "How do I make tail notice rotated log files?",
    ],
)
def test_a_row_named_by_long_prose_is_answered_in_one_line(
    passages: list[Passage], question: str
) -> None:
    answer = synthesize(question, passages, (), False)
    assert answer.supported
    assert len(answer.sentences) == 1
    text = answer.sentences[0].text
    assert "\n" not in text
    assert _words(text) <= LINE_WORDS
    assert "Option --max-unchanged-stats=N (row 6)" in text
    assert "…" in text  # the cut is shown, not hidden


def test_a_long_value_asked_for_is_cut_at_a_clause_in_one_line(passages: list[Passage]) -> None:
    answer = synthesize("What does tail --max-unchanged-stats do?", passages, (), False)
    assert answer.supported
    text = answer.sentences[0].text
    assert text.startswith("--max-unchanged-stats=N — Meaning with --follow=name, reopen a FILE")
    assert text.endswith("(row 6)")
    assert _words(text) <= LINE_WORDS


def test_a_short_row_is_stated_whole(passages: list[Passage]) -> None:
    answer = synthesize(
        "Which tail option keeps trying to open an inaccessible file?", passages, (), False
    )
    assert answer.sentences[0].text == (
        "Meaning keep trying to open a file if it is inaccessible — Option --retry (row 9)"
    )


def test_a_long_option_row_is_quoted_up_to_a_semicolon_in_one_line() -> None:
    passages = _passages("timeout-guide.docx", "timeout: run a command with a time limit")
    # Asked so that the row is read as an option unit by the sentence picker ("What
    # does timeout --foreground do?" is answered by its row: test_offline_named_row).
    answer = synthesize("What is timeout's --foreground for?", passages, (), False)
    assert answer.supported
    assert len(answer.sentences) == 1
    text = answer.sentences[0].text
    assert text.startswith("--foreground — Meaning: when not running timeout directly")
    assert "allow COMMAND to read from the TTY and get TTY signals" in text
    assert "in this mode" not in text
    assert _words(text) <= LINE_WORDS
