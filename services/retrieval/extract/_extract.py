"""The one entry point: bytes and a file name in, an ``Extracted`` or a refusal out.

Every library failure stops at this boundary as CORRUPT, so a caller handles exactly one
exception type. Only ``Exception`` is caught (never ``BaseException``: a KeyboardInterrupt
or SystemExit must still end the process), and MemoryError is let through, since running
out of memory says something about the machine, not only the file.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TypeVar

from services.retrieval.extract._csv import extract_csv
from services.retrieval.extract._detect import Detected, detect
from services.retrieval.extract._docx import extract_docx
from services.retrieval.extract._html import extract_html
from services.retrieval.extract._image import extract_image
from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    ExtractLimits,
    Kind,
    Reason,
    Unextractable,
    describe_bytes,
)
from services.retrieval.extract._pdf import extract_pdf
from services.retrieval.extract._plain import extract_plain
from services.retrieval.extract._pptx import extract_pptx
from services.retrieval.extract._xlsx import extract_xlsx

_T = TypeVar("_T")
_DEFAULT_LIMITS = ExtractLimits()
_MAX_DETAIL = 200
_FORMAT_NAMES = {
    Kind.PDF: "a PDF",
    Kind.DOCX: "a Word document (DOCX)",
    Kind.PPTX: "a PowerPoint presentation (PPTX)",
    Kind.XLSX: "an Excel workbook (XLSX)",
    Kind.CSV: "a CSV file",
    Kind.HTML: "an HTML page",
    Kind.MARKDOWN: "a markdown file",
    Kind.TEXT: "a text file",
    Kind.PNG: "a PNG image",
    Kind.JPEG: "a JPEG image",
    Kind.TIFF: "a TIFF image",
}
_IMAGES = frozenset({Kind.PNG, Kind.JPEG, Kind.TIFF})


def _guarded(what: str, step: Callable[[], _T]) -> _T:
    """``step()``, with any library exception turned into CORRUPT naming ``what``."""
    try:
        return step()
    except (Unextractable, MemoryError):
        raise
    except Exception as exc:
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        if len(detail) > _MAX_DETAIL:
            detail = detail[: _MAX_DETAIL - 1] + "…"
        raise Unextractable(Reason.CORRUPT, f"{what} but cannot be read ({detail})") from exc


def _dispatch(
    data: bytes, name: str, found: Detected, limits: ExtractLimits, budget: CharBudget
) -> Extracted:
    kind = found.kind
    if kind is Kind.PDF:
        return extract_pdf(data, budget, limits.max_pdf_pages, limits.ocr)
    if kind in _IMAGES:
        return extract_image(data, kind, limits.ocr, budget)
    if kind is Kind.DOCX:
        return extract_docx(data, budget)
    if kind is Kind.PPTX:
        return extract_pptx(data, budget)
    if kind is Kind.XLSX:
        return extract_xlsx(data, limits, budget)
    assert found.text is not None and found.encoding is not None
    if kind is Kind.HTML:
        return extract_html(data, found.text, found.encoding, budget, limits.max_xml_elements)
    if kind is Kind.CSV:
        return extract_csv(found.text, found.encoding, name, limits, budget)
    return extract_plain(found.text, found.encoding, kind, budget)


def extract(data: bytes, name: str, *, limits: ExtractLimits = _DEFAULT_LIMITS) -> Extracted:
    """The text of one file, in sections that say where each piece came from.

    ``name`` is a hint only (the bytes decide the format; the extension breaks ties
    between text formats). Raises ``Unextractable`` with a ``Reason`` and a message for
    a person; nothing else escapes for any input. CPU-bound and synchronous: run it in
    a worker (a process: the ingest's extraction pool) from async code."""
    if len(data) > limits.max_input_bytes:
        raise Unextractable(
            Reason.TOO_LARGE,
            f"is {describe_bytes(len(data))}, over the "
            f"{describe_bytes(limits.max_input_bytes)} limit for one file",
        )
    if not data.strip():
        raise Unextractable(Reason.EMPTY, "is empty" if not data else "contains only whitespace")
    # OCR's share of the file's time starts now, with the file, not at the first scan.
    ocr = dataclasses.replace(limits.ocr, deadline=time.monotonic() + limits.ocr.budget_s)
    limits = dataclasses.replace(limits, ocr=ocr)
    found = _guarded("looks like a document", lambda: detect(data, name, limits))
    budget = CharBudget(limits.max_chars)
    return _guarded(
        f"looks like {_FORMAT_NAMES[found.kind]}",
        lambda: _dispatch(data, name, found, limits, budget),
    )
