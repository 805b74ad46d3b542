"""An attribute asked by a question word: "How old is the teacher who teaches Science?"
asks for the teacher's age, "Where is each teacher from?" for each one's hometown.

English asks for some attributes with a question word instead of the attribute's noun,
and neither reader places a question word on a column: the first question was refused,
the second read as a listing of teachers, which shows no place at all. The question is
read once more with the noun said ("What is the age of the teacher who teaches
Science?"), the noun being the name of the one column of the tables the subject names
that the question word can ask for:

- "how old": a number column whose name says age (the noun of the adjective "old");
- "where ... from": a text column whose name says a place of origin (hometown, country,
  city, nationality…), or one whose stored values the catalog read as places;
- "when was <subject> <verb> …": a date column, the one whose name says the rest of the
  predicate where the tables have several ("put on the market" -> ``date_on_market``,
  "sold" -> ``date_sold``). Every word of the predicate after its verb has to be in the
  column's name: a predicate that says more ("sold with 3 rooms") is read as asked.

The column is chosen by its type and its name's words, from the tables the subject names
by name; no table named, no such column, or two of them (a teacher's city and country)
and the question is read as asked: a tie is never broken by guessing.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from services.sql.linker._vocabulary import Col, Vocabulary
from services.sql.words import STOP_WORDS, name_words, stem

_HOW_OLD = re.compile(
    r"^\s*how\s+old\s+(?P<verb>is|are|was|were)\s+(?P<subject>[^?]+?)\s*[?.!]?\s*$",
    re.IGNORECASE,
)
_WHERE_FROM = re.compile(
    r"^\s*where\s+(?P<verb>is|are|was|were|do|does|did)\s+(?P<subject>[^?]+?)"
    r"\s+(?:come\s+|coming\s+|hail\s+)?from\s*[?.!]?\s*$",
    re.IGNORECASE,
)
# What "old" asks for: the noun of the adjective, as a column's name says it.
_AGE = frozenset({"age"})
# Nouns of a place something or someone comes from, as a column's name says them.
_ORIGIN = frozenset(
    stem(w)
    for w in (
        *("hometown", "home", "town", "city", "country", "nation", "nationality"),
        *("birthplace", "origin", "citizenship"),
    )
)
_WHEN = re.compile(
    r"^\s*when\s+(?P<verb>is|are|was|were)\s+(?P<rest>[^?]+?)\s*[?.!]?\s*$",
    re.IGNORECASE,
)
_DATED = ("date", "timestamp")
_NUMBER = ("int", "numeric", "decimal", "real", "double", "float", "smallint", "bigint")
_TEXT = ("char", "text", "varchar", "string")


def attribute_asked(vocab: Vocabulary, question: str) -> str | None:
    """``question`` with its question word said as the column it asks for ("How old is
    the teacher?" -> "What is the age of the teacher?"); None when it asks no attribute
    by a question word, or not exactly one column answers the word."""
    when = _WHEN.match(question)
    if when is not None:
        return _when_asked(vocab, when)
    m = _HOW_OLD.match(question)
    if m is not None:
        found = _the_column(vocab, m.group("subject"), _is_age)
    else:
        m = _WHERE_FROM.match(question)
        if m is None:
            return None
        found = _the_column(vocab, m.group("subject"), _is_origin(vocab))
    if found is None:
        return None
    verb = m.group("verb").lower()
    verb = {"do": "is", "does": "is", "did": "was"}.get(verb, verb)
    noun = " ".join(name_words(found.column.name))
    return f"What {verb} the {noun} of {m.group('subject')}?"


def _when_asked(vocab: Vocabulary, m: re.Match[str]) -> str | None:
    """ "When was the property put on the market?" -> "What was the date on market of
    the property?": the subject is the fewest words that name a table; the predicate
    after it chooses the date column and says nothing else."""
    words = m.group("rest").split()
    for cut in range(1, len(words)):
        stems = [stem(w) for w in re.findall(r"[A-Za-z]+", " ".join(words[:cut]))]
        named = {t.qualified for t, _ in vocab.tables_named(stems)}
        if named:
            break
    else:
        return None
    said = {stem(w) for w in re.findall(r"\w+", " ".join(words[cut + 1 :]))}
    said -= STOP_WORDS
    verb = {stem(w) for w in re.findall(r"[A-Za-z]+", words[cut])}
    dated = [c for c in vocab.columns if c.table.qualified in named and _typed(c, _DATED)]
    if len(dated) > 1:
        dated = [c for c in dated if _name_stems(c) & (said | verb)]
    if len(dated) != 1 or not said <= _name_stems(dated[0]):
        return None
    noun = " ".join(name_words(dated[0].column.name))
    return f"What {m.group('verb').lower()} the {noun} of {' '.join(words[:cut])}?"


def _name_stems(col: Col) -> set[str]:
    return {stem(w) for w in name_words(col.column.name)}


def _the_column(vocab: Vocabulary, subject: str, fits: Callable[[Col], bool]) -> Col | None:
    """The one column of the tables ``subject`` names that ``fits``; None when none or
    several do."""
    words = [stem(w) for w in re.findall(r"[A-Za-z]+", subject)]
    named = {t.qualified for t, _ in vocab.tables_named(words)}
    if not named:
        return None
    found = [c for c in vocab.columns if c.table.qualified in named and fits(c)]
    return found[0] if len(found) == 1 else None


def _typed(col: Col, kinds: tuple[str, ...]) -> bool:
    kind = col.column.data_type.lower()
    return any(k in kind for k in kinds)


def _is_age(col: Col) -> bool:
    words = {stem(w) for w in name_words(col.column.name)}
    return _typed(col, _NUMBER) and bool(words & _AGE)


def _is_origin(vocab: Vocabulary) -> Callable[[Col], bool]:
    placed = {c.key for places in vocab.places.values() for c, _, _ in places}

    def fits(col: Col) -> bool:
        if not _typed(col, _TEXT):
            return False
        words = {stem(w) for w in name_words(col.column.name)}
        return bool(words & _ORIGIN) or col.key in placed

    return fits
