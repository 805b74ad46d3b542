"""An option name that prose runs into ("… This is how GNU gzip behaves. -k --keep" over
the option's description) opens that option's unit, and the lines below it are its
description. Chunks stored before the chunker kept an overlap as a paragraph of its own
read this way: the overlap carried from the previous chunk was joined to the next
entry's term line by a space. Before, the name was a unit alone and its description a
sentence without it, so "which option …" was answered by the description, never saying
which option (grep's ``--max-count``, ``--null-data`` in the issue-48 probes). On real
text: bzip2(1) typeset by groff (``tests/fixtures/pdf/bzip2.pdf``), read by the
product's extractor, its overlap joined as those chunks were."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.llm import Passage
from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract
from services.router.offline._extractive import synthesize
from services.router.offline._text import split_units

FIXTURE = Path(__file__).parents[3] / "fixtures" / "pdf" / "bzip2.pdf"
PROSE = "This is how GNU gzip behaves."


@pytest.fixture(scope="module")
def run_in() -> str:
    """The prose before bzip2's ``-k --keep`` entry, then the entry, joined by a space
    as an overlap and the next chunk's first block were."""
    text = "\n\n".join(s.text for s in extract(FIXTURE.read_bytes(), "bzip2.pdf").sections)
    blocks = text.split("\n\n")
    prose = next(b for b in blocks if b.rstrip().endswith(PROSE))
    entry = next(b for b in blocks if b.startswith("-k --keep\n"))
    return f"{prose.splitlines()[-1]} {entry}"


def test_the_option_run_into_prose_is_stated_with_its_description(run_in: str) -> None:
    assert "behaves. -k --keep\nKeep (don\u2019t delete) input files" in run_in
    units = split_units(run_in)
    keep = [u for u in units if u.text.startswith("-k --keep")]
    assert len(keep) == 1
    assert keep[0].kind == "option"
    assert "Keep (don\u2019t delete) input files" in keep[0].text
    # The prose before it stays a sentence of its own.
    assert any(u.kind == "sentence" and u.text == PROSE for u in units)
    # No unit is the description without its option's name.
    assert not any(u.text.startswith("Keep (don") for u in units)


def test_which_option_answer_names_the_option(run_in: str) -> None:
    passage = Passage("1", run_in, "bzip2", 0.09)
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


def test_a_chunk_opening_inside_an_entry_is_answered_with_its_option() -> None:
    # The chunker carries the entry's term into an overlap that starts inside its
    # description: the answer from that chunk alone names the option.
    text = normalise(as_markdown(extract(FIXTURE.read_bytes(), "bzip2.pdf")))
    chunks = [c.text for c in chunk_text(text, ContentType.MARKDOWN)]
    opening = [c for c in chunks if "If forced (-f), however" in c[:200]]
    assert len(opening) == 1
    answer = synthesize(
        "Which bzip2 option passes files it cannot handle through unmodified?",
        [Passage("1", opening[0], "bzip2", 0.09)],
        (),
        False,
    )
    assert answer.supported
    assert "-f --force" in answer.text
    assert "through unmodified" in answer.text
