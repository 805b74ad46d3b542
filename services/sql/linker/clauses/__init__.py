"""Reading a question's clauses: what it asks for, of which rows, under which conditions,
grouped, ordered and cut how; into the same :class:`Plan` the rest of the linker
composes.

A question is read left to right over its mentions (``linker._mentions``):

1. **the head** says what kind of answer is asked: a count ("how many", "the number
   of"), a list or a lookup ("what are", "show", "which");
2. **the items**: the columns, aggregates and counts the answer shows, up to the first
   word that starts a clause ("of", "for", "whose", "with", "in", ...);
3. **the clauses** after them, each recognised by its first words: the entity ("of
   singers", "for each stadium"), stored values ("from France", "named Kyle"),
   comparisons with numbers ("older than 30", "with capacity above 5000", "between 3 and
   5"), "above the average X", superlatives ("the youngest", "with the most concerts"),
   counts of related rows ("with at least 2 courses"), their absence ("that have no
   pets"), grouping ("for each country"), ordering ("in descending order of age") and
   limits ("the top 3");
4. the tables the phrases name decide which column each ambiguous phrase means: a
   column of the entity first, then of another table the question names.

Every token must be used by the head, an item or a clause, or be a word of a question's
grammar; otherwise the reader declines and the older, list-oriented reading is tried.
What the reader cannot place exactly it never guesses.

One module per part: the cue words (``_cues``), what is read (``_reading``), the head and
items (``_head``), the clauses by kind (``_events``, ``_ranking``, ``_conditions``), whose
rows an item is said of (``_rows_of``), the plan made of them (``_planning``), and the
reader that runs them in order (``_reader``).
"""

from __future__ import annotations

from services.sql.linker.clauses._cues import (
    PREPOSITIONS,
    form_words,
    needs_a_name,
    unplaced_words,
)
from services.sql.linker.clauses._reader import read_clauses
from services.sql.linker.clauses._reading import Decline

__all__ = [
    "PREPOSITIONS",
    "Decline",
    "form_words",
    "needs_a_name",
    "read_clauses",
    "unplaced_words",
]
