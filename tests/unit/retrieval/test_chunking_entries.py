"""A chunk's overlap keeps a definition entry's term and stays a paragraph of its own.

The overlap (the previous chunk's tail, repeated so an answer across the cut is found)
was joined to the next block by a space: "… This is how GNU gzip behaves. -k --keep"
ran prose into the next option's name, "MEMORY MANAGEMENT bzip2 compresses …" a heading
into its text. And when the tail began inside an option's description, the option's
name stayed behind in the previous chunk: grep's "When searching recursively, skip any
subdirectory …" reached the answer as a description of nothing (issue 48's probes).
On real text: bzip2(1) typeset by groff (``tests/fixtures/pdf/bzip2.pdf``), through
the product's extractor and chunker at their default sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract

FIXTURE = Path(__file__).parents[2] / "fixtures" / "pdf" / "bzip2.pdf"
CHUNK_CHARS = 1000


@pytest.fixture(scope="module")
def chunks() -> list[str]:
    text = normalise(as_markdown(extract(FIXTURE.read_bytes(), "bzip2.pdf")))
    return [c.text for c in chunk_text(text, ContentType.MARKDOWN, chunk_chars=CHUNK_CHARS)]


def _starting_with(chunks: list[str], needle: str) -> str:
    found = [c for c in chunks if needle in c[:200]]
    assert len(found) == 1, f"{len(found)} chunks open with {needle!r}"
    return found[0]


def test_an_overlap_inside_an_entry_carries_the_entry_term(chunks: list[str]) -> None:
    # -f --force's description runs over the cut; the next chunk opens inside it.
    chunk = _starting_with(chunks, "If forced (-f), however")
    assert chunk.startswith("-f --force\nIf forced (-f), however")


def test_the_overlap_is_a_paragraph_before_the_next_block(chunks: list[str]) -> None:
    chunk = _starting_with(chunks, "If forced (-f), however")
    assert "This is how GNU gzip behaves.\n\n-k --keep\nKeep (don" in chunk
    headed = _starting_with(chunks, "MEMORY MANAGEMENT")
    assert "MEMORY MANAGEMENT\n\nbzip2 compresses large files in blocks." in headed


def test_chunks_stay_within_their_size(chunks: list[str]) -> None:
    assert all(len(c) <= CHUNK_CHARS for c in chunks)
