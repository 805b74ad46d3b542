""" "Late", "early" and "on time" said of a departure or an arrival, read as the sign of the
delay its table records.

"Flights that did not arrive late", "the ones that left more than an hour late": no
column is named "late". What the words say is where an event fell against its schedule,
and a table keeping that keeps it as a signed number (minutes behind schedule, negative
when ahead). So the phrase is said again as a comparison of that number, in words the
readers know ("… that had an arr delay of 0 or less"), and linked as any question is:

- the column is the event's: the verb names the event (arrive -> arrival; depart, leave
  -> departure; English's, no schema's), and the column's name says it in full or by a
  leading abbreviation ("arr_delay", "dep_delay", "departure_delay"); of those, only one
  whose stored extent runs below and above 0 — a measure of being ahead or behind, not a
  clock time ("arr_time") — and only one in the whole schema, else nothing is read;
- the sign: late is above 0, not late (and "on time", which says the same) is 0 or less,
  early is below 0, not early 0 or more; "more than an hour late" is above that amount
  ("more than 1 hour"), said in its unit for the unit check to judge (``verify._units``).

The reading is tried before the question as asked (``QuestionLinker.link``): as asked,
"on time" is no condition any reader places, and "departed on time" read without it is a
confident wrong answer. A phrase whose column is not clear is refused naming it, unless a
column is named for the word itself ("is_late"), which the readers place as asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.sql.catalog import Catalog, ColumnInfo, is_number
from services.sql.linker._plan import LinkError
from services.sql.words import name_words, one_said_as_number

# An event verb, in any form, to the noun naming its event.
_EVENTS = {
    "arrive": "arrival",
    "arrives": "arrival",
    "arrived": "arrival",
    "arriving": "arrival",
    "depart": "departure",
    "departs": "departure",
    "departed": "departure",
    "departing": "departure",
    "leave": "departure",
    "leaves": "departure",
    "left": "departure",
    "leaving": "departure",
}
_NEGATION = r"(?:did|do|does|was|were|is|are)\s*(?:not|n't)"
_PHRASE = re.compile(
    rf"\b(?P<neg>{_NEGATION}\s+)?(?P<verb>{'|'.join(_EVENTS)})\s+"
    r"(?:(?P<amount>(?:more than|over|at least|by more than|by over)\s+\d+(?:\.\d+)?\s+[a-z]+)\s+)?"
    r"(?P<word>late|early|on time)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Lateness:
    """A lateness phrase said again as a comparison of one column."""

    question: str
    column: str
    said: str


def lateness_asked(catalog: Catalog, question: str) -> Lateness | None:
    """``question`` with its lateness phrase said as a comparison of the event's signed
    delay (see the module's docstring); None where it says none, or where a column is
    named for the word; :class:`LinkError` naming the phrase where no one column records it."""
    text = one_said_as_number(question)
    match = _PHRASE.search(text)
    if match is None:
        return None
    word = match.group("word").lower()
    if _named_for(catalog, word):
        return None
    noun = _EVENTS[match.group("verb").lower()]
    columns = [c for t in catalog.tables for c in t.columns if _records(c, noun)]
    said = match.group(0)
    if len(columns) != 1:
        raise LinkError(f"could not tell which column says whether {said!r}", phrase=said)
    column = columns[0]
    negated = match.group("neg") is not None
    amount = match.group("amount")
    if amount is not None and (word != "late" or negated):
        raise LinkError(f"could not read {said!r} as a bound", phrase=said)
    bound = _bound(word, negated, amount)
    article = "an" if column.name[:1].lower() in "aeiou" else "a"
    phrase = f"had {article} {' '.join(column.name.split('_'))} of {bound}"
    return Lateness(text[: match.start()] + phrase + text[match.end() :], column.name, said)


def _bound(word: str, negated: bool, amount: str | None) -> str:
    """The comparison with 0 (or with the amount said) the word makes."""
    if amount is not None:
        return re.sub(r"^by\s+", "", amount)
    late = word == "late" or (word == "on time" and negated)
    if word == "on time":
        return "more than 0" if late else "0 or less"
    if word == "late":
        return "0 or less" if negated else "more than 0"
    return "0 or more" if negated else "less than 0"


def _records(column: ColumnInfo, noun: str) -> bool:
    """A signed number (its stored extent runs below and above 0) whose name says the
    event, whole or by a leading abbreviation of at least three letters."""
    if not is_number(column.data_type) or column.extent is None:
        return False
    low, high = column.extent
    if not low < 0 < high:
        return False
    return any(len(w) >= 3 and noun.startswith(w) for w in name_words(column.name))


def _named_for(catalog: Catalog, word: str) -> bool:
    """A column whose name holds the word itself ("is_late", "on_time")."""
    said = word.split()
    for table in catalog.tables:
        for column in table.columns:
            words = name_words(column.name)
            if all(w in words for w in said) or "".join(said) in words:
                return True
    return False
