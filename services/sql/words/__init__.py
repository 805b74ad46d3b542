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
from services.sql.words._directions import FROM, TO, name_direction, question_directions
from services.sql.words._names import said_as_name
from services.sql.words._parts import said_in_part, value_words_said
from services.sql.words._units import (
    finer_units,
    is_unit,
    numbers_with_units,
    same_measure,
    units_named,
    units_of,
)
from services.sql.words._words import (
    GRAMMAR_WORDS,
    SHORT_FORMS,
    SOFT_WORDS,
    STOP_WORDS,
    Tok,
    common_prefix,
    cover,
    do_support_verb,
    irregular_past,
    lemma,
    maybe_covers,
    measure_name,
    name_words,
    stem,
    stored_as_verb,
    tokenize,
    undoubled,
    value_forms,
    word_match,
)

__all__ = [
    "FROM",
    "GRAMMAR_WORDS",
    "ISO_DATE",
    "MONTHS",
    "SHORT_FORMS",
    "SOFT_WORDS",
    "STOP_WORDS",
    "TO",
    "WRITTEN_DATE",
    "Tok",
    "common_prefix",
    "cover",
    "do_support_verb",
    "explicit_dates",
    "finer_units",
    "irregular_past",
    "is_unit",
    "lemma",
    "maybe_covers",
    "measure_name",
    "name_direction",
    "name_words",
    "numbers_with_units",
    "question_directions",
    "said_as_name",
    "said_in_part",
    "same_measure",
    "shift",
    "stem",
    "stored_as_verb",
    "tokenize",
    "truncate",
    "undoubled",
    "units_named",
    "units_of",
    "value_forms",
    "value_words_said",
    "word_match",
    "written_date",
]
