"""The words of questions and of names (stems, verb forms, name parts, abbreviations,
grammar words) and dates written in questions: the one place text is read into words.
"""

from __future__ import annotations

from services.sql.words._calendar import (
    ISO_DATE,
    MONTHS,
    WRITTEN_DATE,
    explicit_dates,
    shift,
    truncate,
    written_date,
)
from services.sql.words._words import (
    GRAMMAR_WORDS,
    SHORT_FORMS,
    SOFT_WORDS,
    STOP_WORDS,
    Tok,
    common_prefix,
    cover,
    irregular_past,
    lemma,
    maybe_covers,
    measure_name,
    name_words,
    stem,
    tokenize,
    undoubled,
    value_forms,
    word_match,
)

__all__ = [
    "GRAMMAR_WORDS",
    "ISO_DATE",
    "MONTHS",
    "SHORT_FORMS",
    "SOFT_WORDS",
    "STOP_WORDS",
    "WRITTEN_DATE",
    "Tok",
    "common_prefix",
    "cover",
    "explicit_dates",
    "irregular_past",
    "lemma",
    "maybe_covers",
    "measure_name",
    "name_words",
    "shift",
    "stem",
    "tokenize",
    "truncate",
    "undoubled",
    "value_forms",
    "word_match",
    "written_date",
]
