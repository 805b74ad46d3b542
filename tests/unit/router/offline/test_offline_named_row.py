"""A question that asks what an option or a constant written as code does ("What does
df's -v option do?", "What does the F_OK access constant indicate?") is answered by the
table row that name opens (issue 48, round 2).

"-v" is no word, so the question's words were "df" and "option" alone: the row-naming
words were none, the table path answered nothing, and the sentence picker quoted
another row or the synopsis. A row that mentions the name in passing (Node's ``X_OK``,
"… behave like fs.constants.F_OK") is not the row the name opens. Only a question that
asks the name's meaning as a whole: one that writes a name but asks something else of
it ("Is the PATTERN given to du --exclude a regular expression?") is read as before. On
a real file: tail(1)'s options as a DOCX table (``tests/fixtures/docx/``), through the
product's extractor and chunker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.llm import Passage
from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract
from services.router.offline._cells import _clip, tables
from services.router.offline._extractive import defined_names, synthesize
from services.router.offline._text import code_names, opening_names

FIXTURES = Path(__file__).parents[3] / "fixtures" / "docx"


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    name = "tail-guide.docx"
    text = normalise(as_markdown(extract((FIXTURES / name).read_bytes(), name)))
    chunks = chunk_text(text, ContentType.MARKDOWN)
    ordered = [c for c in chunks if "| row |" in c.text] + [
        c for c in chunks if "| row |" not in c.text
    ]
    title = "tail: output the last part of files"
    return [Passage(str(n), c.text, title, 0.1) for n, c in enumerate(ordered, 1)]


def _answer(question: str, passages: list[Passage]) -> str:
    return " ".join(s.text for s in synthesize(question, passages, (), False).sentences)


@pytest.mark.parametrize(
    ("question", "row", "meaning"),
    [
        ("What does tail's -F option do?", "(row 4)", "same as --follow=name --retry"),
        ("What does tail's -f option do?", "(row 3)", "output appended data as the file grows"),
        ("What does -q mean?", "(row 8)", "never output headers giving file names"),
    ],
)
def test_the_row_a_written_option_opens_answers_what_it_does(
    passages: list[Passage], question: str, row: str, meaning: str
) -> None:
    answer = _answer(question, passages)
    assert meaning in answer
    assert answer.count("(row ") == 1 and row in answer  # that row alone: -f is not -F


def test_a_name_mentioned_in_passing_does_not_name_the_row() -> None:
    assert opening_names("-t, --type=TYPE") == {"-t", "--type"}
    assert opening_names("-m NUM, --max-count=NUM Stop reading") == {"-m", "--max-count"}
    assert opening_names("X_OK — Description: … like fs.constants.F_OK") == {"x_ok"}
    assert opening_names("with -f, terminate after process ID, PID dies") == frozenset()
    assert code_names("Is a C-style comment or a 2-letter code an option?") == frozenset()


def test_only_a_question_about_the_name_as_a_whole_is_answered_by_its_row() -> None:
    assert defined_names("What does the F_OK access constant indicate?") == {"f_ok"}
    assert defined_names("What is O_TRUNC?") == {"o_trunc"}
    assert defined_names("Is the PATTERN given to du --exclude a regular expression?") == (
        frozenset()
    )
    assert defined_names("Which field name gives the usage in df --output?") == frozenset()


def test_a_named_row_with_a_long_description_stays_one_line() -> None:
    name = "timeout-guide.docx"
    text = normalise(as_markdown(extract((FIXTURES / name).read_bytes(), name)))
    chunks = chunk_text(text, ContentType.MARKDOWN)
    title = "timeout: run a command with a time limit"
    ordered = [c for c in chunks if "| row |" in c.text] + [
        c for c in chunks if "| row |" not in c.text
    ]
    passages = [Passage(str(n), c.text, title, 0.1) for n, c in enumerate(ordered, 1)]
    answer = _answer("What does timeout --foreground do?", passages)
    assert answer.startswith("--foreground — Meaning when not running timeout directly")
    assert "allow COMMAND to read from the TTY" in answer and answer.endswith("(row 3)")
    assert "in this mode" not in answer and len(answer.split()) <= 30


def test_a_cut_value_keeps_its_budget_with_the_ellipsis() -> None:
    # Node's os constants (the dev set's node-os.html): every cell of its tables, cut to
    # every budget, is at most that many words, "…" counted (a named row's prose cell
    # was cut at a word and the "…" made the line 31 words).
    name = "node-os.html"
    corpus = Path(__file__).parents[4] / "services/bench/devsets/documents/corpus"
    text = normalise(as_markdown(extract((corpus / name).read_bytes(), name)))
    cells = [
        cell
        for chunk in chunk_text(text, ContentType.MARKDOWN)
        for table in tables(chunk.text)
        for row in table.rows
        for cell in row.cells
        if len(cell.split()) > 12
    ]
    assert cells
    for cell in cells:
        for budget in range(2, len(cell.split())):
            assert len(_clip(cell, budget).split()) <= budget, (cell, budget)
