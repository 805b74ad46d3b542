"""DOCX: body paragraphs and tables in document order, cut into sections at headings.

A heading is a paragraph whose style is (or is based on) Word's "Heading N"; the section
it starts is located by its heading path ("section Policies > Refunds") so a citation
leads to the place in a long document. A paragraph in Word's "Title" style names the
document rather than starting a section. Page headers, footers and text boxes are left
out: they are repeated boilerplate far more often than content.
"""

from __future__ import annotations

import io
import re

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    Kind,
    Reason,
    SectionBuilder,
    Unextractable,
)
from services.retrieval.extract._table import table_block

_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_TITLE_LEVEL = 0
# A style that is based on itself (it happens in damaged files) must not loop forever.
_MAX_STYLE_DEPTH = 20


def _heading_level(paragraph: Paragraph) -> int | None:
    """1-9 for a heading, 0 for the Title style, None for body text."""
    style = paragraph.style
    for _ in range(_MAX_STYLE_DEPTH):
        if style is None:
            return None
        name = style.name or ""
        match = _HEADING_STYLE.fullmatch(name.strip())
        if match:
            return int(match.group(1))
        if name.strip().lower() == "title":
            return _TITLE_LEVEL
        style = style.base_style
    return None


def _table_rows(table: Table) -> list[list[str]]:
    """Cells on the table's grid; a cell spanning several grid columns is kept in its
    first column only, so its value is not repeated under each header it spans."""
    rows = []
    for row in table.rows:
        values = [""] * row.grid_cols_before
        previous = None
        for cell in row.cells:
            same = previous is not None and cell._tc is previous._tc
            values.append("" if same else cell.text)
            previous = cell
        rows.append(values)
    return rows


def extract_docx(data: bytes, budget: CharBudget) -> Extracted:
    document = docx.Document(io.BytesIO(data))
    builder = SectionBuilder(budget)
    # Heading level by paragraph style id: python-docx resolves a paragraph's style
    # (the default one by scanning every style) anew for each paragraph, which was 95%
    # of the time on a long document.
    levels: dict[str | None, int | None] = {}
    style_title: str | None = None
    first_heading: str | None = None
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            builder.add(table_block(_table_rows(item)))
            continue
        text = item.text.strip()
        if not text:
            continue
        style_id = item._p.style
        if style_id not in levels:
            levels[style_id] = _heading_level(item)
        level = levels[style_id]
        if level == _TITLE_LEVEL:
            style_title = style_title or " ".join(text.split())
        elif level is not None:
            first_heading = first_heading or " ".join(text.split())
            builder.heading(level, " ".join(text.split()))
        else:
            builder.add(text)
    builder.flush()
    if not builder.sections:
        raise Unextractable(Reason.EMPTY, "is a Word document without body text")
    core_title = (document.core_properties.title or "").strip() or None
    return Extracted(Kind.DOCX, core_title or style_title or first_heading, builder.sections)
