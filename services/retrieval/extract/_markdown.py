"""An extracted file as the markdown the ingest pipeline already chunks.

Each section becomes a heading whose text is its locator (with the section's own heading
when the locator does not already hold it): the chunker never lets a chunk cross a
heading and keeps the heading as the chunk's ``section``, so every passage of a PDF
stays on its page, of a deck on its slide, of a workbook in its sheet, and a citation
prints where it came from with no new column anywhere.
"""

from __future__ import annotations

from services.retrieval.extract._limits import Extracted, Kind, Section

# Formats whose decoded text goes to the chunker unchanged (it reads their own headings).
AS_IS = frozenset({Kind.MARKDOWN, Kind.TEXT})


def label(section: Section) -> str:
    """The heading a section's chunks carry: its locator, plus its heading when new."""
    locator = " ".join(section.locator.split())
    heading = " ".join(section.heading.split())
    if not locator:
        return heading
    if not heading or heading.casefold() in locator.casefold():
        return locator
    return f"{locator} · {heading}"


def as_markdown(extracted: Extracted) -> str:
    """The text to ingest: as decoded for markdown and text, else one ``##`` heading per
    section (its label) over the section's text."""
    if extracted.kind in AS_IS:
        return "\n\n".join(s.text for s in extracted.sections)
    blocks = []
    for section in extracted.sections:
        heading = label(section)
        blocks.append(f"## {heading}\n\n{section.text}" if heading else section.text)
    return "\n\n".join(blocks)
