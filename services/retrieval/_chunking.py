"""Normalisation and structure-aware chunking.

Markdown is split on headings (ATX and setext) into sections; each section's blocks
(paragraphs, lists, fenced code, tables) are packed into chunks of at most ``chunk_chars``
characters. A block too long for one chunk is split on sentences, then on words. A chunk
that continues a section repeats the tail of the previous chunk (about ``overlap_chars``,
cut at a sentence or word boundary) so an answer that straddles the cut is still found;
the overlap is a paragraph of its own before a block that opens the chunk, and when it
starts inside a definition entry (an option's term line over its description) it opens
with that term, so the description it repeats still says what it describes.
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


# A definition entry's term: the first line of a block, short and not a sentence, over
# its description ("-m NUM, --max-count=NUM" / "Stop reading a file after …").
_TERM_CHARS = 60
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]\s|\d{1,3}[.)]\s|\|)")


def _term(block: str) -> str | None:
    """The term line a definition entry opens with, or None: a first line of at most
    ``_TERM_CHARS`` characters that ends no sentence and is no list item or table row,
    over a description that opens with a capital (a man page's option and its text, as
    PDF extraction keeps them together)."""
    first, _, rest = block.partition("\n")
    first = first.strip()
    if not rest.strip() or not first or len(first) > _TERM_CHARS:
        return None
    if first.endswith((".", "!", "?", ":", ";", ",")) or _LIST_MARKER.match(first):
        return None
    return first if rest.lstrip()[:1].isupper() else None


def _entry_tail(text: str, size: int) -> str:
    """The overlap carried into the next chunk (``_tail``, at most ``size`` characters);
    when it starts inside a definition entry, after the entry's term line, the term
    comes first: "When searching recursively, skip …" carried alone describes nothing,
    the option it describes left in the previous chunk."""
    block = text[text.rfind("\n\n") + 2 :] if "\n\n" in text else text
    term = _term(block)
    if term is not None:
        tail = _tail(text, size - len(term) - 1)
        inside = block.endswith(tail) and len(block) - len(tail) >= len(term) + 1
        if tail and inside and not tail.startswith(term):
            return f"{term}\n{tail}"
    return _tail(text, size)


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
                budget = min(overlap_chars, chunk_chars - len(piece) - len(joiner))
                overlap = "" if tabular else _entry_tail(current, budget)
                # The overlap reads into the piece it precedes: as one paragraph when
                # the piece continues a block, as the paragraph before it when the
                # piece opens a block (a definition entry's term line stays a line).
                current = f"{overlap}{joiner}{piece}" if overlap else piece
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
