"""CSV and TSV: the rows as a markdown table under the header, like a worksheet.

The delimiter is sniffed from the first lines among the usual four (``, ; TAB |``),
because a "CSV" exported by a European-locale spreadsheet is separated by semicolons.
A ``.tsv`` file is tab-separated by definition and is not sniffed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence

from services.retrieval.extract._detect import suffix
from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    ExtractLimits,
    Kind,
    Reason,
    Unextractable,
)
from services.retrieval.extract._table import sheet_sections

_SNIFF_CHARS = 64 * 1024
_DELIMITERS = ",;\t|"


def sniff_delimiter(text: str, name: str) -> str:
    """The delimiter of ``text``: tab for ``.tsv``, else csv.Sniffer's pick among
    ``, ; TAB |``, else a comma (a one-column file gives the sniffer nothing to find)."""
    if suffix(name) == ".tsv":
        return "\t"
    sample = text[:_SNIFF_CHARS]
    cut = sample.rfind("\n")
    if cut > 0 and len(text) > _SNIFF_CHARS:
        sample = sample[:cut]  # a half line at the end misleads the sniffer
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        return ","


def _rows(reader: Iterator[list[str]]) -> Iterator[tuple[int, Sequence[str]]]:
    """Records numbered from 1 as a spreadsheet opening the file would number them."""
    yield from enumerate(reader, start=1)


def extract_csv(
    text: str, encoding: str, name: str, limits: ExtractLimits, budget: CharBudget
) -> Extracted:
    delimiter = sniff_delimiter(text, name)
    notes: list[str] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        sections = sheet_sections(_rows(reader), sheet=None, limits=limits, budget=budget,
                                  notes=notes)  # fmt: skip
    except csv.Error as exc:
        raise Unextractable(
            Reason.CORRUPT, f"is not well-formed CSV (line {reader.line_num}: {exc})"
        ) from exc
    if not sections:
        raise Unextractable(Reason.EMPTY, "is a CSV file without any values")
    if delimiter != ",":  # worth a note only when the sniffer chose something unusual
        label = {"\t": "tab", ";": "semicolon", "|": "pipe"}.get(delimiter, repr(delimiter))
        notes.insert(0, f"{label}-separated")
    return Extracted(Kind.CSV, None, sections, encoding=encoding, notes=notes)
