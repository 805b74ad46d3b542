"""Bytes to text for the formats read as text (plain, markdown, CSV, HTML).

Order of attempts, and why:

1. A byte-order mark decides (UTF-8, UTF-32, UTF-16; UTF-32 first because its
   little-endian mark begins with UTF-16's).
2. UTF-16 without a mark, recognised by NUL bytes on every other position. This comes
   before UTF-8 because UTF-16 text in ASCII range *is* valid UTF-8 (``h\\0e\\0``), which
   would otherwise be read as letters separated by NULs.
3. Strict UTF-8: almost never accepts text that is not UTF-8.
4. An encoding the caller found declared in the file (HTML ``<meta charset>``).
5. cp1252, the Windows superset of Latin-1 that most non-UTF-8 Western text is in.
   It leaves five byte values undefined, so random binary data still fails here.

A NUL left inside otherwise valid text becomes a space, never nothing, so the words on
either side stay apart. Text that decodes but is full of control characters is binary
data of some unknown type and is refused.
"""

from __future__ import annotations

import codecs
import re

from services.retrieval.extract._limits import Reason, Unextractable

_SAMPLE = 4096
# Control characters other than whitespace, ESC (coloured logs) and NUL (handled above).
_BINARY_CONTROL = re.compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_BINARY_SHARE = 0.05

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig", "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "utf-16"),
)


def _utf16_without_bom(data: bytes) -> str | None:
    """ "utf-16-le"/"utf-16-be" when NULs sit on one parity of position in most pairs."""
    sample = data[:_SAMPLE]
    pairs = len(sample) // 2
    if pairs < 2:
        return None
    even_nuls = sample[0 : 2 * pairs : 2].count(0)
    odd_nuls = sample[1 : 2 * pairs : 2].count(0)
    if odd_nuls >= 0.4 * pairs and even_nuls <= 0.1 * pairs:
        return "utf-16-le"
    if even_nuls >= 0.4 * pairs and odd_nuls <= 0.1 * pairs:
        return "utf-16-be"
    return None


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_text(data: bytes, *, declared: str | None = None) -> tuple[str, str]:
    """(text, encoding used); UNDECODABLE when no attempt fits or the result is binary."""
    text: str | None = None
    encoding = ""
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                text, encoding = data.decode(codec), label
            except UnicodeDecodeError as exc:
                raise Unextractable(
                    Reason.UNDECODABLE, f"starts with a {label} byte-order mark but is not {label}"
                ) from exc
            break
    if text is None:
        guess = _utf16_without_bom(data)
        if guess is not None:
            try:
                text, encoding = data.decode(guess), guess
            except UnicodeDecodeError:
                text = None
    declared_codec = _known_codec(declared)
    attempts = [c for c in ("utf-8", declared_codec, "cp1252") if c is not None]
    for codec in attempts:
        if text is not None:
            break
        try:
            text, encoding = data.decode(codec), codec
        except UnicodeDecodeError:
            continue
    if text is None:
        tried = ", ".join(dict.fromkeys(attempts))
        raise Unextractable(Reason.UNDECODABLE, f"is not valid text in any of {tried}")
    text = text.replace("\x00", " ")
    sample = text[: _SAMPLE * 4]
    if sample and len(_BINARY_CONTROL.findall(sample)) > _BINARY_SHARE * len(sample):
        raise Unextractable(
            Reason.UNDECODABLE,
            f"looks like binary data of an unknown type (decoded as {encoding}, but more "
            f"than {_BINARY_SHARE:.0%} control characters)",
        )
    return text, encoding
