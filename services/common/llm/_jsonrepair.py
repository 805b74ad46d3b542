"""Recover the JSON value from a model's reply, however it was wrapped.

Models wrap JSON in ``<think>`` blocks, Markdown code fences or chatty prose, and leave
trailing commas; all of that is repaired here. Anything else is a parse error, and the
caller re-asks once rather than guessing.
"""

from __future__ import annotations

import json
import re
from typing import TypeVar

from services.common.llm._schema import decode

T = TypeVar("T")

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"^.*</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"'})


class JsonRepairError(ValueError):
    """No JSON value could be recovered; the message describes where it broke."""


def extract_json(text: str) -> object:
    """Parse the JSON object or array in ``text``, repairing the usual model slips."""
    cleaned = _THINK_BLOCK.sub("", text)
    # An unclosed or leading-only closing tag: everything up to </think> is reasoning.
    cleaned = _THINK_OPEN.sub("", cleaned)
    candidates: list[str] = [m.group(1) for m in _FENCE.finditer(cleaned)]
    candidates.append(cleaned)
    last_error = "no JSON object or array found"
    for candidate in candidates:
        for body in _spans(candidate):
            for attempt in (body, _strip_trailing_commas(body), _normalise_quotes(body)):
                try:
                    value: object = json.loads(attempt)
                except json.JSONDecodeError as exc:
                    last_error = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
                    continue
                return value
    raise JsonRepairError(last_error)


def parse_output(tp: type[T], text: str) -> T:
    """Extract, repair and validate a model reply as ``tp`` (raises on failure)."""
    return decode(tp, extract_json(text))


def _spans(text: str, max_spans: int = 8) -> list[str]:
    """Balanced ``{…}``/``[…]`` spans from the first few opening brackets, in order.

    Several starts are tried because prose or an unclosed reasoning block may contain
    a stray bracket before the real value.
    """
    spans: list[str] = []
    for start, ch in enumerate(text):
        if ch in "{[":
            spans.append(_balanced_from(text, start))
            if len(spans) >= max_spans:
                break
    return spans


def _balanced_from(text: str, start: int) -> str:
    """The balanced span opening at ``start``, honouring strings and escapes."""
    stack: list[str] = []
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and (not stack or stack.pop() != ch or not stack):
            return text[start : i + 1]
    # Unbalanced (truncated) output: hand back what there is and let json report it.
    return text[start:]


def _strip_trailing_commas(text: str) -> str:
    """Remove commas directly before ``}`` or ``]`` outside string literals."""
    out: list[str] = []
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
            out.append(ch)
            continue
        if ch == ",":
            rest = text[i + 1 :].lstrip()
            if rest[:1] in ("}", "]"):
                continue
        out.append(ch)
    return "".join(out)


def _normalise_quotes(text: str) -> str:
    """Curly double quotes to straight ones, then trailing commas again."""
    return _strip_trailing_commas(text.translate(_SMART_QUOTES))
