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
