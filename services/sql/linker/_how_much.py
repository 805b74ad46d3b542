""" "How much did <someone> <verb> (in total)?" asks for the sum of what the verb names.

"How much did Fernando Gago spend in total?" names its measure by a verb, not a noun:
"spend" is the column ``total_spent`` (its name's word "spent" is a form of the verb),
and "Fernando Gago" is whose rows are summed. The readers read a measure from a noun
after "total"; so the question is read as "What is the total spent by Fernando Gago?"
(the column's own words), and its rows and the name are placed like any question's.

Only where exactly one number column of the schema has a form of the verb in its name:
two ("amount_paid", "fee_paid") say two things the verb could mean, and that is not
guessed; none leaves the question refused as asked. Read only when the question as asked
is refused (``QuestionLinker.link``).
"""

from __future__ import annotations

import re

from services.sql.catalog import is_number
from services.sql.linker._vocabulary import Vocabulary
from services.sql.words import lemma, name_words

_HOW_MUCH = re.compile(
    r"^\s*how\s+much\s+(?:did|does|do|has|have|had)\s+(?P<who>[^?.!]+?)\s+(?P<verb>[a-z]+)"
    r"(?:\s+(?:in\s+total|altogether|overall|in\s+all))?\s*[?.]?\s*$",
    re.IGNORECASE | re.DOTALL,
)
# Subjects that are no rows: "how much have we sold" says nothing of whose rows.
_PRONOUNS = frozenset("we you they i it he she one".split())


def how_much_asked(vocab: Vocabulary, question: str) -> str | None:
    """The question said with its verb's column as a noun ("What is the total spent by
    Fernando Gago?"), or None when it is not such a question or the verb names no one
    number column."""
    m = _HOW_MUCH.match(question)
    if m is None or m.group("who").lower() in _PRONOUNS:
        return None
    verb = lemma(m.group("verb").lower())
    named = [
        name_words(column.name)
        for table in vocab.catalog.tables
        for column in table.columns
        if is_number(column.data_type) and any(lemma(w) == verb for w in name_words(column.name))
    ]
    if len(named) != 1:
        return None
    words = named[0]
    measure = " ".join(words if words[0] == "total" else ["total", *words])
    return f"What is the {measure} by {m.group('who')}?"
