"""Tables as tables: a markdown table whose first column is the row's number.

Every format that has tables (CSV, XLSX, HTML, DOCX, PPTX) renders them here, as

    | row | protocol | number | aliases |
    | --- | --- | --- | --- |
    | 87 | ospf | 89 | OSPFIGP |

because that one shape serves every reader: the chunker recognises it (a header line
over a delimiter line) and cuts it between rows only, repeating the header in every
chunk, so "89" is never stored apart from "number"; the offline answerer parses it back
into (column label, value) pairs without guessing; the ``row`` column carries the number
the file gives the row (a spreadsheet's row number; a table's row counted from its first
line), so a citation can name the row rather than the chunk; and a person reading a
quoted chunk reads a table. A ``|`` inside a cell is written ``\\|`` (markdown's own
escape), so a cell never reads as two.

Whether the first row is a header follows from the data, never from a list of words:
a header is a row of distinct labels where the body below holds values; a first row
holding a number or a date, or a value that recurs below it in its column, is data. A
table without a header gets its columns named by position ("column 2", "column B").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from services.retrieval.extract._limits import CharBudget, ExtractLimits, Section

# The first column of every rendered table: the row's number in its file or table.
ROW_LABEL = "row"
# Rows read before deciding whether the first one is a header (a streamed sheet is
# buffered this far, no further).
HEADER_SAMPLE_ROWS = 50

_TYPED = re.compile(
    r"[-+]?[$€£¥]?\s?\d[\d,.\s]*%?"  # 12, 12.50, 12,50, $10, 1 200, 30%
    r"|\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?"  # ISO dates (openpyxl's)
    r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"  # 3/14/2025, 14.03.2025
    r"|\d{1,2}:\d{2}(?::\d{2})?"  # times
    r"|TRUE|FALSE",
    re.IGNORECASE,
)


def cell_text(value: str) -> str:
    """A cell on one line: inner newlines and runs of spaces become one space."""
    return " ".join(value.split())


def column_number(index: int) -> str:
    return f"column {index + 1}"


def is_typed(value: str) -> bool:
    """A number, date, time or boolean: what a header label never is."""
    return bool(_TYPED.fullmatch(value.strip()))


def has_header(rows: Sequence[Sequence[str]]) -> bool:
    """Whether the first of ``rows`` (cleaned, non-empty rows) is a header: its filled
    cells are distinct, none is a number or a date, and none recurs below it in its own
    column (a label names the column once). A lone row is data: nothing under it to
    label."""
    if len(rows) < 2:
        return False
    first = rows[0]
    filled = [v for v in first if v]
    if not filled or len(set(filled)) != len(filled) or any(is_typed(v) for v in filled):
        return False
    for index, label in enumerate(first):
        if label and any(index < len(row) and row[index] == label for row in rows[1:]):
            return False
    return True


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("|", "\\|")


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_escape(c) for c in cells) + " |"


def render(header: Sequence[str], rows: Sequence[tuple[int, Sequence[str]]]) -> str:
    """The markdown table of ``rows`` (numbered) under ``header``, the ``row`` column
    first; short rows are padded, so every line has the header's cells."""
    width = len(header)
    lines = [_line([ROW_LABEL, *header]), "| " + " | ".join(["---"] * (width + 1)) + " |"]
    for number, values in rows:
        padded = [*values[:width], *[""] * (width - len(values))]
        lines.append(_line([str(number), *padded]))
    return "\n".join(lines)


def _labels(first: Sequence[str], width: int, unnamed: Callable[[int], str]) -> list[str]:
    """The header's labels, a blank one (a corner cell) named by its position."""
    return [first[i] if i < len(first) and first[i] else unnamed(i) for i in range(width)]


def table_block(
    rows: Iterable[Sequence[str]],
    *,
    header: bool | None = None,
    unnamed: Callable[[int], str] = column_number,
) -> str:
    """A whole (small, in-memory) table of a page, document or slide as one markdown
    table, rows numbered from 1 as the table's lines (the header is row 1). ``header``:
    what the format's markup says (``<th>`` cells, a slide table's header-row flag);
    ``None`` decides from the data. A table of one filled row has nothing to label and
    is its values, ``; ``-separated."""
    numbered = [(n, [cell_text(v) for v in row]) for n, row in enumerate(rows, start=1)]
    numbered = [(n, row) for n, row in numbered if any(row)]
    if not numbered:
        return ""
    if len(numbered) == 1:
        return "; ".join(v for v in numbered[0][1] if v)
    width = max(len(row) for _, row in numbered)
    if header is None:
        header = has_header([row for _, row in numbered[:HEADER_SAMPLE_ROWS]])
    if header:
        labels = _labels(numbered[0][1], width, unnamed)
        return render(labels, numbered[1:])
    return render([unnamed(i) for i in range(width)], numbered)


def sheet_sections(
    rows: Iterable[tuple[int, Sequence[str]]],
    *,
    sheet: str | None,
    limits: ExtractLimits,
    budget: CharBudget,
    notes: list[str],
    unnamed: Callable[[int], str] = column_number,
) -> list[Section]:
    """A streamed grid (rows numbered as the file numbers them) as sections of at most
    ``limits.rows_per_section`` rows, each a markdown table repeating the header,
    keeping at most ``limits.max_rows_per_sheet`` data rows; how many were left out goes
    into ``notes``. The first ``HEADER_SAMPLE_ROWS`` filled rows are buffered to decide
    whether the first is a header; the rest of the grid is still read to count it, which
    the input-size and ZIP limits keep bounded."""
    sample: list[tuple[int, list[str]]] = []
    labels: list[str] | None = None
    kept: list[tuple[int, list[str]]] = []
    width = 0
    total = 0

    def keep(number: int, values: list[str]) -> None:
        nonlocal total, width
        total += 1
        if total <= limits.max_rows_per_sheet:
            kept.append((number, values))
            width = max(width, len(values))

    def decide() -> None:
        nonlocal labels
        if has_header([row for _, row in sample]):
            labels = sample[0][1]
            rest = sample[1:]
        else:
            labels = []
            rest = sample
        for number, values in rest:
            keep(number, values)

    for number, raw in rows:
        values = [cell_text(v) for v in raw]
        while values and not values[-1]:
            values.pop()  # a sheet's trailing blank cells are not columns
        if not values:
            continue
        if labels is None:
            sample.append((number, values))
            if len(sample) >= HEADER_SAMPLE_ROWS:
                decide()
            continue
        keep(number, values)
    if labels is None:
        if not sample:
            return []
        if len(sample) == 1:
            only = "; ".join(v for v in sample[0][1] if v)
            where = f"sheet {sheet}" if sheet is not None else ""
            return [Section(sheet or "", budget.take(only), where)]
        decide()
    assert labels is not None
    width = max(width, len(labels))
    header = _labels(labels, width, unnamed)
    if total > len(kept):
        scope = f"sheet '{sheet}' " if sheet is not None else ""
        notes.append(f"{scope}capped at {len(kept)} of {total} rows")
    where = f"sheet {sheet}" if sheet is not None else ""
    heading = sheet or ""
    if not kept:  # a header and nothing under it
        only = "; ".join(v for v in labels if v)
        return [Section(heading, budget.take(only), where)]
    size = max(1, limits.rows_per_section)
    groups = [kept[i : i + size] for i in range(0, len(kept), size)]
    sections = []
    for group in groups:
        span = f"rows {group[0][0]}-{group[-1][0]}"
        locator = where if len(groups) == 1 else ", ".join(p for p in (where, span) if p)
        sections.append(Section(heading, budget.take(render(header, group)), locator))
    return sections
