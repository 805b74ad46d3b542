"""XLSX: each worksheet as a markdown table of its rows under the sheet's name.

openpyxl runs in read-only mode (rows are streamed from the sheet XML, not built into a
grid of cell objects) with ``data_only=True``: a formula cell gives the value Excel last
computed, which is what a reader of the sheet sees. A workbook saved by a program that
never computed its formulas has no such values, and those cells read as empty.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterator, Sequence
from typing import Any

from openpyxl import load_workbook
from openpyxl.utils import get_column_letter

from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    ExtractLimits,
    Kind,
    Reason,
    Section,
    Unextractable,
)
from services.retrieval.extract._table import sheet_sections


def value_text(value: Any) -> str:
    """A cell as a person reads it: 12 not 12.0, 0.3 not 0.30000000000000004, a date
    without a midnight time."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _column_letter(index: int) -> str:
    return f"column {get_column_letter(index + 1)}"


def _numbered_rows(sheet: Any) -> Iterator[tuple[int, Sequence[str]]]:
    """Rows with the numbers Excel shows: asked for from row 1 and column A, read-only
    mode yields every row in order (blank ones as empty), so position is the number."""
    rows = sheet.iter_rows(min_row=1, min_col=1, values_only=True)
    for number, row in enumerate(rows, start=1):
        yield number, [value_text(v) for v in row]


def extract_xlsx(data: bytes, limits: ExtractLimits, budget: CharBudget) -> Extracted:
    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        notes: list[str] = []
        sections: list[Section] = []
        for sheet in workbook.worksheets:
            sections += sheet_sections(
                _numbered_rows(sheet),
                sheet=sheet.title,
                limits=limits,
                budget=budget,
                notes=notes,
                unnamed=_column_letter,
            )
        title = (workbook.properties.title or "").strip() or None
    finally:
        workbook.close()
    if not sections:
        raise Unextractable(Reason.EMPTY, "is a workbook without any filled cells")
    return Extracted(Kind.XLSX, title, sections, notes=notes)
