"""PDF: the text layer of each page, one section per page ("page N").

The text is rebuilt from where each string sits on the page (_pdf_glyphs walks the
content stream, _pdf_layout decides spaces, columns, running headers and footers,
definition lists and hyphenation), so a page reads as a reader sees it rather than in
the order and spacing the writer happened to emit. A page whose content stream cannot
be walked falls back to pypdf's `extract_text()`.

pypdf reads the text the PDF carries; it does not see text that is only pixels. Pages
without a text layer go to OCR (``_image``, Tesseract) where it is available; a file where
no page has any text, and OCR read none, is refused as NO_TEXT_LAYER rather than ingested
empty, so a person learns why instead of finding nothing in search later. A PDF
encrypted with an empty user password (a common "no printing" restriction) opens
without asking anyone for anything; one with a real password is refused as ENCRYPTED.
"""

from __future__ import annotations

import io
from typing import Any

from pypdf import PageObject, PasswordType, PdfReader

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
from services.retrieval.extract._pdf_glyphs import FontCache, page_runs
from services.retrieval.extract._pdf_layout import (
    Line,
    lines_of,
    page_text,
    plain_lines,
    reading_order,
    running_lines,
    vocabulary,
)

# reportlab and some other writers put this in /Title when nobody set one.
_PLACEHOLDER_TITLES = {"untitled", "untitled document"}
# Pages named one by one in a note; beyond this, a count.
_LISTED_PAGES = 10


def _page_lines(page: PageObject, fonts: FontCache) -> list[Line]:
    """One page turned into its lines of text, top to bottom, with their positions."""
    try:
        runs, skipped = page_runs(page, fonts)
    except Exception:  # a content stream the walk cannot follow: pypdf's own reading
        runs, skipped = [], 1
    if runs and skipped <= len(runs):
        return lines_of(runs)
    # Nothing placed, or most text turned (a landscape page drawn rotated): pypdf's
    # reading, which follows any orientation.
    return plain_lines(page.extract_text()) if skipped or page.get_contents() else []


def _sections(read: list[tuple[int, list[Line]]]) -> list[Section]:
    """The pages' text with running headers and footers dropped (they repeat across
    pages, so they are only known once every page is read), hyphenation decided against
    the whole document's vocabulary."""
    dropped = running_lines([lines for _, lines in read])
    kept = [
        [line for index, line in enumerate(lines) if index not in drop]
        for (_, lines), drop in zip(read, dropped, strict=True)
    ]
    words = vocabulary(kept)
    sections = []
    for (number, _), lines in zip(read, kept, strict=True):
        try:
            text = page_text(reading_order(lines), words).strip()
        except Exception:  # a layout this code misjudges costs the page's shape, not its text
            text = "\n".join(line.text for line in lines).strip()
        if text:
            sections.append(Section("", text, f"page {number}"))
    return sections


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
    fonts = FontCache()
    read: list[tuple[int, list[Line]]] = []
    blank: list[int] = []
    broken: list[int] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            lines = _page_lines(page, fonts)
        except Unextractable:
            raise
        except Exception:  # one bad content stream loses its page, not the document
            broken.append(number)
            continue
        if not lines:
            blank.append(number)
            continue
        # Counted as each page is read, so an oversized file stops at the page that
        # crosses the cap rather than after all of them.
        budget.count(sum(len(line.text) + 1 for line in lines))
        read.append((number, lines))
    # Only pages without a text layer go to OCR (``_image``); what it reads joins in order.
    scanned = ocr_pdf_pages(reader, blank, ocr, budget)
    sections = in_page_order(_sections(read) + scanned.sections)
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
