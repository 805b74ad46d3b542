"""ZIP containers: the bomb guard, and which Office format (if any) an archive holds.

The guard reads only the central directory (names and declared sizes), never a member's
data, so a 300 MiB bomb is refused in milliseconds. Declared sizes can be trusted for
this because Python's ``zipfile`` stops inflating a member at its declared size (and
then fails the CRC), so no library reading through ``zipfile`` can be made to produce
more than was declared.
"""

from __future__ import annotations

import io
import re
import zipfile

from lxml import etree  # type: ignore[import-untyped]

from services.retrieval.extract._limits import (
    ExtractLimits,
    Kind,
    Reason,
    Unextractable,
    describe_bytes,
)

# Main-part content types in [Content_Types].xml (documents, templates, macro-enabled).
_MAIN_TYPES = (
    (re.compile(rb"wordprocessingml\.(?:document|template)\.main\+xml|ms-word\.[a-z.]*\.main"),
     Kind.DOCX),
    (re.compile(rb"presentationml\.(?:presentation|slideshow|template)\.main\+xml"
                rb"|ms-powerpoint\.[a-z.]*\.main"), Kind.PPTX),
    (re.compile(rb"spreadsheetml\.(?:sheet|template)\.main\+xml|ms-excel\.[a-z.]*\.main"),
     Kind.XLSX),
)  # fmt: skip
_MAIN_PARTS = (
    ("word/document.xml", Kind.DOCX),
    ("ppt/presentation.xml", Kind.PPTX),
    ("xl/workbook.xml", Kind.XLSX),
)
# Read at most this much of [Content_Types].xml or mimetype (both are tiny in practice).
_MANIFEST_BYTES = 1024 * 1024
_OTHER_CONTAINERS = {
    b"application/epub+zip": "an EPUB book",
    b"application/vnd.oasis.opendocument.text": "an OpenDocument text file (.odt)",
    b"application/vnd.oasis.opendocument.spreadsheet": "an OpenDocument spreadsheet (.ods)",
    b"application/vnd.oasis.opendocument.presentation": "an OpenDocument presentation (.odp)",
}


def open_archive(data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise Unextractable(Reason.CORRUPT, f"is not a readable ZIP archive ({exc})") from exc


def check_archive(archive: zipfile.ZipFile, limits: ExtractLimits) -> None:
    """TOO_LARGE when the archive would expand past the limits (member count, total
    uncompressed size, per-member compression ratio); every message names its limit."""
    members = archive.infolist()
    if len(members) > limits.max_zip_members:
        raise Unextractable(
            Reason.TOO_LARGE,
            f"has {len(members):,} archive members, over the limit of "
            f"{limits.max_zip_members:,} (zip bomb guard)",
        )
    total = sum(m.file_size for m in members)
    if total > limits.max_zip_uncompressed_bytes:
        raise Unextractable(
            Reason.TOO_LARGE,
            f"expands to more than {describe_bytes(limits.max_zip_uncompressed_bytes)} "
            f"uncompressed ({describe_bytes(total)} declared; zip bomb guard)",
        )
    for member in members:
        if member.file_size <= limits.zip_ratio_min_member_bytes:
            continue
        ratio = member.file_size / max(member.compress_size, 1)
        if ratio > limits.max_zip_ratio:
            raise Unextractable(
                Reason.TOO_LARGE,
                f"member {member.filename!r} expands {ratio:,.0f}:1, over the "
                f"{limits.max_zip_ratio:,.0f}:1 compression-ratio limit (zip bomb guard)",
            )


def _read_small(archive: zipfile.ZipFile, name: str) -> bytes:
    try:
        with archive.open(name) as member:
            return member.read(_MANIFEST_BYTES)
    except KeyError:
        return b""
    except MemoryError:
        raise
    except Exception as exc:  # zlib.error, BadZipFile (bad CRC), NotImplementedError, ...
        raise Unextractable(Reason.CORRUPT, f"has an unreadable {name} ({exc})") from exc


def office_kind(archive: zipfile.ZipFile) -> Kind:
    """DOCX, PPTX or XLSX by the main part's declared content type, else by the main
    part's usual name; UNSUPPORTED_TYPE naming what else the archive is."""
    content_types = _read_small(archive, "[Content_Types].xml")
    for pattern, kind in _MAIN_TYPES:
        if pattern.search(content_types):
            return kind
    names = set(archive.namelist())
    for part, kind in _MAIN_PARTS:
        if part in names:
            return kind
    mimetype = _read_small(archive, "mimetype").strip()
    if mimetype in _OTHER_CONTAINERS:
        what = _OTHER_CONTAINERS[mimetype]
    elif content_types:
        what = "an Office Open XML package of an unknown kind"
    else:
        what = "a ZIP archive"
    raise Unextractable(
        Reason.UNSUPPORTED_TYPE, f"is {what}; only DOCX, PPTX and XLSX archives are read"
    )


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_PARAGRAPHS = frozenset({_W + "p", _A + "p"})
_TEXTS = frozenset({_W + "t", _A + "t"})
# The parts whose text is extracted; the rest (styles, themes, media) is left to the
# libraries, bounded by the ZIP guard.
_TEXT_PARTS = {
    Kind.DOCX: re.compile(r"word/document\d*\.xml"),
    Kind.PPTX: re.compile(r"ppt/slides/slide\d+\.xml"),
}


def _too_large(message: str) -> Unextractable:
    return Unextractable(Reason.TOO_LARGE, message)


def scan_text_parts(archive: zipfile.ZipFile, kind: Kind, limits: ExtractLimits) -> None:
    """Stream the parts a DOCX's or PPTX's text lives in, counting elements, nesting,
    paragraphs and characters, and stop with TOO_LARGE at the first limit crossed.

    The libraries build a whole tree and then spend tens of microseconds on every
    paragraph however little it holds; this pass spends about a microsecond per element
    and keeps no tree, so an amplified file (a 70 KB archive of 5 MiB of tiny paragraphs)
    is refused in a fraction of a second instead of costing a minute of CPU."""
    pattern = _TEXT_PARTS.get(kind)
    if pattern is None:
        return
    elements = paragraphs = chars = 0
    for name in sorted(n for n in archive.namelist() if pattern.fullmatch(n)):
        with archive.open(name) as stream:
            depth = 0
            events = etree.iterparse(
                stream, events=("start", "end"), resolve_entities=False, no_network=True
            )
            for event, element in events:
                if event == "start":
                    depth += 1
                    elements += 1
                    if depth > limits.max_xml_depth:
                        raise _too_large(
                            f"nests XML elements deeper than {limits.max_xml_depth} in {name}"
                        )
                    if elements > limits.max_xml_elements:
                        raise _too_large(
                            f"has more than {limits.max_xml_elements:,} XML elements in its text"
                        )
                    continue
                depth -= 1
                tag = element.tag
                if tag in _PARAGRAPHS:
                    paragraphs += 1
                    if paragraphs > limits.max_paragraphs:
                        raise _too_large(
                            f"has more than {limits.max_paragraphs:,} paragraphs "
                            "(the per-document limit)"
                        )
                elif tag in _TEXTS:
                    chars += len(element.text or "")
                    if chars > limits.max_chars:
                        raise _too_large(
                            f"extracted text exceeds {limits.max_chars:,} characters "
                            "(the per-document limit)"
                        )
                if depth <= 2:  # a finished block: keep no tree
                    element.clear()
                    parent = element.getparent()
                    while parent is not None and element.getprevious() is not None:
                        del parent[0]
