"""Control characters in request text: one rule for every field, and a walk that applies it
to every string of a protobuf message.

Postgres text cannot hold NUL: a NUL in a document's uri, category or metadata once went
as far as the database and came back as an error naming field "query" (issue 46). Other
control characters are never what a caller meant either (terminal escapes in a title, a
backspace in a category) and hide in listings and logs. So every text field refuses them,
naming the field, before anything is stored or searched:

- names, ids, titles, uris, categories, tokens and metadata keys: no control character
  at all (C0, DEL, C1);
- free text (a question, a query, SQL, a note, a metadata string value): the layout
  characters tab, line feed, vertical tab, form feed and carriage return are allowed (text
  pasted or exported from documents holds them: form feed is a PDF page break, vertical
  tab a Word line break); every other control character is not.

A document's body is the exception: it is what a company has, as it is (a log pasted with
its terminal colours, a manual exported with stray NULs, text that went through Latin-1
once), and refusing a whole manual for one escape sequence helped no one. It is cleaned
instead (``clean_document_text``): terminal escape sequences go whole, C1 characters
become the Windows-1252 characters they almost always were, other controls go, and the
ingest report says how many were removed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from services.common._errors import FieldViolation

_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NOT_LAYOUT = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
# ECMA-48 control sequences (colours, cursor moves) and operating-system commands (window
# titles): removed whole, or their parameters would stay behind as "[31m".
_ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_C1 = re.compile(r"[\x80-\x9f]")
_STRUCT = "google.protobuf.Struct"
_VALUE = "google.protobuf.Value"
_LIST = "google.protobuf.ListValue"


def control_character_problem(value: str, *, free_text: bool = False) -> str | None:
    """Why ``value`` is refused (the first offending character, by code point), or None."""
    found = (_NOT_LAYOUT if free_text else _ANY_CONTROL).search(value)
    if found is None:
        return None
    allowed = " (tab, line and page breaks are allowed)" if free_text else ""
    return f"must not contain control characters, found U+{ord(found.group()):04X}{allowed}"


def _windows_1252(match: re.Match[str]) -> str:
    try:
        return match.group().encode("latin-1").decode("cp1252")
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: nothing in cp1252 either
        return match.group()


def clean_document_text(text: str) -> tuple[str, int]:
    """``text`` without terminal escapes and non-layout control characters, and how many
    characters were removed (C1 characters that Windows-1252 reads as letters or
    punctuation, ``\x92`` for a right quote, are turned into them, not counted)."""
    if _NOT_LAYOUT.search(text) is None:
        return text, 0
    cleaned = _ESCAPE_SEQUENCE.sub("", text)
    cleaned = _C1.sub(_windows_1252, cleaned)
    cleaned = _NOT_LAYOUT.sub("", cleaned)
    return cleaned, len(text) - len(cleaned)


def json_control_problem(value: Any, path: str) -> FieldViolation | None:
    """The first control character in a JSON-like object's keys (no control character)
    or string values (free text), naming ``path`` or the member below it."""
    if isinstance(value, str):
        problem = control_character_problem(value, free_text=True)
        return FieldViolation(path, problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = control_character_problem(str(key))
            if problem:
                return FieldViolation(path, f"keys {problem}")
            found = json_control_problem(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = json_control_problem(item, f"{path}[{index}]")
            if found:
                return found
    return None


def control_character_violations(
    message: Message,
    *,
    free_text: Collection[str] = (),
    prefix: str = "",
    skip: Collection[str] = (),
) -> list[FieldViolation]:
    """Every string field of ``message`` (nested messages, repeated fields, maps and
    Struct metadata included) holding a control character, by its path.

    ``free_text`` names the fields (by field name, at any depth) whose text may hold
    layout characters; ``skip`` the top-level fields another check owns.
    """
    return list(_walk(message, frozenset(free_text), prefix, frozenset(skip)))


def _walk(
    message: Message, free_text: frozenset[str], prefix: str, skip: frozenset[str]
) -> Iterator[FieldViolation]:
    name = message.DESCRIPTOR.full_name
    if name == _STRUCT:
        found = json_control_problem(_plain(message), prefix.rstrip("."))
        if found:
            yield found
        return
    # ListFields: only what is set, so an empty request costs next to nothing.
    # Any: the descriptor stubs type message_type as optional.
    listed: Sequence[tuple[Any, Any]] = message.ListFields()
    for field, value in listed:
        if field.name in skip:
            continue
        path = f"{prefix}{field.name}"
        repeated = bool(field.is_repeated)
        if field.type == FieldDescriptor.TYPE_STRING:
            loose = field.name in free_text
            for where, text in _items(path, value, repeated):
                problem = control_character_problem(text, free_text=loose)
                if problem:
                    yield FieldViolation(where, problem)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            entry = field.message_type
            if entry.GetOptions().map_entry:
                yield from _map(path, value, entry, free_text)
            elif entry.full_name in (_STRUCT, _VALUE, _LIST) or not entry.file.package.startswith(
                "google."
            ):
                for where, item in _items(path, value, repeated):
                    yield from _walk(item, free_text, f"{where}.", frozenset())


def _items(path: str, value: Any, repeated: bool) -> Iterator[tuple[str, Any]]:
    if repeated:
        for index, item in enumerate(value):
            yield f"{path}[{index}]", item
    else:
        yield path, value


def _map(path: str, value: Any, entry: Any, free_text: frozenset[str]) -> Iterator[FieldViolation]:
    key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
    for key, item in value.items():
        if key_field.type == FieldDescriptor.TYPE_STRING:
            problem = control_character_problem(key)
            if problem:
                yield FieldViolation(path, f"keys {problem}")
                continue
        where = f"{path}[{key}]"
        if value_field.type == FieldDescriptor.TYPE_STRING:
            problem = control_character_problem(item, free_text=True)
            if problem:
                yield FieldViolation(where, problem)
        elif value_field.type == FieldDescriptor.TYPE_MESSAGE:
            yield from _walk(item, free_text, f"{where}.", frozenset())


def _plain(message: Message) -> Any:
    """A Struct, Value or ListValue as plain Python (dict, list, str, ...)."""
    name = message.DESCRIPTOR.full_name
    if name == _STRUCT:
        return {key: _plain(item) for key, item in message.fields.items()}  # type: ignore[attr-defined]
    if name == _LIST:
        return [_plain(item) for item in message.values]  # type: ignore[attr-defined]
    kind = message.WhichOneof("kind")
    if kind == "struct_value":
        return _plain(message.struct_value)  # type: ignore[attr-defined]
    if kind == "list_value":
        return _plain(message.list_value)  # type: ignore[attr-defined]
    if kind == "string_value":
        return message.string_value  # type: ignore[attr-defined]
    return None
