"""Plain text and markdown: the decoded text as one section.

Splitting markdown at its headings is the chunker's job (``services/retrieval/
_chunking.py`` already understands ATX and setext headings, fenced code and tables, and
keeps each chunk's heading), so extraction does not do it a second time: a markdown file
comes back as one section whose text still carries its ``#`` headings, and the ingest,
given content type MARKDOWN, cuts it. Only the title is read here, from a level-one
heading on the first non-blank line.
"""

from __future__ import annotations

import re

from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    Kind,
    Reason,
    Section,
    Unextractable,
)

_TITLE = re.compile(r"\A\s*# +(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def extract_plain(text: str, encoding: str, kind: Kind, budget: CharBudget) -> Extracted:
    """One section with no heading and no locator (the whole file is the place)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise Unextractable(Reason.EMPTY, "contains only whitespace")
    title = None
    if kind is Kind.MARKDOWN:
        match = _TITLE.match(text)
        title = match.group(1).strip() if match else None
    return Extracted(kind, title, [Section("", budget.take(text), "")], encoding=encoding)
