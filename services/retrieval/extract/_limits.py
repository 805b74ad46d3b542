"""What extraction returns, how it refuses, and the limits it enforces.

Kept apart from the format modules so every extractor speaks the same vocabulary: a
caller (the ingest RPC, a CLI) maps ``Reason`` to a status code and shows ``message`` to a
person unchanged, so each message names the actual limit or detected type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from services.retrieval._settings import RetrievalSettings

MIB = 1024 * 1024


class Kind(StrEnum):
    """The document formats extraction understands."""

    PDF = "PDF"
    DOCX = "DOCX"
    PPTX = "PPTX"
    XLSX = "XLSX"
    CSV = "CSV"
    HTML = "HTML"
    MARKDOWN = "MARKDOWN"
    TEXT = "TEXT"
    # Images: their text is read by OCR (``OcrOptions``).
    PNG = "PNG"
    JPEG = "JPEG"
    TIFF = "TIFF"


class Reason(StrEnum):
    """Why a file was refused; stable codes a caller can branch on."""

    NO_TEXT_LAYER = "NO_TEXT_LAYER"
    ENCRYPTED = "ENCRYPTED"
    CORRUPT = "CORRUPT"
    TOO_LARGE = "TOO_LARGE"
    UNSUPPORTED_TYPE = "UNSUPPORTED_TYPE"
    UNDECODABLE = "UNDECODABLE"
    EMPTY = "EMPTY"


class Unextractable(Exception):
    """A file that yields no usable text, with a code and a message fit for a person."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Section:
    """A run of text under one heading, with where a citation should point.

    ``locator`` is printed as is next to a citation ("page 3", "slide 4", "sheet Orders,
    rows 2-201", "section Policies > Refunds"); empty when the format has no finer place
    than the whole document."""

    heading: str
    text: str
    locator: str


@dataclass(frozen=True)
class Extracted:
    """One file's text, in document order, with what was learned along the way.

    ``encoding`` is set for the formats read as text (CSV, HTML, MARKDOWN, TEXT) only;
    ``notes`` records what a reader would otherwise not know was left out or changed."""

    kind: Kind
    title: str | None
    sections: list[Section]
    encoding: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def char_count(self) -> int:
        return sum(len(s.text) for s in self.sections)


@dataclass(frozen=True)
class OcrOptions:
    """How pages that are only pixels (a scanned PDF's pages, an image) are read: by the
    ``tesseract`` program (Debian's ``tesseract-ocr``), one page at a time, each under
    ``page_timeout_s`` and an address-space cap of ``memory_mb``. A page whose mean word
    confidence is under ``min_confidence`` is reported and left out, since guessed
    words in the index would answer questions wrongly. ``budget_s`` bounds the OCR of
    one document from the start of its extraction (pages past it are reported, not
    read), so the worker's deadline for
    the whole file is not reached by OCR alone and the pages read are kept. The
    defaults are ``RetrievalSettings``' (docs/documents.md "Scans and images")."""

    enabled: bool = True
    languages: str = "eng"
    page_timeout_s: float = 20.0
    memory_mb: int = 512
    min_confidence: float = 70.0
    max_pages: int = 50
    budget_s: float = 50.0
    # An image above this many pixels is refused before it is decoded (about 40 MB
    # grey); one scanned finer than ``dpi`` is scaled down to it first.
    max_pixels: int = 40_000_000
    dpi: int = 300
    program: str = "tesseract"
    # When this document's OCR must stop (``time.monotonic()``): set by ``extract`` to
    # ``budget_s`` after the file's extraction began, so a slow text pass counts too.
    deadline: float | None = None


@dataclass(frozen=True)
class ExtractLimits:
    """Bounds on the work one file may cause. The ZIP limits are checked on the archive's
    central directory before any library parses it: Python's ``zipfile`` (which
    python-docx, python-pptx and openpyxl all use) never inflates a member past its
    declared size, so the declared sizes bound the real ones."""

    max_input_bytes: int = 50 * MIB
    # The ingest's own per-document cap (RETRIEVAL_MAX_DOCUMENT_CHARS' default): a file
    # extracting to more would be refused by ingest anyway, so extraction stops there.
    max_chars: int = RetrievalSettings.max_document_chars
    max_rows_per_sheet: int = 2000
    # A sheet (or CSV) longer than this is cut into several sections so a citation can
    # name the rows; shorter ones stay one section.
    rows_per_section: int = 200
    max_zip_uncompressed_bytes: int = 200 * MIB
    max_zip_ratio: float = 200.0
    # Small members compress well for innocent reasons (a run of empty cells); the ratio
    # is only held against members above this size.
    zip_ratio_min_member_bytes: int = 1 * MIB
    max_zip_members: int = 10_000
    # Bounds on the XML a Word or PowerPoint file's text lives in, enforced while it is
    # streamed (before any library builds a tree of it): every paragraph costs the
    # libraries tens of microseconds however little it holds, so a small archive of
    # millions of empty paragraphs is refused in a fraction of a second, not walked.
    # ``max_xml_elements`` also bounds an HTML page's elements as it is parsed.
    max_xml_elements: int = 2_000_000
    max_xml_depth: int = 200
    max_paragraphs: int = 100_000
    # A PDF's pages are counted before any is read.
    max_pdf_pages: int = 10_000
    ocr: OcrOptions = field(default_factory=OcrOptions)


def describe_bytes(size: int) -> str:
    """Sizes in messages: "50 MiB", "63.2 MiB", "812 bytes"."""
    if size < 1024:
        return f"{size} bytes"
    for unit, scale in (("GiB", MIB * 1024), ("MiB", MIB), ("KiB", 1024)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"  # pragma: no cover - the loop always returns


class CharBudget:
    """Counts extracted characters so a format can stop as soon as the cap is passed
    (a 3,000-page PDF is refused after the page that crosses the cap, not after all)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, text: str) -> str:
        self.count(len(text))
        return text

    def count(self, chars: int) -> None:
        self.used += chars
        if self.used > self.limit:
            raise Unextractable(
                Reason.TOO_LARGE,
                f"extracted text exceeds {self.limit:,} characters (the per-document limit)",
            )


@dataclass
class SectionBuilder:
    """Collects blocks of text under the current heading path; a heading closes the
    section before it. Shared by the formats whose headings nest (DOCX, HTML): the
    section's heading is its own heading and its locator the whole path
    ("section Policies > Refunds"), so a citation leads to the place."""

    budget: CharBudget
    sections: list[Section] = field(default_factory=list)
    path: list[tuple[int, str]] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)

    def add(self, block: str) -> None:
        """Charged to the budget now, so an over-long document stops at the block that
        crosses the cap rather than at the end of the section holding it."""
        block = block.strip()
        if block:
            if self.blocks:
                self.budget.count(2)  # the blank line ``flush`` puts before it
            self.blocks.append(self.budget.take(block))

    def heading(self, level: int, text: str) -> None:
        """Start a section at heading ``level`` (1 outermost); deeper or equal open
        headings end."""
        self.flush()
        while self.path and self.path[-1][0] >= level:
            self.path.pop()
        self.path.append((level, text))

    def flush(self) -> None:
        text = "\n\n".join(self.blocks)
        self.blocks.clear()
        if not text:
            return
        heading = self.path[-1][1] if self.path else ""
        locator = "section " + " > ".join(h for _, h in self.path) if self.path else ""
        self.sections.append(Section(heading, text, locator))  # charged block by block
