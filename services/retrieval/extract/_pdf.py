"""PDF: the text layer of each page, one section per page ("page N").

pypdf reads the text the PDF carries; it does not see text that is only pixels. A file
where no page has any text is refused as NO_TEXT_LAYER rather than ingested empty, so a
person learns the scan needs OCR instead of finding nothing in search later. A PDF
encrypted with an empty user password (a common "no printing" restriction) opens
without asking anyone for anything; one with a real password is refused as ENCRYPTED.
"""

from __future__ import annotations

import io
from typing import Any

from pypdf import PasswordType, PdfReader

from services.retrieval.extract._image import in_page_order, ocr_pdf_pages
from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    Kind,
    OcrOptions,
    Reason,
    Section,
    Unextractable,
)

# reportlab and some other writers put this in /Title when nobody set one.
_PLACEHOLDER_TITLES = {"untitled", "untitled document"}
# Pages named one by one in a note; beyond this, a count.
_LISTED_PAGES = 10


def _clean(text: str) -> str:
    lines = (line.rstrip() for line in text.replace("\x00", " ").splitlines())
    return "\n".join(lines).strip()


def _title(reader: PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        raw: Any = metadata.title if metadata is not None else None
    except Exception:  # a broken Info dictionary costs the title, not the document
        return None
    if not isinstance(raw, str):
        return None
    title = " ".join(raw.replace("\x00", " ").split())
    return title if title and title.lower() not in _PLACEHOLDER_TITLES else None


def _open(data: bytes) -> PdfReader:
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except Exception as exc:  # an unsupported cipher is as closed as a password
            raise Unextractable(
                Reason.ENCRYPTED, f"is an encrypted PDF that could not be opened ({exc})"
            ) from exc
        if opened == PasswordType.NOT_DECRYPTED:
            raise Unextractable(
                Reason.ENCRYPTED, "is an encrypted PDF that needs a password to open"
            )
    return reader


def _pages_phrase(pages: list[int]) -> str:
    if len(pages) <= _LISTED_PAGES:
        return ", ".join(str(p) for p in pages)
    listed = ", ".join(str(p) for p in pages[:_LISTED_PAGES])
    return f"{listed} and {len(pages) - _LISTED_PAGES} more"


def extract_pdf(data: bytes, budget: CharBudget, max_pages: int, ocr: OcrOptions) -> Extracted:
    """Sections "page 1", "page 2", ... for pages with text, read by OCR for pages
    without a text layer; notes name what OCR read (and its confidence) and did not,
    and pages that could not be read."""
    reader = _open(data)
    count = len(reader.pages)
    if count == 0:
        raise Unextractable(Reason.EMPTY, "is a PDF without pages")
    if count > max_pages:
        raise Unextractable(
            Reason.TOO_LARGE, f"is a PDF of {count:,} pages, over the limit of {max_pages:,}"
        )
    sections: list[Section] = []
    blank: list[int] = []
    broken: list[int] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = _clean(page.extract_text())
        except Unextractable:
            raise
        except Exception:  # one bad content stream loses its page, not the document
            broken.append(number)
            continue
        if not text:
            blank.append(number)
            continue
        sections.append(Section("", budget.take(text), f"page {number}"))
    # Only pages without a text layer go to OCR (``_image``); what it reads joins in order.
    scanned = ocr_pdf_pages(reader, blank, ocr, budget)
    sections = in_page_order(sections + scanned.sections)
    if not sections:
        if broken and not blank:
            raise Unextractable(Reason.CORRUPT, f"is a PDF none of whose {count} pages can be read")
        raise Unextractable(
            Reason.NO_TEXT_LAYER,
            f"no text layer, {scanned.unavailable or scanned.summary} (a PDF of {count} page"
            f"{'s' if count != 1 else ''} with no extractable text: scanned or image-only)",
        )
    notes = list(scanned.notes)
    if blank and scanned.unavailable:
        notes.append(f"no text on page{'s' if len(blank) > 1 else ''} {_pages_phrase(blank)} "
                     f"(images only? {scanned.unavailable})")  # fmt: skip
    if broken:
        notes.append(f"page{'s' if len(broken) > 1 else ''} {_pages_phrase(broken)} "
                     "could not be read")  # fmt: skip
    return Extracted(Kind.PDF, _title(reader), sections, notes=notes)
