"""A name said by its leading words: "Delta" for the stored 'Delta Air Lines Inc.',
"JetBlue" for 'JetBlue Airways', "American Airlines" for 'American Airlines Inc.'.

People name a thing by the first words of its full name. A capitalised run of words
inside a sentence that is the leading whole words of exactly one stored value of one
name-like column (a text column that is no key) is read as that value: the question is
linked again with the stored value said whole (``QuestionLinker.link``), so every other
reading and check applies as to the full name. Nothing is guessed: where the words lead
more than one value (of one column or of several), the question is refused naming two
of them, and a reading whose statement reads a table holding another such value is
refused too ("Delta" names an airline, but also begins two airports' names: a statement
that reads the airports cannot tell which is meant). "American Airlines" begins
'American Airlines Inc.' only; 'AMERICAN AIRCRAFT INC' shares a word, not its lead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from services.sql.catalog import is_number
from services.sql.linker._vocabulary import Col, Vocabulary
from services.sql.words import said_as_name

# A capitalised word of a name ("Delta", "JetBlue", "O'Hare"), as a run's member.
_NAME_WORD = re.compile(r"[A-Z][A-Za-z0-9'&-]*")
_VALUE_WORD = re.compile(r"[^\s]+")


@dataclass(frozen=True)
class Led:
    """A run of the question's words (``start``..``end`` in its text) and the stored
    values whose leading whole words it is, each with its column."""

    start: int
    end: int
    said: str
    values: tuple[tuple[Col, str], ...]


def _words(text: str) -> list[str]:
    return [w.strip(".,;:'\"()").lower() for w in _VALUE_WORD.findall(text)]


def _name_like(vocab: Vocabulary, col: Col) -> bool:
    """A text column whose values name things: no key (a code is said whole or not at
    all), not a number or a date."""
    table = col.table
    if is_number(col.column.data_type) or not col.column.data_type.startswith(
        ("text", "character", "varchar", "citext")
    ):
        return False
    if col.column.name in table.primary_key:
        return False
    return not any(col.column.name in fk.columns for fk in table.foreign_keys)


def led_names(vocab: Vocabulary, question: str) -> list[Led]:
    """Each capitalised run inside a sentence that is no stored value itself but the
    leading whole words of at least one (longest run first, then its shorter leads)."""
    found: list[Led] = []
    runs: list[list[re.Match[str]]] = []
    for m in _NAME_WORD.finditer(question):
        if m.start() > 0 and question[m.start() - 1].isalnum():
            continue
        if runs and question[runs[-1][-1].end() : m.start()] == " ":
            runs[-1].append(m)
        else:
            runs.append([m])
    for whole in runs:
        run = whole
        while run and not said_as_name(question, run[0].start(), run[0].group(0)):
            run = run[1:]  # a sentence's first word, or a code in capitals
        for size in range(len(run), 0, -1):
            part = run[:size]
            said = question[part[0].start() : part[-1].end()]
            if said.lower() in vocab.names:
                break  # said whole: the ordinary readings take it
            words = _words(said)
            if any(_words(v) == words for v in _held(vocab)):
                break  # said whole, its closing stop aside ("Inc" of 'Inc.')
            values = tuple(
                (col, value)
                for col in vocab.columns
                if _name_like(vocab, col)
                for value in dict.fromkeys((*col.column.known_values, *col.column.sample_values))
                if len(_words(value)) > len(words) and _words(value)[: len(words)] == words
            )
            if values:
                found.append(Led(part[0].start(), part[-1].end(), said, values))
                break
    return found


def _held(vocab: Vocabulary) -> list[str]:
    return [v for col in vocab.columns if _name_like(vocab, col)
            for v in (*col.column.known_values, *col.column.sample_values)]  # fmt: skip


def said_whole(question: str, led: Led, value: str) -> str:
    """The question with the run said as the stored value."""
    return question[: led.start] + value + question[led.end :]


def ambiguity(led: Led) -> str:
    """The refusal's words for a run leading several values: two of them, each with its
    column."""
    (c1, v1), (c2, v2) = led.values[:2]
    return (
        f"{led.said!r} begins more than one stored name: {v1!r} ({c1.table.name}."
        f"{c1.column.name}) and {v2!r} ({c2.table.name}.{c2.column.name})"
    )


def tables_read(sql: str) -> set[str]:
    """The tables a statement reads, by name (lower case)."""
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return set()
    return {t.name.lower() for t in tree.find_all(exp.Table)}
