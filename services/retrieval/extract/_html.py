"""HTML: the page's content, without its chrome, cut into sections at h1-h6.

The standard library's ``html.parser`` tokenises (it never fails on bad markup), and a
small tree is built from its events with the handful of implicit-close rules that real
pages lean on (an unclosed ``<p>``, ``<li>``, ``<td>``, ``<tr>``). A permissive parser
from PyPI would add a dependency for little: extraction needs the text and the block
structure, not a conforming DOM.

What is kept: when the page marks its content (``<main>``, ``role="main"``, else its
``<article>`` elements), only that; everything else is navigation, banners and
sidebars. Within it, elements that are never content are dropped (scripts, styles,
navigation, asides, forms, inline SVG, templates, hidden elements), and so are headers
and footers, except a ``<header>`` inside an article or main, which holds the article's
own title. Block elements separate paragraphs; tables become markdown tables (``_table``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser

from services.retrieval.extract._limits import (
    CharBudget,
    Extracted,
    Kind,
    Reason,
    SectionBuilder,
    Unextractable,
)
from services.retrieval.extract._table import table_block
from services.retrieval.extract._text import decode_text

# fmt: off
_VOID = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
    "source", "track", "wbr"
})
_DROP = frozenset({
    "script", "style", "noscript", "nav", "aside", "form", "svg", "template", "head",
    "iframe", "object", "canvas", "button", "select", "textarea", "datalist", "dialog"
})
_CHROME = frozenset({"header", "footer"})
_BLOCK = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd",
    "details", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
    "form", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav", "ol",
    "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr",
    "ul"
})
# fmt: on
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# Start tags that close an open element of the same family, up to (not past) a boundary.
_IMPLICIT_CLOSE: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), frozenset({"ul", "ol", "menu", "table"})),
    "dt": (frozenset({"dt", "dd"}), frozenset({"dl", "table"})),
    "dd": (frozenset({"dt", "dd"}), frozenset({"dl", "table"})),
    "tr": (frozenset({"tr", "td", "th"}), frozenset({"table", "thead", "tbody", "tfoot"})),
    "td": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "th": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "thead": (frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}), frozenset({"table"})),
    "tbody": (frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}), frozenset({"table"})),
    "tfoot": (frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}), frozenset({"table"})),
    "option": (frozenset({"option"}), frozenset({"select", "datalist"})),
}
# Elements nested deeper than this are flattened into their ancestor: the text is kept,
# and walking the tree cannot exhaust Python's recursion limit.
_MAX_DEPTH = 200
_MAX_COLSPAN = 100
# The closers the standard parser searches for (``_markupbase``), and the MS Office
# marked sections (``<![if …]>``) that close with a single bracket.
_COMMENT_CLOSE = re.compile(r"--\s*>")
_SECTION_CLOSE = re.compile(r"]\s*]\s*>")
_MS_SECTION_CLOSE = re.compile(r"]\s*>")
_MS_SECTION = re.compile(r"<!\[\s*(?:if|else|endif)\b", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str]
    children: list[_Node | str] = field(default_factory=list)


class _TreeBuilder(HTMLParser):
    """A tree from ``html.parser``'s events, in time linear in the page's length.

    The standard parser is quadratic on constructs that never close: for each ``</``,
    ``<!--``, ``<![`` it searches the rest of the page for the closer, fails, and moves on
    by a few characters (``'<p>text</p>' + '</' * N``: 256 KiB took 4.7 s, 512 KiB 18 s).
    Two guards keep every search one that succeeds nearby or is never made: the text
    after the page's last ``>`` (where nothing can close) is handed over as text, which
    is what the parser would make of it; and a comment or marked section with no closer
    anywhere after it is reported as incomplete at once, so the parser's recovery takes
    it as text up to the next ``>``, as it would have after the search."""

    def __init__(self, max_elements: int) -> None:
        super().__init__(convert_charrefs=True)
        self._max_elements = max_elements
        self._elements = 0
        # (the rawdata it was found in, the offset after which the closer never occurs)
        self._closers: dict[re.Pattern[str], tuple[str, int]] = {}
        self.root = _Node("#root", {})
        self.stack: list[_Node] = [self.root]
        # How many of each tag are open: most end and implicit-close lookups are for a
        # tag that is not open at all, and this answers them without scanning the stack.
        self.open: Counter[str] = Counter()

    def read(self, text: str) -> None:
        """Parse all of ``text`` (``feed`` then ``close``)."""
        cut = text.rfind(">") + 1
        self.feed(text[:cut])
        self.close()
        tail = text[cut:]
        if tail:
            # No tag, comment or declaration can complete without a ">": this is the
            # text the parser's own recovery would make of it, found in one pass.
            self.handle_data(tail if self.cdata_elem else unescape(tail))

    def _closes_after(self, pattern: re.Pattern[str], i: int) -> bool:
        """Whether ``pattern`` matches somewhere in the buffer after ``i`` (one scan of
        the buffer per pattern, however many constructs ask)."""
        rawdata = self.rawdata
        seen = self._closers.get(pattern)
        if seen is None or seen[0] is not rawdata:
            last = -1
            for match in pattern.finditer(rawdata):
                last = match.start()
            seen = (rawdata, last)
            self._closers[pattern] = seen
        return seen[1] >= i

    def parse_comment(self, i: int, report: bool = True) -> int:
        if not self._closes_after(_COMMENT_CLOSE, i + 4):
            return -1
        return super().parse_comment(i, report)

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        closer = _MS_SECTION_CLOSE if _MS_SECTION.match(self.rawdata, i) else _SECTION_CLOSE
        if not self._closes_after(closer, i + 3):
            return -1
        return super().parse_marked_section(i, report)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._elements += 1
        if self._elements > self._max_elements:  # counted as the page streams by
            raise Unextractable(
                Reason.TOO_LARGE, f"has more than {self._max_elements:,} HTML elements"
            )
        node = _Node(tag, {k: v or "" for k, v in attrs})
        if tag in _IMPLICIT_CLOSE:
            self._close_implicit(*_IMPLICIT_CLOSE[tag])
        elif tag in _BLOCK or tag in _HEADINGS:
            self._close_implicit(frozenset({"p"}), frozenset({"table", "li", "td", "th"}))
        self.stack[-1].children.append(node)
        if tag not in _VOID and len(self.stack) < _MAX_DEPTH:
            self.stack.append(node)
            self.open[tag] += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open[tag]:
            return
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                self._pop_to(depth)
                return

    def _pop_to(self, depth: int) -> None:
        for node in self.stack[depth:]:
            self.open[node.tag] -= 1
        del self.stack[depth:]

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)

    def _close_implicit(self, family: frozenset[str], boundary: frozenset[str]) -> None:
        if not any(self.open[tag] for tag in family):
            return
        for depth in range(len(self.stack) - 1, 0, -1):
            tag = self.stack[depth].tag
            if tag in boundary:
                return
            if tag in family:
                self._pop_to(depth)
                return


def _hidden(node: _Node) -> bool:
    style = node.attrs.get("style", "").replace(" ", "").lower()
    return (
        "hidden" in node.attrs
        or node.attrs.get("aria-hidden", "").lower() == "true"
        or "display:none" in style
    )


def _elements(node: _Node) -> Iterator[_Node]:
    """Every element under ``node`` in document order (iterative: a nested generator
    per level would cost the tree's depth for every element it yields)."""
    pending = [iter(node.children)]
    while pending:
        for child in pending[-1]:
            if isinstance(child, _Node):
                yield child
                pending.append(iter(child.children))
                break
        else:
            pending.pop()


def _plain(node: _Node) -> str:
    """All text under ``node`` on one line (headings, table cells, the title)."""
    parts: list[str] = []

    def collect(current: _Node) -> None:
        for child in current.children:
            if isinstance(child, str):
                parts.append(child)
            elif child.tag not in _DROP and not _hidden(child):
                if child.tag in _BLOCK or child.tag == "br":
                    parts.append(" ")
                collect(child)

    collect(node)
    return " ".join("".join(parts).split())


def _content_roots(root: _Node) -> list[_Node]:
    """<main> (or role=main) if the page has one, else its outermost articles, else all."""
    mains: list[_Node] = []
    articles: list[_Node] = []

    def find(node: _Node, in_article: bool) -> None:
        for child in node.children:
            if not isinstance(child, _Node) or child.tag in _DROP or _hidden(child):
                continue
            if child.tag == "main" or child.attrs.get("role", "").lower() == "main":
                mains.append(child)
                continue
            if child.tag == "article" and not in_article:
                articles.append(child)
            find(child, in_article or child.tag == "article")

    find(root, False)
    return mains[:1] or articles or [root]


def _table_rows(table: _Node) -> tuple[list[list[str]], bool | None]:
    """The table's rows (a cell spanning columns keeps its value in the first), and
    whether its first row is a header as the markup says: all ``<th>`` cells, yes; no
    ``<th>`` anywhere, left to the data (None); ``<th>`` elsewhere only (row labels in
    the first column), no."""
    rows: list[list[str]] = []
    heads: list[bool] = []

    def walk(node: _Node) -> None:
        for child in node.children:
            if not isinstance(child, _Node) or child.tag in _DROP or child.tag == "table":
                continue
            if child.tag == "tr":
                row: list[str] = []
                all_th = True
                for cell in child.children:
                    if isinstance(cell, _Node) and cell.tag in ("td", "th"):
                        span = cell.attrs.get("colspan", "1")
                        width = min(int(span), _MAX_COLSPAN) if span.isdigit() else 1
                        row += [_plain(cell)] + [""] * (max(width, 1) - 1)
                        all_th = all_th and cell.tag == "th"
                rows.append(row)
                heads.append(all_th and bool(row))
            else:
                walk(child)

    walk(table)
    header: bool | None = None
    if heads and heads[0]:
        header = True
    elif any(heads) or _has_th(table):
        header = False
    return rows, header


def _has_th(node: _Node) -> bool:
    return any(
        isinstance(child, _Node) and child.tag != "table" and (child.tag == "th" or _has_th(child))
        for child in node.children
    )


@dataclass
class _Walker:
    sections: SectionBuilder
    line: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def paragraph_break(self) -> None:
        self.line_break()
        if self.lines:
            self.sections.add("\n".join(self.lines))
            self.lines.clear()

    def line_break(self) -> None:
        text = " ".join("".join(self.line).split())
        self.line.clear()
        if text:
            self.lines.append(text)

    def walk(self, node: _Node, in_article: bool) -> None:
        for child in node.children:
            if isinstance(child, str):
                self.line.append(child)
                continue
            tag = child.tag
            if tag in _DROP or _hidden(child):
                continue
            if tag in _CHROME and not (tag == "header" and in_article):
                continue
            if tag in _HEADINGS:
                self.paragraph_break()
                text = _plain(child)
                if text:
                    self.sections.heading(_HEADINGS[tag], text)
            elif tag == "br":
                self.line_break()
            elif tag == "pre":
                self.paragraph_break()
                self.sections.add(_raw(child))
            elif tag == "table":
                self.paragraph_break()
                rows, header = _table_rows(child)
                self.sections.add(table_block(rows, header=header))
            elif tag in _BLOCK:
                self.paragraph_break()
                self.walk(child, in_article or tag in ("article", "main"))
                self.paragraph_break()
            else:
                self.walk(child, in_article)


def _raw(node: _Node) -> str:
    """Preformatted text as written (only the surrounding blank lines go)."""
    parts: list[str] = []

    def collect(current: _Node) -> None:
        for child in current.children:
            if isinstance(child, str):
                parts.append(child)
            elif child.tag not in _DROP:
                collect(child)

    collect(node)
    return "".join(parts).strip("\n")


def _h1_texts(roots: list[_Node]) -> Iterator[str]:
    for root in roots:
        for node in _elements(root):
            if node.tag == "h1" and not _hidden(node):
                yield _plain(node)


def declared_charset(data: bytes) -> str | None:
    """The charset a page declares in a ``<meta>`` near its start, if any."""
    match = _META_CHARSET.search(data[:4096])
    return match.group(1).decode("ascii") if match else None


def extract_html(
    data: bytes, text: str, encoding: str, budget: CharBudget, max_elements: int
) -> Extracted:
    """``text`` is ``data`` decoded by the generic text rules; a page that fell through
    to cp1252 but declares another charset is decoded again with the declared one."""
    declared = declared_charset(data)
    if encoding == "cp1252" and declared and declared.lower() not in ("cp1252", "windows-1252"):
        text, encoding = decode_text(data, declared=declared)
    parser = _TreeBuilder(max_elements)
    parser.read(text)
    root = parser.root
    title_node = next((n for n in _elements(root) if n.tag == "title"), None)
    title = _plain(title_node) if title_node is not None else ""
    builder = SectionBuilder(budget)
    walker = _Walker(builder)
    for content in _content_roots(root):
        # inside marked content a <header> is the article's own, not the site's banner
        walker.walk(content, content is not root)
        walker.paragraph_break()
    builder.flush()
    if not title:
        title = next((t for t in _h1_texts(_content_roots(root)) if t), "")
    if not builder.sections:
        raise Unextractable(Reason.EMPTY, "is an HTML page without any text content")
    return Extracted(Kind.HTML, title or None, builder.sections, encoding=encoding)
