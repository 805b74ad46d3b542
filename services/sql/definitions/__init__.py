"""Business definitions: a database's glossary (file or configuration) and definitions
written in a request's instructions or inline in the question.
"""

from __future__ import annotations

from services.sql.definitions._file import load_glossary, load_glossary_file
from services.sql.definitions._glossary import GlossaryEntry, JoinSpec
from services.sql.definitions._text import (
    inline_definitions,
    is_wordy,
    parse_definitions,
    trim_definition,
)
from services.sql.definitions._units import stated_unit

__all__ = [
    "GlossaryEntry",
    "JoinSpec",
    "inline_definitions",
    "is_wordy",
    "load_glossary",
    "load_glossary_file",
    "parse_definitions",
    "stated_unit",
    "trim_definition",
]
