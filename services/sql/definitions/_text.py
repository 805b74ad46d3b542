"""Business definitions written in text: "TSC = Total Sales Count", "CPC is cost per
click", "active means status = 'active'" — from a request's instructions or inline in the
question — as glossary entries the linker reads like a glossary file's."""

from __future__ import annotations

import re

from services.sql.definitions._glossary import GlossaryEntry


def inline_definitions(question: str) -> list[GlossaryEntry]:
    """Definitions a question carries: "revenue refers to the sum of sale_price",
    "total revenue (based on sale price)"."""
    found = []
    for m in re.finditer(
        r"\b(\w+)\s+(?:refers to|means|is defined as)\s+([^.?;]+)", question, re.I
    ):
        found.append(GlossaryEntry(m.group(1), definition=m.group(2).strip(), source="question"))
    for m in re.finditer(r"\b(\w+)\s+\(based on ([^)]+)\)", question, re.I):
        found.append(GlossaryEntry(m.group(1), definition=m.group(2).strip(), source="question"))
    return found


def is_wordy(body: str) -> bool:
    """A definition written in words, fit to replace its term in the question (a rank is
    built from its definition instead, see ``_ranked``)."""
    if re.search(r"\brank", body, re.I):
        return False
    return not re.search(r"\b(SUM|COUNT|AVG|MIN|MAX)\s*\(|=|<|>|\bWHERE\b|\bCASE\b", body)


def trim_definition(body: str) -> str:
    body = re.split(r"\.\s", body.strip().rstrip("."))[0]
    # asides in parentheses ("(for the given time duration)") are not part of the formula
    body = re.sub(r"\s*\((?![^)]*[-+*/])[^)]*\)", "", body)
    return body.strip()


def parse_definitions(text: str) -> list[GlossaryEntry]:
    """Definitions in free text: "TSC = Total Sales Count", "CPC (cost per click) = …",
    "X refers to Y", "X means Y". One per sentence or line."""
    entries = []
    for sentence in re.split(r"(?<=[.;])\s+|\n+|(?<=\.)\s*-\s+", text):
        m = re.match(
            r"\s*-?\s*([A-Za-z][\w ]{0,40}?)\s*(?:\(([^)]*)\))?\s*(?:=|\bmeans\b|\brefers to\b|\bis defined as\b)\s*(.+)",
            sentence,
        )
        if not m:
            continue
        term = m.group(1).strip()
        synonyms = (m.group(2).strip(),) if m.group(2) else ()
        body = m.group(3).strip().rstrip(".")
        entries.append(GlossaryEntry(term, synonyms, definition=body, source="instructions"))
    return entries
