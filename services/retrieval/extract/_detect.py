"""What a file is, from its bytes first and its name only to break ties.

Names lie (a ``report.pdf`` that is a text export, a PDF saved as ``notes.txt``), so the
bytes decide whenever they can: PDF and ZIP signatures, the PNG, JPEG and TIFF images
OCR reads, other well-known binary signatures (refused with the type named), then text,
where HTML is recognised by its opening markup. Only then does the extension choose
between CSV, markdown, HTML (a ``.html`` file of fragments without a doctype) and plain
text, formats that look alike as bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from services.common.formats import suffixes
from services.retrieval.extract._limits import ExtractLimits, Kind, Reason, Unextractable
from services.retrieval.extract._text import decode_text
from services.retrieval.extract._zip import (
    check_archive,
    office_kind,
    open_archive,
    scan_text_parts,
)

# The PDF specification lets the header follow up to 1 KiB of junk (a mail header, a BOM).
_PDF_WINDOW = 1024
_ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_OFFICE_SUFFIXES = suffixes("DOCX", "PPTX", "XLSX")
_LEGACY_OFFICE = (
    "a legacy Office file (OLE compound document: .doc, .xls or .ppt); "
    "save it as .docx, .xlsx or .pptx"
)
_IMAGE_SIGNATURES: tuple[tuple[bytes, Kind], ...] = (
    (b"\x89PNG\r\n\x1a\n", Kind.PNG),
    (b"\xff\xd8\xff", Kind.JPEG),
    (b"II*\x00", Kind.TIFF),
    (b"MM\x00*", Kind.TIFF),
)
_BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", _LEGACY_OFFICE),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"{\\rtf", "an RTF document"),
    (b"%!PS", "a PostScript file"),
    (b"OggS", "an Ogg media file"),
    (b"fLaC", "a FLAC audio file"),
)
_HTML_START = re.compile(
    r"\A\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*(?:<!doctype\s+html|<html[\s>])",
    re.IGNORECASE | re.DOTALL,
)
_MARKUP = re.compile(r"<(?:[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>|/[a-zA-Z][a-zA-Z0-9-]*\s*>)")
_SNIFF_CHARS = 64 * 1024
_CSV_SUFFIXES = suffixes("CSV")
_MARKDOWN_SUFFIXES = suffixes("MARKDOWN")
_HTML_SUFFIXES = suffixes("HTML")


@dataclass(frozen=True)
class Detected:
    """The kind, and for text kinds the decoded text and the encoding that decoded it."""

    kind: Kind
    text: str | None = None
    encoding: str | None = None


def suffix(name: str) -> str:
    """The lower-cased extension of a file name or path (either slash style)."""
    return PurePosixPath(name.replace("\\", "/")).suffix.lower()


def _binary_type(data: bytes) -> str | None:
    for signature, what in _BINARY_SIGNATURES:
        if data.startswith(signature):
            return what
    if data[4:8] == b"ftyp":
        return "an MP4/QuickTime media file"
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "a WebP image"
    if data.startswith(b"BZh") and data[4:10] == b"1AY&SY":
        return "a bzip2 archive"
    return None


def detect(data: bytes, name: str, limits: ExtractLimits) -> Detected:
    """Classify ``data``; refuses (UNSUPPORTED_TYPE, TOO_LARGE, CORRUPT, UNDECODABLE)
    what cannot be read, so a ``Detected`` is always worth handing to its extractor.
    ZIP archives pass the bomb guard here, before any library opens them."""
    if b"%PDF-" in data[:_PDF_WINDOW]:
        return Detected(Kind.PDF)
    if data.startswith(_ZIP_SIGNATURES):
        archive = open_archive(data)
        with archive:
            check_archive(archive, limits)
            kind = office_kind(archive)
            scan_text_parts(archive, kind, limits)
            return Detected(kind)
    for signature, image in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return Detected(image)
    what = _binary_type(data)
    if what is not None:
        raise Unextractable(Reason.UNSUPPORTED_TYPE, f"is {what}, not a document with text")
    ext = suffix(name)
    if ext in _OFFICE_SUFFIXES:
        # Every Word, PowerPoint and Excel file is a ZIP archive: one that is not is cut
        # short or damaged, not text to index under that name.
        raise Unextractable(
            Reason.CORRUPT, f"is named {ext} but is not a ZIP archive as every {ext} file is"
        )
    text, encoding = decode_text(data)
    head = text[:_SNIFF_CHARS]
    if _HTML_START.match(head) or (ext in _HTML_SUFFIXES and _MARKUP.search(head)):
        return Detected(Kind.HTML, text, encoding)
    if ext in _CSV_SUFFIXES:
        return Detected(Kind.CSV, text, encoding)
    if ext in _MARKDOWN_SUFFIXES:
        return Detected(Kind.MARKDOWN, text, encoding)
    return Detected(Kind.TEXT, text, encoding)
