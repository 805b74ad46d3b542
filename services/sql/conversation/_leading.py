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

from services.sql.catalog import TEXT_TYPES, TableInfo

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
