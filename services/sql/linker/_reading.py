"""Splitting a question into the phrases the steps read: the items of an output list,
the relative clause that ends it, an item without its ranking words."""

from __future__ import annotations

import re

REL = re.compile(
    r"\s+(?:who|that|which|whose|where|for|based on|by doing|starting from|ordered|sorted|in"
    r"|with|within|across|from (?:the )?\w+ (?:that|who|which)|of \w+s who|considering|excluding"
    r"|not including)\b",
    re.IGNORECASE,
)


def cut_relative(text: str) -> tuple[str, str]:
    end = re.search(r"[.?;](\s|$)", text)
    sentence = text[: end.start()] if end else text
    rest = text[end.end() :] if end else ""
    for m in REL.finditer(sentence):
        before = sentence[: m.start()]
        if before.count("(") <= before.count(")"):  # not inside a formula's parentheses
            return before, sentence[m.start() :] + " " + rest
    return sentence, rest


def split_items(text: str) -> list[str]:
    """An output list split at commas and "and" outside parentheses. Asides in
    parentheses are dropped unless they hold a list or arithmetic."""
    if not re.search(r"[/*]", text):
        text = re.sub(
            r"\([^)]*\)",
            lambda m: m.group(0) if re.search(r"[/*,]|\band\b", m.group(0)) else " ",
            text,
        )
    parts: list[str] = []
    depth = 0
    current = ""
    for piece in re.split(r"(,\s*(?:and\s+)?|\s+and\s+|\s*&\s*|\(|\))", text):
        if piece == "(":
            depth += 1
        elif piece == ")":
            depth = max(depth - 1, 0)
        pending_between = bool(re.search(r"\bbetween\b(?!.*\band\b)", current))
        if pending_between and re.fullmatch(r"\s+and\s+", piece or "x"):
            current += piece  # "between A and B" is one item
        elif depth == 0 and re.fullmatch(r",\s*(?:and\s+)?|\s+and\s+|\s*&\s*", piece or "x"):
            parts.append(current)
            current = ""
        else:
            current += piece or ""
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


# Output items that name the answer itself ("Return the percentage value").
RESULT_WORDS = frozenset(
    [
        "the",
        "a",
        "percentage",
        "percent",
        "value",
        "result",
        "answer",
        "ratio",
        "rate",
        "number",
        "figure",
        "total",
    ]
)


GENERIC = frozenset(["id", "ids", "name", "names", "type", "code", "date", "title"])


def clean_item(phrase: str) -> str:
    """An output item without its ranking words ("top 3 most common transaction statuses"
    -> "transaction statuses")."""
    p = phrase if re.search(r"[/*]", phrase) else re.sub(r"\([^)]*\)", " ", phrase)
    p = p.strip().strip(".?").strip()
    p = re.sub(r"^(?:the|their|its|his|her|each|a|an|all)\s+", "", p, flags=re.I)
    p = re.sub(r"^(?:showing|including|with|plus|also)\s+(?:the\s+)?", "", p, flags=re.I)
    p = re.sub(r"^(?:overall|resulting|final|calculated|computed)\s+", "", p, flags=re.I)
    p = re.sub(r"^(?:our|my|your)\s+", "", p, flags=re.I)
    if re.match(r"(?:top|bottom)\s+\d+\s+", p, flags=re.I):
        p = re.sub(r"\s+by\s+.*$", "", p)
    p = re.sub(r"^(?:top|bottom|first|last)\s+\d+\s+", "", p, flags=re.I)
    p = re.sub(r"^\d+\s+", "", p)
    p = re.sub(
        r"^(?:most|least)\s+(?:common|frequent(?:ly)?(?:\s+used)?|popular)\s+|^best\s+selling\s+"
        r"|^distinct\s+list\s+of\s+|^list\s+of\s+|^distinct\s+",
        "",
        p,
        flags=re.I,
    )
    return p.strip()
