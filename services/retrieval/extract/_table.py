"""Tables as text: one line per row, each value labelled with its column's header.

A row flattened to ``Region: EMEA; Revenue: 1200`` keeps the meaning a grid gives by
position, which a chunk cut out of the table would otherwise lose ("1200" alone answers
nothing). Used by every format that has tables (DOCX, PPTX, HTML, XLSX, CSV).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from services.retrieval.extract._limits import CharBudget, ExtractLimits, Section


def cell_text(value: str) -> str:
    """A cell on one line: inner newlines and runs of spaces become one space."""
    return " ".join(value.split())


def column_number(index: int) -> str:
    return f"column {index + 1}"


def format_row(
    header: Sequence[str], values: Sequence[str], unnamed: Callable[[int], str] = column_number
) -> str:
    """``header: value; ...`` for the non-empty values; a column without a header is
    named by ``unnamed`` (its position)."""
    pairs = []
    for index, value in enumerate(values):
        if not value:
            continue
        label = header[index] if index < len(header) and header[index] else unnamed(index)
        pairs.append(f"{label}: {value}")
    return "; ".join(pairs)


def table_lines(rows: Iterable[Sequence[str]]) -> list[str]:
    """A whole (small, in-memory) table: the first non-empty row is the header. A table
    of one row has no header to speak of, so its values are listed as they are."""
    cleaned = [[cell_text(v) for v in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return []
    if len(cleaned) == 1:
        return ["; ".join(v for v in cleaned[0] if v)]
    header, *body = cleaned
    return [line for line in (format_row(header, row) for row in body) if line]


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
    ``limits.rows_per_section`` rows, keeping at most ``limits.max_rows_per_sheet`` data
    rows; how many were left out goes into ``notes``. The rest of the grid is still read
    to count it, which the input-size and ZIP limits keep bounded."""
    header: list[str] | None = None
    kept: list[tuple[int, str]] = []
    total = 0
    for number, raw in rows:
        values = [cell_text(v) for v in raw]
        if not any(values):
            continue
        if header is None:
            header = values
            continue
        total += 1
        if total <= limits.max_rows_per_sheet:
            line = format_row(header, values, unnamed)
            kept.append((number, line))
    where = f"sheet {sheet}" if sheet is not None else ""
    heading = sheet or ""
    if header is None:
        return []
    if not kept:
        only = "; ".join(v for v in header if v)
        return [Section(heading, budget.take(only), where)]
    if total > len(kept):
        scope = f"sheet '{sheet}' " if sheet is not None else ""
        notes.append(f"{scope}capped at {len(kept)} of {total} rows")
    size = max(1, limits.rows_per_section)
    groups = [kept[i : i + size] for i in range(0, len(kept), size)]
    sections = []
    for group in groups:
        span = f"rows {group[0][0]}-{group[-1][0]}"
        locator = where if len(groups) == 1 else ", ".join(p for p in (where, span) if p)
        text = "\n".join(line for _, line in group)
        sections.append(Section(heading, budget.take(text), locator))
    return sections
