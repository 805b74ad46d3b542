"""Normalisation and structure-aware chunking.

Markdown is split on headings (ATX and setext) into sections; each section's blocks
(paragraphs, lists, fenced code, tables) are packed into chunks of at most ``chunk_chars``
characters. A block too long for one chunk is split on sentences, then on words. A chunk
that continues a section repeats the tail of the previous chunk (about ``overlap_chars``,
cut at a sentence or word boundary) so an answer that straddles the cut is still found.
Chunks never cross a section boundary and each one keeps its section heading. A markdown
table (a header line over a ``| --- |`` delimiter line, which is how extraction writes
every CSV, sheet and document table) is cut between rows only, each piece repeating the
header and delimiter lines, and no overlap is carried into or out of a table piece: a
row is never split across chunks, and every chunk of rows says what its columns are.
Plain text is one section split on paragraphs.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from services.retrieval._types import ContentType

# Zero-width and bidi-control characters hide text from readers but not from models.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
_MANY_BLANK_LINES = re.compile(r"\n{3,}")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_INLINE_MARKUP = re.compile(r"[*_`]+")
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")


def normalise(text: str) -> str:
    """NFC, unified newlines, no control or invisible characters, no trailing blanks."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _INVISIBLE.sub("", text)
    text = _CONTROL.sub("", text)
    text = text.replace("\t", "    ")
    text = _TRAILING_SPACE.sub("\n", text)
    text = _MANY_BLANK_LINES.sub("\n\n", text)
    return text.strip()


@dataclass(frozen=True)
class Chunk:
    """One piece of a document: its position, section heading and text."""

    ordinal: int
    section: str
    text: str


@dataclass(frozen=True)
class _Section:
    heading: str
    blocks: list[str]


def _has_content(block: str) -> bool:
    return any(c.isalnum() for c in block)


def _heading_text(raw: str) -> str:
    return _INLINE_MARKUP.sub("", raw).strip()


def _markdown_sections(text: str) -> list[_Section]:
    sections = [_Section("", [])]
    paragraph: list[str] = []
    lines = text.split("\n")

    def flush() -> None:
        if paragraph:
            sections[-1].blocks.append("\n".join(paragraph).strip())
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            flush()
            marker = fence.group(1)
            block = [line]
            index += 1
            while index < len(lines):
                block.append(lines[index])
                index += 1
                if lines[index - 1].strip().startswith(marker):
                    break
            sections[-1].blocks.append("\n".join(block))
            continue
        atx = _ATX.match(line)
        if atx:
            flush()
            sections.append(_Section(_heading_text(atx.group(2) or ""), []))
        elif _SETEXT.match(line) and len(paragraph) == 1 and paragraph[0].strip():
            heading = paragraph.pop()
            sections.append(_Section(_heading_text(heading), []))
        elif not line.strip():
            flush()
        else:
            paragraph.append(line)
        index += 1
    flush()
    return sections


def _plain_sections(text: str) -> list[_Section]:
    return [_Section("", [p.strip() for p in re.split(r"\n\s*\n", text)])]


def _split_long(block: str, limit: int) -> list[str]:
    """Cut a block that exceeds ``limit`` on sentences, then words, then characters."""
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(block):
        if len(sentence) <= limit:
            pieces.append(sentence)
            continue
        current = ""
        for word in sentence.split():
            rest = word
            while len(rest) > limit:
                if current:
                    pieces.append(current)
                    current = ""
                pieces.append(rest[:limit])
                rest = rest[limit:]
            if current and len(current) + 1 + len(rest) > limit:
                pieces.append(current)
                current = rest
            else:
                current = f"{current} {rest}" if current else rest
        if current:
            pieces.append(current)
    return [p for p in pieces if p.strip()]


def _tail(text: str, size: int) -> str:
    """The last ``size`` characters or fewer, starting at a sentence or word boundary."""
    if size <= 0 or len(text) <= size:
        return "" if size <= 0 else text
    window = text[-size:]
    sentence = _SENTENCE_END.search(window)
    if sentence and sentence.end() < len(window):
        return window[sentence.end() :]
    space = window.find(" ")
    return window[space + 1 :] if 0 <= space < len(window) - 1 else ""


def _table_pieces(block: str, limit: int) -> list[str] | None:
    """A markdown table cut between rows into pieces of at most ``limit`` characters,
    each starting with the table's header and delimiter lines; None when ``block`` is
    not a table. A row that cannot fit beside the header even alone (a pathological
    cell) is the one thing still cut inside, on sentences and words."""
    lines = block.split("\n")
    if len(lines) < 2 or not lines[0].lstrip().startswith("|"):
        return None
    if not _TABLE_DELIMITER.match(lines[1]):
        return None
    if len(block) <= limit:
        return [block]
    head = f"{lines[0]}\n{lines[1]}"
    pieces: list[str] = []
    current = ""
    for row in lines[2:]:
        if len(head) + 1 + len(row) > limit:
            if current:
                pieces.append(current)
                current = ""
            pieces.extend(_split_long(row, limit))
            continue
        if current and len(current) + 1 + len(row) <= limit:
            current = f"{current}\n{row}"
        else:
            if current:
                pieces.append(current)
            current = f"{head}\n{row}"
    if current:
        pieces.append(current)
    return pieces


def _pack(blocks: list[str], chunk_chars: int, overlap_chars: int) -> list[str]:
    chunks: list[str] = []
    current = ""
    # Whether ``current`` ends in a table: its tail is a partial row, no overlap.
    tabular = False
    for block in blocks:
        table = _table_pieces(block, chunk_chars)
        if table is not None:
            for piece in table:
                if current and len(current) + 2 + len(piece) <= chunk_chars:
                    current = f"{current}\n\n{piece}"
                else:
                    if current:
                        chunks.append(current)
                    current = piece
                tabular = True
            continue
        pieces = [block] if len(block) <= chunk_chars else _split_long(block, chunk_chars)
        joiner = "\n\n"
        for piece in pieces:
            if not current:
                current = piece
            elif len(current) + len(joiner) + len(piece) <= chunk_chars:
                current = f"{current}{joiner}{piece}"
            else:
                chunks.append(current)
                overlap = (
                    ""
                    if tabular
                    else _tail(current, min(overlap_chars, chunk_chars - len(piece) - 1))
                )
                current = f"{overlap} {piece}" if overlap else piece
            joiner = " "
            tabular = False
    if current:
        chunks.append(current)
    return chunks


def chunk_text(
    text: str, content_type: ContentType, *, chunk_chars: int = 1000, overlap_chars: int = 150
) -> list[Chunk]:
    """Split normalised ``text`` into ordered chunks; markup-only blocks are dropped."""
    sections = (
        _markdown_sections(text) if content_type is ContentType.MARKDOWN else _plain_sections(text)
    )
    chunks: list[Chunk] = []
    for section in sections:
        blocks = [b for b in section.blocks if _has_content(b)]
        for piece in _pack(blocks, chunk_chars, overlap_chars):
            chunks.append(Chunk(len(chunks), section.heading, piece))
    return chunks


def embedding_text(title: str, section: str, text: str, limit: int) -> str:
    """What the model embeds for a chunk: title and section give a short passage context."""
    header = " — ".join(part for part in (title.strip(), section.strip()) if part)
    combined = f"{header}\n{text}" if header else text
    return combined[:limit]
