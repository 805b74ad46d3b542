"""Names said inside a sentence: a word capitalised there is a name ("did *United* run",
"did *Kelly* buy"), whatever its ending. Readers that take "-ed", "-ing" or "-ly" words
for the verbs and adverbs that relate tables must not take a name so: read as a verb it
is dropped, and the statement answers for every row (all flights for United's)."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?:^|[.?!:;\"'(\[])\s*$")


def said_as_name(question: str, start: int, text: str) -> bool:
    """Whether the word ``text`` at ``start`` of ``question`` is capitalised inside a
    sentence (not its first word, not all capitals as codes and acronyms are)."""
    if not text[:1].isupper() or text.isupper():
        return False
    return _SENTENCE_END.search(question[:start]) is None
