"""PPTX: one section per slide ("slide N") under the slide's title.

Shapes are read top to bottom, then left to right (their position on the slide, which
is how a person reads it; the file's order is stacking order), group shapes included.
Tables become markdown tables (``_table``). Speaker notes often carry the explanation the
slide only hints at, so they are kept, after the slide's own text, as "Notes: ...".
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    Kind,
    Reason,
    Section,
    Unextractable,
)
from services.retrieval.extract._table import table_block

# python-pptx's own template names every new file this; it is nobody's real title.
_PLACEHOLDER_TITLES = {"powerpoint presentation"}


def _frame_text(frame: Any) -> str:
    # A line break inside a paragraph is a vertical tab in python-pptx's text.
    return str(frame.text).replace("\v", "\n").strip()


def _reading_order(shapes: Iterable[Any]) -> list[Any]:
    return sorted(shapes, key=lambda s: (s.top or 0, s.left or 0))


def _shape_blocks(shapes: Iterable[Any], skip: int | None) -> Iterator[str]:
    for shape in _reading_order(shapes):
        if shape.shape_id == skip:
            continue
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shape_blocks(shape.shapes, skip)
        elif getattr(shape, "has_table", False):
            rows = [
                ["" if cell.is_spanned else cell.text for cell in row.cells]
                for row in shape.table.rows
            ]
            # The deck's own "header row" flag (on by default in PowerPoint): when it is
            # off, the first row is data and the columns are named by position.
            block = table_block(rows, header=None if shape.table.first_row else False)
            if block:
                yield block
        elif shape.has_text_frame:
            text = _frame_text(shape.text_frame)
            if text:
                yield text


def _slide_title(slide: Any) -> tuple[str, int | None]:
    shape = slide.shapes.title
    if shape is None or not shape.has_text_frame:
        return "", None
    return " ".join(_frame_text(shape.text_frame).split()), shape.shape_id


def extract_pptx(data: bytes, budget: CharBudget) -> Extracted:
    presentation = Presentation(io.BytesIO(data))
    sections: list[Section] = []
    first_title: str | None = None
    for number, slide in enumerate(presentation.slides, start=1):
        title, title_id = _slide_title(slide)
        first_title = first_title or title or None
        blocks = list(_shape_blocks(slide.shapes, title_id))
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = _frame_text(frame) if frame is not None else ""
            if notes:
                blocks.append(f"Notes: {notes}")
        # A slide with a title and nothing else still says something worth finding.
        text = "\n\n".join(blocks) or title
        if text:
            sections.append(Section(title, budget.take(text), f"slide {number}"))
    if not sections:
        raise Unextractable(Reason.EMPTY, "is a presentation without any text")
    core = (presentation.core_properties.title or "").strip()
    core_title = core if core.lower() not in _PLACEHOLDER_TITLES else ""
    return Extracted(Kind.PPTX, first_title or core_title or None, sections)
