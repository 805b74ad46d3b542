"""An option name that a chunk's prose runs into ("… This is how GNU gzip behaves. -k
--keep", the overlap carried from the previous chunk joined to the next entry's term
line) opens that option's unit, and the lines below it are its description. Before, the
name was a unit alone and its description a sentence without it, so "which option …"
was answered by the description, never saying which option (grep's ``--max-count``,
``--null-data`` in the issue-48 probes). On real text: bzip2(1) typeset by groff
(``tests/fixtures/pdf/bzip2.pdf``), through the product's own extractor and chunker."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.llm import Passage
from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract
from services.router.offline._extractive import synthesize
from services.router.offline._text import split_units

FIXTURE = Path(__file__).parents[3] / "fixtures" / "pdf" / "bzip2.pdf"


@pytest.fixture(scope="module")
def chunks() -> list[str]:
    extracted = extract(FIXTURE.read_bytes(), "bzip2.pdf")
    text = normalise(as_markdown(extracted))
    return [c.text for c in chunk_text(text, ContentType.MARKDOWN)]


def _chunk_with(chunks: list[str], needle: str) -> str:
    found = [c for c in chunks if needle in c]
    assert found, f"no chunk holds {needle!r}: the fixture's chunking changed"
    return found[0]


def test_the_fixture_runs_prose_into_an_option_name(chunks: list[str]) -> None:
    # What the mechanism is for: a chunk line that ends in "-k --keep" after prose.
    chunk = _chunk_with(chunks, "behaves. -k --keep\n")
    assert "Keep (don\u2019t delete) input files" in chunk


def test_the_option_run_into_prose_is_stated_with_its_description(chunks: list[str]) -> None:
    units = split_units(_chunk_with(chunks, "behaves. -k --keep\n"))
    keep = [u for u in units if u.text.startswith("-k --keep")]
    assert len(keep) == 1
    assert keep[0].kind == "option"
    assert "Keep (don\u2019t delete) input files" in keep[0].text
    # The prose before it stays a sentence of its own.
    assert any(u.kind == "sentence" and u.text == "This is how GNU gzip behaves." for u in units)
    # No unit is the description without its option's name.
    assert not any(u.text.startswith("Keep (don") for u in units)


def test_which_option_answer_names_the_option(chunks: list[str]) -> None:
    passage = Passage("1", _chunk_with(chunks, "behaves. -k --keep\n"), "bzip2", 0.09)
    answer = synthesize(
        "Which bzip2 option stops it from deleting the input files?", [passage], (), False
    )
    assert answer.supported
    assert "-k --keep" in answer.text
    assert "input files" in answer.text


def test_an_option_with_its_description_on_the_line_is_unchanged() -> None:
    units = split_units("Ends here. -s --small Reduce memory usage.\nMore prose follows.")
    assert [u.kind for u in units] == ["sentence", "option", "sentence"]
    assert units[1].text == "-s --small Reduce memory usage."
