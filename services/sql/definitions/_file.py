"""A database's glossary file (``SQL_GLOSSARIES=name=path;...``), read once at start.

The file is JSON::

    {"entries": [
        {"term": "CPC", "synonyms": ["cost per click"],
         "sql": "SUM(cost) / NULLIF(SUM(clicks), 0)"},
        {"term": "active", "definition": "status = 'active'"}
    ],
     "joins": [
        {"from": "orders.customer_ref", "to": "customers.id"},
        {"from": ["lines.order_no", "lines.shop"], "to": ["orders.no", "orders.shop"]}
    ]}

Each entry has a ``term``, optional ``synonyms``, and exactly one of ``sql`` (an
expression over the database's columns) or ``definition`` (prose). ``joins`` (optional)
declares joins the database does not: the ``from`` columns hold values of the ``to``
columns (``table.column`` or ``schema.table.column``; a list for a composite join). A malformed file
stops the service at start with a message naming the file and the entry, because a
glossary silently half-loaded would change answers without anyone noticing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.common import SettingsError
from services.sql.definitions._glossary import GlossaryEntry, JoinSpec

VARIABLE = "SQL_GLOSSARIES"
MAX_ENTRIES = 500
MAX_TEXT_CHARS = 2000
_KEYS = frozenset({"term", "synonyms", "sql", "definition"})
MAX_JOINS = 500


@dataclass(frozen=True)
class GlossaryFile:
    """A glossary file's entries and the joins it declares."""

    entries: tuple[GlossaryEntry, ...]
    joins: tuple[JoinSpec, ...] = ()


def load_glossary(path: Path) -> tuple[GlossaryEntry, ...]:
    """The entries of one glossary file, in file order; SettingsError when malformed."""
    return load_glossary_file(path).entries


def load_glossary_file(path: Path) -> GlossaryFile:
    """One glossary file's entries and joins, in file order; SettingsError when
    malformed."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"{VARIABLE}: cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{VARIABLE}: {path} is not valid JSON: {exc}") from None
    entries = raw.get("entries") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise SettingsError(f'{VARIABLE}: {path} must be an object with an "entries" list')

    if len(entries) > MAX_ENTRIES:
        raise SettingsError(f"{VARIABLE}: {path} holds more than {MAX_ENTRIES} entries")
    parsed = [_entry(path, index, item) for index, item in enumerate(entries)]
    seen: dict[str, int] = {}
    for index, entry in enumerate(parsed):
        for name in entry.names:
            key = name.casefold()
            if key in seen:
                raise SettingsError(
                    f"{VARIABLE}: {path}: entries[{index}] ({entry.term!r}) repeats the name "
                    f"{name!r} of entries[{seen[key]}]"
                )
            seen[key] = index
    joins = raw.get("joins", [])
    if not isinstance(joins, list):
        raise SettingsError(f'{VARIABLE}: {path}: "joins" must be a list')
    if len(joins) > MAX_JOINS:
        raise SettingsError(f"{VARIABLE}: {path} declares more than {MAX_JOINS} joins")
    return GlossaryFile(
        tuple(parsed), tuple(_join(path, index, item) for index, item in enumerate(joins))
    )


def _join(path: Path, index: int, item: Any) -> JoinSpec:
    where = f"{VARIABLE}: {path}: joins[{index}]"
    if not isinstance(item, dict) or set(item) != {"from", "to"}:
        raise SettingsError(f'{where} must be an object with exactly "from" and "to"')
    child, child_columns = _columns(f"{where}.from", item["from"])
    parent, parent_columns = _columns(f"{where}.to", item["to"])
    if len(child_columns) != len(parent_columns):
        raise SettingsError(f'{where}: "from" and "to" name different numbers of columns')
    if child == parent:
        raise SettingsError(f"{where} joins {child} to itself")
    return JoinSpec(child, child_columns, parent, parent_columns)


def _columns(where: str, value: Any) -> tuple[str, tuple[str, ...]]:
    """One table and its columns from ``table.column`` names (a string or a list)."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or len(names) > 8:
        raise SettingsError(f"{where} must be a column name or a list of 1 to 8 of them")
    tables: set[str] = set()
    columns: list[str] = []
    for name in names:
        parts = name.strip().split(".") if isinstance(name, str) else []
        if len(parts) not in (2, 3) or not all(p.strip() for p in parts):
            raise SettingsError(f"{where}: {name!r} is not table.column or schema.table.column")
        tables.add(".".join(p.strip() for p in parts[:-1]))
        columns.append(parts[-1].strip())
    if len(tables) != 1:
        raise SettingsError(f"{where} names columns of more than one table")
    return tables.pop(), tuple(columns)


def _entry(path: Path, index: int, item: Any) -> GlossaryEntry:
    where = f"{VARIABLE}: {path}: entries[{index}]"
    if not isinstance(item, dict):
        raise SettingsError(f"{where} must be an object")
    term = item.get("term")
    if not isinstance(term, str) or not term.strip():
        raise SettingsError(f'{where} needs a non-empty "term"')
    where = f"{where} ({term.strip()!r})"
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise SettingsError(f"{where} has unknown keys {unknown}; allowed: {sorted(_KEYS)}")
    synonyms = item.get("synonyms", [])
    if not isinstance(synonyms, list) or not all(
        isinstance(s, str) and s.strip() for s in synonyms
    ):
        raise SettingsError(f'{where}: "synonyms" must be a list of non-empty strings')
    expression = _text(where, item, "sql")
    definition = _text(where, item, "definition")
    if bool(expression) == bool(definition):
        raise SettingsError(f'{where} needs exactly one of "sql" or "definition"')
    return GlossaryEntry(
        term=term.strip(),
        synonyms=tuple(s.strip() for s in synonyms),
        expression=expression,
        definition=definition,
        source="glossary",
    )


def _text(where: str, item: dict[str, Any], key: str) -> str:
    value = item.get(key, "")
    if not isinstance(value, str):
        raise SettingsError(f'{where}: "{key}" must be a string')
    if len(value) > MAX_TEXT_CHARS:
        raise SettingsError(f'{where}: "{key}" is longer than {MAX_TEXT_CHARS} characters')
    return value.strip()
