"""Where each run of text sits on a PDF page: a walk of the content stream.

pypdf's `extract_text()` decides spaces from its own heuristics over the operators, which
turns a kerned word into two ("anyinv ocation") and two words into one ("anyfurther");
its layout mode renders on a fixed-width grid and, where a font changes mid-line, puts
the rest of the line at the wrong x. Here every string a page shows becomes a `Run`
with its start and end on the page (from the text matrix, the CTM and the font's glyph
widths), so the spaces, lines and columns can be decided from the geometry
(services.retrieval.extract._pdf_layout) instead.

Fonts are decoded by pypdf's own `Font` (encodings, /Differences, ToUnicode, widths);
that class lives in a private pypdf module, so it is imported in one place and a page
whose walk fails for any reason falls back to `extract_text()` in the caller.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject
from pypdf._text_extraction._layout_mode import Font  # the one private pypdf import
from pypdf.generic import ContentStream, DictionaryObject, IndirectObject

# Form XObjects nest; a cycle or a deep tower of them is a crafted file, not a document.
_MAX_FORM_DEPTH = 6
# Forms drawn per page: a form that draws another many times, nested, would otherwise
# multiply the work exponentially (a page of ordinary stamps and logos uses a handful).
_MAX_FORMS_PER_PAGE = 200

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class Run:
    """A string shown at one place: page x of its start and end, baseline y, the font
    size as drawn (text matrix and CTM applied), and the text as Unicode."""

    x0: float
    x1: float
    y: float
    size: float
    text: str


def _mult(m: Matrix, n: Matrix) -> Matrix:
    return (
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    )


def _num(value: Any) -> float:
    return float(value)


def _matrix(operands: list[Any]) -> Matrix:
    a, b, c, d, e, f = (float(v) for v in operands[:6])
    return (a, b, c, d, e, f)


def _string_bytes(value: Any) -> bytes | None:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        original = getattr(value, "original_bytes", None)
        return original if isinstance(original, bytes) else value.encode("latin-1", "replace")
    return None


class FontCache:
    """Fonts decoded once per document: groff and TeX writers name the same font objects
    from every page, and building a `Font` parses its widths and CMap each time."""

    def __init__(self) -> None:
        self._fonts: dict[int, tuple[Font, float] | None] = {}

    def get(self, ref: Any) -> tuple[Font, float] | None:
        """The font and the factor from its width units to thousandths of an em (1, but
        a Type 3 font's widths are in its own glyph space, scaled by /FontMatrix)."""
        key = id(ref.get_object()) if not isinstance(ref, IndirectObject) else ref.idnum
        if key not in self._fonts:
            try:
                obj = ref.get_object()
                if isinstance(obj, DictionaryObject):
                    matrix = obj.get("/FontMatrix")
                    scale = float(matrix[0]) * 1000.0 if matrix is not None else 1.0
                    self._fonts[key] = (Font.from_font_resource(obj), scale)
                else:
                    self._fonts[key] = None
            except Exception:  # a broken font loses its text, not the page
                self._fonts[key] = None
        return self._fonts[key]


@dataclass(slots=True)
class _State:
    """The text state parameters (§9.3): font, size, spacing, scaling, rise, leading."""

    font: tuple[Font, float] | None = None
    size: float = 0.0
    tc: float = 0.0
    tw: float = 0.0
    th: float = 1.0
    ts: float = 0.0
    leading: float = 0.0

    def copy(self) -> _State:
        return _State(self.font, self.size, self.tc, self.tw, self.th, self.ts, self.leading)


class _Walker:
    """The text state machine of ISO 32000 §9.4 for the operators that place text."""

    def __init__(self, fonts: FontCache) -> None:
        self._fonts = fonts
        self.runs: list[Run] = []
        self.skipped = 0  # rotated or vertical text, not laid out here
        self._forms_left = _MAX_FORMS_PER_PAGE

    def walk(self, stream: Any, pdf: Any, resources: Any, ctm: Matrix, depth: int) -> None:
        font_dict = _dict(resources, "/Font")
        xobjects = _dict(resources, "/XObject")
        ops = ContentStream(stream, pdf, "bytes").operations
        stack: list[tuple[Matrix, _State]] = []
        st = _State()
        tm = tlm = _IDENTITY
        for operands, op in ops:
            try:
                if op in {b"Tj", b"'", b'"'}:
                    if op != b"Tj":
                        if op == b'"':
                            st.tw, st.tc = _num(operands[0]), _num(operands[1])
                        tlm = _mult((1.0, 0.0, 0.0, 1.0, 0.0, -st.leading), tlm)
                        tm = tlm
                    data = _string_bytes(operands[-1]) if operands else None
                    if data is not None:
                        tm = self._show(data, st, tm, ctm)
                elif op == b"TJ":
                    for item in operands[0] if operands else ():
                        data = _string_bytes(item)
                        if data is not None:
                            tm = self._show(data, st, tm, ctm)
                        elif isinstance(item, (int, float)):
                            shift = -float(item) / 1000.0 * st.size * st.th
                            tm = _mult((1.0, 0.0, 0.0, 1.0, shift, 0.0), tm)
                elif op in {b"Td", b"TD"}:
                    tx, ty = _num(operands[0]), _num(operands[1])
                    if op == b"TD":
                        st.leading = -ty
                    tlm = _mult((1.0, 0.0, 0.0, 1.0, tx, ty), tlm)
                    tm = tlm
                elif op == b"T*":
                    tlm = _mult((1.0, 0.0, 0.0, 1.0, 0.0, -st.leading), tlm)
                    tm = tlm
                elif op == b"Tm":
                    tm = tlm = _matrix(operands)
                elif op == b"BT":
                    tm = tlm = _IDENTITY
                elif op == b"Tf":
                    name = operands[0]
                    known = font_dict is not None and name in font_dict
                    st.font = (
                        self._fonts.get(font_dict.raw_get(name))
                        if font_dict is not None and known
                        else None
                    )
                    st.size = _num(operands[1])
                elif op == b"Tc":
                    st.tc = _num(operands[0])
                elif op == b"Tw":
                    st.tw = _num(operands[0])
                elif op == b"Tz":
                    st.th = _num(operands[0]) / 100.0
                elif op == b"TL":
                    st.leading = _num(operands[0])
                elif op == b"Ts":
                    st.ts = _num(operands[0])
                elif op == b"q":
                    stack.append((ctm, st.copy()))
                elif op == b"Q":
                    if stack:
                        ctm, st = stack.pop()
                elif op == b"cm":
                    ctm = _mult(_matrix(operands), ctm)
                elif op == b"Do" and xobjects is not None and depth < _MAX_FORM_DEPTH:
                    self._form(xobjects.get(operands[0]), pdf, resources, ctm, depth)
            except (IndexError, TypeError, ValueError, KeyError):
                continue  # one malformed operator, not the page

    def _form(self, ref: Any, pdf: Any, resources: Any, ctm: Matrix, depth: int) -> None:
        form = ref.get_object() if ref is not None else None
        if not isinstance(form, DictionaryObject) or form.get("/Subtype") != "/Form":
            return
        if self._forms_left <= 0:
            return
        self._forms_left -= 1
        matrix = form.get("/Matrix")
        inner = _mult(_matrix(list(matrix)), ctm) if matrix is not None else ctm
        own = form.get("/Resources")
        self.walk(form, pdf, own.get_object() if own is not None else resources, inner, depth + 1)

    def _show(self, data: bytes, st: _State, tm: Matrix, ctm: Matrix) -> Matrix:
        if st.font is None:
            return tm
        text, advance = _decode(st.font[0], data, st, st.font[1])
        start = _mult(tm, ctm)
        moved = _mult((1.0, 0.0, 0.0, 1.0, advance, 0.0), tm)
        if text:
            end = _mult(moved, ctm)
            drawn = st.size * math.hypot(start[2], start[3])
            if start[0] > 0 and abs(start[1]) <= 0.01 * abs(start[0]) and drawn > 0:
                y = start[5] + st.ts * start[3]
                self.runs.append(Run(start[4], end[4], y, drawn, text))
            else:
                self.skipped += 1
        return moved


def _dict(resources: Any, key: str) -> DictionaryObject | None:
    if not isinstance(resources, DictionaryObject):
        return None
    value = resources.get(key)
    value = value.get_object() if value is not None else None
    return value if isinstance(value, DictionaryObject) else None


def _decode(font: Font, data: bytes, st: _State, scale: float) -> tuple[str, float]:
    """The Unicode text of a string and its advance in text space (§9.4.4), decoded the
    way pypdf's layout mode does (raw codes → encoding → ToUnicode)."""
    encoding = font.encoding
    if isinstance(encoding, str):
        try:
            raw = data.decode(encoding, "surrogatepass")
        except (UnicodeDecodeError, LookupError):
            raw = data.decode(encoding, "replace") if encoding else data.decode("latin-1")
        decoded: Iterable[str] = raw
        single_byte = False
    else:
        raw = "".join(chr(byte) for byte in data)
        decoded = [encoding.get(byte, chr(byte)) for byte in data]
        single_byte = True
    mapping = font.character_map
    text = "".join(mapping.get(char, char) for char in decoded)
    width = 0.0
    spaces = 0
    for char in raw:
        if char == font.space_char:
            width += font.space_width
        else:
            width += font.get_text_width(char)
        if single_byte and char == " ":
            spaces += 1
    advance = (width * scale / 1000.0 * st.size + len(raw) * st.tc + spaces * st.tw) * st.th
    return text, advance


def page_runs(page: PageObject, fonts: FontCache) -> tuple[list[Run], int]:
    """Every horizontal string the page shows, and how many others were skipped."""
    walker = _Walker(fonts)
    contents = page.get_contents()
    if contents is None:
        return [], 0
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else None
    walker.walk(contents, page.pdf, resources, _IDENTITY, 0)
    return walker.runs, walker.skipped
