"""Text as a reader sees the page, from where the runs of text sit (`Run`s).

Each decision is made from geometry or from the document itself, never from patterns of
a particular writer:

- spaces: a gap between two runs on a baseline wider than `_SPACE_EM` of the font size
  is a space; kerning moves glyphs by a few hundredths of an em ("Huf" "fman").
- columns: a vertical band in the middle of the page that no line crosses while many
  lines sit on both sides is a gutter; the left column is read before the right.
- running headers and footers: the first and last lines of a page that recur, digits
  aside, at the same height on other pages are dropped (`running_lines`).
- definition lists: a short line followed by lines indented deeper (a man page's
  "-k, --keep" and its paragraph) is one unit, a blank line before the next entry.
- hyphenation: "com-" + "pressed" becomes "compressed" unless the document itself
  spells the word with its hyphen ("read-only"); option dashes are never touched.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.retrieval.extract._pdf_glyphs import Run

# A gap wider than this fraction of the font size is a space: kerning is a few hundredths
# of an em, the narrowest justified space about a fifth.
_SPACE_EM = 0.12
# A gap this wide (in ems) separates a line into segments (a tag and its text, columns).
_SEGMENT_EM = 1.2
# Baselines closer than this fraction of the font size are one line (sub/superscripts).
_BASELINE_EM = 0.35
# Positions tried for a gutter across the middle 40% of a page.
_GUTTER_STEPS = 80
# Lines near the top and bottom of a page that can be running headers or footers.
_EDGE_LINES = 3
# Minus and hyphen look-alikes that mean "-" in option names and words.
_DASHES = str.maketrans({"\u2212": "-", "\u2010": "-", "\u2011": "-"})
_WORD = re.compile(r"[^\W\d_](?:[\w'\u2019-]*[^\W\d_])?")
_HYPHENATED_END = re.compile(r"(?<![\w-])([^\W\d_]{2,})-$")
_NEXT_WORD = re.compile(r"^([^\W\d_][\w'\u2019]*)(.*)$", re.DOTALL)
_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[ivxlc]+$", re.IGNORECASE)
# A line ending a sentence closes its paragraph; it is not a term ("-exec command ;" is).
_SENTENCE_END = (".", "!", "?")


@dataclass(slots=True)
class Segment:
    x0: float
    x1: float
    text: str


@dataclass(slots=True)
class Line:
    """One baseline of text: its segments (split at wide gaps), left to right."""

    y: float
    size: float
    segments: list[Segment]

    @property
    def x0(self) -> float:
        return self.segments[0].x0

    @property
    def x1(self) -> float:
        return self.segments[-1].x1

    @property
    def text(self) -> str:
        return " ".join(segment.text for segment in self.segments)


def _normalise(text: str) -> str:
    return " ".join(text.translate(_DASHES).replace("\x00", " ").split())


def lines_of(runs: Iterable[Run]) -> list[Line]:
    """Runs grouped into lines top to bottom, each line's runs joined left to right with a
    space only where the gap between them is one."""
    ordered = sorted(runs, key=lambda run: -run.y)
    groups: list[list[Run]] = []
    for run in ordered:
        if not run.text.strip():
            continue
        last = groups[-1][0] if groups else None
        if last is not None and abs(last.y - run.y) <= _BASELINE_EM * max(run.size, last.size):
            groups[-1].append(run)
        else:
            groups.append([run])
    lines = []
    for group in groups:
        # The same string drawn again at the same place (overprinted for a bold look, a
        # stamp repeated by nested forms) is read once.
        runs_once = sorted(
            {(round(run.x0), run.text): run for run in group}.values(), key=lambda run: run.x0
        )
        size = max(run.size for run in runs_once)
        segments: list[Segment] = []
        parts: list[str] = []
        start = end = runs_once[0].x0
        for run in runs_once:
            if parts:
                gap = run.x0 - end
                if gap > _SEGMENT_EM * size:
                    segments.append(Segment(start, end, _normalise("".join(parts))))
                    parts, start = [], run.x0
                elif gap > _SPACE_EM * run.size:
                    parts.append(" ")
            parts.append(run.text)
            end = max(end, run.x1)
        segments.append(Segment(start, end, _normalise("".join(parts))))
        segments = [segment for segment in segments if segment.text]
        if segments:
            lines.append(Line(group[0].y, size, segments))
    return lines


def plain_lines(text: str) -> list[Line]:
    """Lines of text without positions (a page whose content stream could not be walked):
    stacked one em apart at the left margin, so the rest treats them as prose."""
    lines = []
    y = 0.0
    for raw in text.splitlines():
        normal = _normalise(raw)
        y -= 12.0
        if normal:
            lines.append(Line(y, 10.0, [Segment(0.0, len(normal) * 5.0, normal)]))
    return lines


# -- running headers and footers --------------------------------------------------------


def _edge_key(text: str) -> str:
    masked = _DIGITS.sub("#", text)
    return "#" if _ROMAN.match(masked) else masked


def running_lines(pages: Sequence[Sequence[Line]]) -> list[set[int]]:
    """For each page, the indexes of its lines that are running headers or footers.

    A candidate is one of a page's first or last `_EDGE_LINES` lines. It runs when its
    text, digits aside, recurs at the same height (within a few points) on at least
    three pages (two in a two-page file), or on two pages when it is the top or bottom
    line at a height where half the pages have their top or bottom line (a header band
    whose text changes with the chapter: "Chapter 3: Utilities 6")."""
    if len(pages) < 2:
        return [set() for _ in pages]
    needed = min(3, len(pages))
    where: dict[tuple[str, int], set[int]] = {}
    bands: Counter[tuple[str, int]] = Counter()
    candidates: list[list[tuple[int, str, int]]] = []
    for number, lines in enumerate(pages):
        count = len(lines)
        edge = sorted(set(range(min(_EDGE_LINES, count)))
                      | set(range(max(0, count - _EDGE_LINES), count)))  # fmt: skip
        mine = []
        for index in edge:
            key, height = _edge_key(lines[index].text), round(lines[index].y / 3)
            mine.append((index, key, height))
            where.setdefault((key, height), set()).add(number)
        if lines:
            bands[("top", round(lines[0].y / 3))] += 1
            bands[("bottom", round(lines[-1].y / 3))] += 1
        candidates.append(mine)
    half = max(2, len(pages) / 2)

    def band(side: str, height: int) -> bool:
        return sum(bands[(side, h)] for h in (height - 1, height, height + 1)) >= half

    dropped: list[set[int]] = []
    for lines, mine in zip(pages, candidates, strict=True):
        drop = set()
        for index, key, height in mine:
            near = (height - 1, height, height + 1)
            there = set().union(*(where.get((key, h), set()) for h in near))
            side = "top" if index == 0 else "bottom" if index == len(lines) - 1 else ""
            if len(there) >= needed or (len(there) >= 2 and side and band(side, height)):
                drop.add(index)
        dropped.append(drop)
    return dropped


# -- columns ----------------------------------------------------------------------------


def _gutter(lines: Sequence[Line]) -> float | None:
    """The x of a gutter between two columns, or None for a one-column page."""
    if len(lines) < 8:
        return None
    left = min(line.x0 for line in lines)
    right = max(line.x1 for line in lines)
    width = right - left
    if width <= 0:
        return None
    # How many segments cross each of `_GUTTER_STEPS` + 1 positions across the middle
    # of the page, by a difference array: linear in the segments however many there are.
    start, span = left + 0.3 * width, 0.4 * width
    steps = _GUTTER_STEPS
    delta = [0] * (steps + 2)
    for line in lines:
        for s in line.segments:
            first = max(0, math.floor((s.x0 - start) / span * steps) + 1)
            last = min(steps, math.ceil((s.x1 - start) / span * steps) - 1)
            if first <= last:
                delta[first] += 1
                delta[last + 1] -= 1
    crossing, best = 0, None
    for index in range(steps + 1):
        crossing += delta[index]
        if best is None or crossing < best[0]:
            best = (crossing, start + span * index / steps)
    if best is None or best[0] > 0.1 * len(lines):
        return None
    gutter = best[1]
    ends = [max(s.x1 for s in line.segments if s.x1 <= gutter) for line in lines
            if any(s.x1 <= gutter for s in line.segments)]  # fmt: skip
    starts = [min(s.x0 for s in line.segments if s.x0 >= gutter) for line in lines
              if any(s.x0 >= gutter for s in line.segments)]  # fmt: skip
    if min(len(ends), len(starts)) < max(4, 0.25 * len(lines)):
        return None
    size = statistics.median(line.size for line in lines)
    # Text set in columns fills the left column to within a few ems of the right one,
    # line after line; a table's cells stop short at varied places, far from the next
    # column, and a table is read across, row by row.
    edge = max(ends)
    filled = sum(1 for end in ends if end >= edge - 0.3 * (edge - left))
    if filled < 0.5 * len(ends) or min(starts) - edge > 4 * size:
        return None
    return gutter


def _split(line: Line, gutter: float) -> tuple[Line | None, Line | None]:
    left = [s for s in line.segments if s.x1 <= gutter]
    right = [s for s in line.segments if s.x0 >= gutter]
    return (
        Line(line.y, line.size, left) if left else None,
        Line(line.y, line.size, right) if right else None,
    )


def reading_order(lines: Sequence[Line]) -> list[list[Line]]:
    """The page as columns to read one after the other: one list for a one-column page;
    on a two-column page, between lines that cross the gutter (titles, figures' captions
    across both columns) the left column's lines, then the right column's."""
    gutter = _gutter(lines)
    if gutter is None:
        return [list(lines)]
    blocks: list[list[Line]] = []
    left: list[Line] = []
    right: list[Line] = []

    def flush() -> None:
        for column in (left, right):
            if column:
                blocks.append(list(column))
                column.clear()

    for line in lines:
        if any(s.x0 < gutter < s.x1 for s in line.segments):
            flush()
            blocks.append([line])
            continue
        a, b = _split(line, gutter)
        if a is not None:
            left.append(a)
        if b is not None:
            right.append(b)
    flush()
    return blocks


# -- vocabulary and hyphenation ---------------------------------------------------------


def vocabulary(pages: Iterable[Iterable[Line]]) -> Counter[str]:
    """Words of the document as it spells them, lower-cased; the fragment before a
    line-end hyphen is left out, so it cannot vouch for itself."""
    words: Counter[str] = Counter()
    for lines in pages:
        for line in lines:
            text = line.text
            if _HYPHENATED_END.search(text):
                text = text[: text.rfind(" ") + 1] if " " in text else ""
            words.update(word.lower() for word in _WORD.findall(text))
    return words


def _join(left: str, right: str, words: Counter[str]) -> str:
    """Two wrapped lines as one: "com-" + "pressed" joined when the document has the
    joined word or does not spell it with a hyphen; "read-" + "only" keeps its hyphen
    when the document writes "read-only"."""
    hyphen = _HYPHENATED_END.search(left)
    following = _NEXT_WORD.match(right)
    if hyphen and following and following.group(1)[:1].islower():
        head, tail = hyphen.group(1), following.group(1)
        joined = (head + tail).lower()
        if words[joined] or not words[f"{head}-{tail}".lower()]:
            return left[:-1] + right
        return left + right
    return f"{left} {right}"


# -- paragraphs and definition lists ----------------------------------------------------


def _split_tags(lines: list[Line]) -> list[Line]:
    """A tag and its text on one baseline ("-b    like --backup ...") as two lines, when
    the text starts where a neighbouring line's text does."""
    out: list[Line] = []
    for index, line in enumerate(lines):
        if len(line.segments) >= 2 and len(line.segments[0].text) <= 30:
            second = line.segments[1]
            tol = line.size / 2
            near = [lines[i] for i in (index - 1, index + 1) if 0 <= i < len(lines)]
            if any(abs(other.x0 - second.x0) <= tol for other in near):
                out.append(Line(line.y, line.size, [line.segments[0]]))
                out.append(Line(line.y, line.size, line.segments[1:]))
                continue
        out.append(line)
    return out


class _Column:
    """One column's lines with the measures the decisions need."""

    def __init__(self, lines: list[Line], words: Counter[str]) -> None:
        self.lines = lines
        self.words = words
        self.size = statistics.median(line.size for line in lines)
        self.tol = self.size / 2
        self.right = max(line.x1 for line in lines)
        # Line spacing: the lower quartile of the steps between lines of one size, since
        # on a page of short paragraphs the gaps between them can be the majority.
        steps = sorted(
            a.y - b.y
            for a, b in itertools.pairwise(lines)
            if a.y - b.y > 0.5 * self.size and abs(a.size - b.size) < 0.04 * a.size
        )
        self.leading = steps[len(steps) // 4] if steps else 1.2 * self.size

    def full(self, line: Line) -> bool:
        """The line runs to the right margin: the text wrapped, it did not end here."""
        return line.x1 >= self.right - 3 * self.size

    def gap(self, a: Line, b: Line) -> bool:
        """More space between two lines than the column's line spacing."""
        return a.y - b.y > 1.25 * self.leading

    def deeper(self, a: Line, b: Line) -> bool:
        return b.x0 > a.x0 + self.tol

    def is_term(self, line: Line, following: Line) -> bool:
        return (
            self.deeper(line, following)
            and not self.full(line)
            and not line.text.endswith(_SENTENCE_END)
        )

    def render(self, lines: Sequence[Line]) -> str:
        text = lines[0].text
        for a, b in itertools.pairwise(lines):
            if abs(a.y - b.y) < 0.1 * self.size and len(a.text) == 1 and not a.text.isalnum():
                text = f"{text} {b.text}"  # a bullet and its item
            elif self.full(a) and not self.gap(a, b) and abs(a.y - b.y) >= 0.1 * self.size:
                text = _join(text, b.text, self.words)
            else:
                text = f"{text}\n{b.text}"
        return text

    def blocks(self, lines: Sequence[Line]) -> list[str]:
        out: list[str] = []
        i, n = 0, len(lines)
        while i < n:
            first = lines[i]
            j = i + 1
            while j < n and self.deeper(first, lines[j]):
                j += 1
            body = lines[i + 1 : j]
            if body and self.is_term(first, body[0]):
                if self._heading(first, body):
                    out.append(first.text)
                    out.extend(self.blocks(body))
                else:
                    out.append(self.render(lines[i:j]))
                i = j
                continue
            k = i + 1
            while k < n and self._continues(lines[k - 1], lines[k], k - 1 == i):
                starts_entry = k + 1 < n and self.is_term(lines[k], lines[k + 1])
                if starts_entry and not self.full(lines[k - 1]):
                    break  # the line after a short one opens a definition entry
                k += 1
            out.append(self.render(lines[i:k]))
            i = k
        return out

    def _heading(self, first: Line, body: Sequence[Line]) -> bool:
        """A section heading over its body rather than a term over its definition: the
        line is in a larger font than what follows it, or the body holds entries of its
        own (two or more: a heading over an options list)."""
        if first.size > body[0].size * 1.04:
            return True
        base = min(line.x0 for line in body)
        terms = sum(
            1
            for a, b in itertools.pairwise(body)
            if abs(a.x0 - base) <= self.tol and self.is_term(a, b)
        )
        return terms >= 2  # one indented example inside a description is not a list

    def _continues(self, a: Line, b: Line, a_first: bool) -> bool:
        """b goes on the paragraph a is in."""
        if self.gap(a, b) or abs(a.size - b.size) > 0.04 * max(a.size, b.size):
            return False  # space between them, or a heading in its own size
        if abs(b.x0 - a.x0) <= self.tol:
            return True
        # A first line indented deeper than the rest of its paragraph, or a hanging
        # indent (a bullet's item, a wrapped entry) whose first line runs full.
        return a_first and self.full(a)


def page_text(columns: Sequence[Sequence[Line]], words: Counter[str]) -> str:
    """A page's text: each column's paragraphs and definition entries, blank lines between."""
    blocks: list[str] = []
    for lines in columns:
        if not lines:
            continue
        column = _Column(_split_tags(list(lines)), words)
        blocks.extend(column.blocks(column.lines))
    return "\n\n".join(block for block in blocks if block.strip())
