"""A value swap said by a name's leading words: "what about Delta instead?" after a
statement comparing ``airlines.name = 'United Air Lines Inc.'``.

People name a thing by the first words of its full name, and the linker reads a first
question that way ("Delta" for the stored 'Delta Air Lines Inc.', ``linker._leading``). A
value swap is matched against the statement's compared columns by the stored value
itself, so without this a swap to "Delta" finds no column storing 'Delta' and is
refused, although the same words open a question the linker answers. Here the swap's
words stand for the one stored value of a compared name column whose leading whole words
they are; a compared column where they lead several values (or none) gives nothing, so
nothing is guessed. The column must name things: a text column that is no key (codes are
said whole or not at all).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.sql.catalog import TEXT_TYPES, TableInfo
from services.sql.words import STOP_WORDS

_WORD = re.compile(r"[^\s]+")


def _words(text: str) -> list[str]:
    return [w.strip(".,;:'\"()").lower() for w in _WORD.findall(text)]


def _names_things(table: TableInfo, column: str) -> bool:
    info = table.column(column)
    if info is None or not info.data_type.lower().startswith(TEXT_TYPES):
        return False
    if column in table.primary_key:
        return False
    return not any(column in fk.columns for fk in table.foreign_keys)


def led_value(table: TableInfo, column: str, said: str) -> str | None:
    """The one stored value of ``table.column`` that ``said`` is the leading whole words
    of (longer than ``said``), or None when there is none or more than one."""
    words = _words(said)
    if not words or not _names_things(table, column):
        return None
    info = table.column(column)
    assert info is not None
    led = {
        value
        for value in (*info.known_values, *info.sample_values)
        if len(_words(value)) > len(words) and _words(value)[: len(words)] == words
    }
    return next(iter(led)) if len(led) == 1 else None


def names_capitalised(condition: str, tables: Sequence[TableInfo]) -> str | None:
    """``condition`` with each run of its lower-case words that is the leading whole
    words of a stored name (of a name column of ``tables``) spelled as that name spells
    them ("just united" → "just United", "jetblue" → "JetBlue"); None when no run is.

    A busy writer types names in lower case, and the linker reads a name by its leading
    words only where it is capitalised (``linker._leading``: "united" is as much an
    adjective as a carrier). In a filter's condition the words are said of the earlier
    rows, and whether they name a stored thing is read from the stored values, not from
    the word; the linker then reads the name as said capitalised, with every check it
    applies to a first question (a name leading values of two tables, or a table met by
    two keys, is still refused there). Tried only after the condition as said."""
    tokens = condition.split()
    spelled = list(tokens)
    changed = False
    start = 0
    while start < len(tokens):
        for size in range(len(tokens) - start, 0, -1):
            run = tokens[start : start + size]
            words = [w.strip(".,;:'\"()?!").lower() for w in run]
            if any(t != t.lower() for t in run) or all(w in STOP_WORDS for w in words):
                continue
            leading = _leading_spelling(words, tables)
            if leading is None:
                continue
            spelled[start : start + size] = leading
            spelled[start + size - 1] += run[-1][len(run[-1].rstrip(".,;:'\"()?!")) :]
            changed = True
            start += size
            break
        else:
            start += 1
    return " ".join(spelled) if changed else None


def _leading_spelling(words: list[str], tables: Sequence[TableInfo]) -> list[str] | None:
    """The stored spelling of ``words`` as the leading words of one or more stored
    names (a name stored in capitals, as codes are, title-cased: "BOEING" → "Boeing");
    None when they lead none, or when names they lead spell them differently."""
    found = {spelled for spelled, _ in _led(words, tables)}
    return list(next(iter(found))) if len(found) == 1 else None


def name_holders(condition: str, tables: Sequence[TableInfo]) -> list[str]:
    """The tables (qualified names) of ``tables`` holding a stored name that a run of
    ``condition``'s lower-case words leads (see :func:`names_capitalised`)."""
    tokens = [w.strip(".,;:'\"()?!") for w in condition.split()]
    held: list[str] = []
    for start in range(len(tokens)):
        for end in range(start + 1, len(tokens) + 1):
            run = tokens[start:end]
            if any(t != t.lower() for t in run) or all(w in STOP_WORDS for w in run):
                continue
            for _, table in _led(run, tables):
                if table not in held:
                    held.append(table)
    return held


def _led(words: list[str], tables: Sequence[TableInfo]) -> set[tuple[tuple[str, ...], str]]:
    """(the stored spelling of ``words``, the qualified table) of each stored name of a
    name column that ``words`` are the leading whole words of."""
    found: set[tuple[tuple[str, ...], str]] = set()
    for table in tables:
        for info in table.columns:
            if not _names_things(table, info.name):
                continue
            for value in (*info.known_values, *info.sample_values):
                stored = [w.strip(".,;:'\"()") for w in _WORD.findall(value)]
                if [w.lower() for w in stored[: len(words)]] != words:
                    continue
                spelled = tuple(w.title() if w.isupper() else w for w in stored[: len(words)])
                found.add((spelled, table.qualified))
    return found
