"""JSON schema, decoding and encoding for the frozen dataclasses in ``_types``.

One walk over the type hints gives both the schema Gemini is asked to follow and the
validator that checks what it returned: the model proposes, this code decides.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
import typing
from enum import Enum
from typing import Any, TypeVar, cast

T = TypeVar("T")

_NONE_TYPE = type(None)


class SchemaViolation(ValueError):
    """A value does not match its output type; the message names the JSON path only."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '$'}: {problem}")
        self.path = path or "$"
        self.problem = problem


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(tp)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        return typing.get_args(tp)
    return None


def json_schema(tp: Any) -> dict[str, Any]:
    """The OpenAPI-subset schema (type, properties, required, items, enum, nullable,
    anyOf) that Gemini's ``response_schema`` accepts, for a dataclass or field type.

    A fresh copy each time: the SDK rewrites schema dicts in place.
    """
    return copy.deepcopy(_cached_schema(tp))


@functools.cache
def _cached_schema(tp: Any) -> dict[str, Any]:
    return _schema(tp)


def standard_json_schema(tp: Any) -> dict[str, Any]:
    """The same schema in standard JSON Schema, for OpenAI-compatible servers: ``null``
    as a type instead of OpenAPI's ``nullable``, and objects closed to unknown keys so a
    grammar-constrained server cannot pad a reply with fields nobody reads."""
    return copy.deepcopy(_cached_standard(tp))


@functools.cache
def _cached_standard(tp: Any) -> dict[str, Any]:
    return _standard(_cached_schema(tp))


def _standard(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "nullable":
            continue
        if key == "properties":
            out[key] = {name: _standard(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _standard(value)
        elif key == "anyOf":
            out[key] = [_standard(sub) for sub in value]
        else:
            out[key] = value
    if out.get("type") == "object":
        out["additionalProperties"] = False
    if schema.get("nullable"):
        if "anyOf" in out:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        elif "enum" in out:
            out = {"anyOf": [out, {"type": "null"}]}
        else:
            out["type"] = [out["type"], "null"]
    return out


def _schema(tp: Any) -> dict[str, Any]:
    args = _union_args(tp)
    if args is not None:
        members = [a for a in args if a is not _NONE_TYPE]
        nullable = len(members) != len(args)
        if len(members) == 1:
            inner = dict(_schema(members[0]))
        else:
            inner = {"anyOf": [_schema(m) for m in members]}
        if nullable:
            inner["nullable"] = True
        return inner
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"type": "string", "enum": [str(m.value) for m in tp]}
    if typing.get_origin(tp) is tuple:
        item_args = typing.get_args(tp)
        if len(item_args) == 2 and item_args[1] is Ellipsis:
            return {"type": "array", "items": _schema(item_args[0])}
        raise TypeError(f"only homogeneous tuple[X, ...] is supported, got {tp!r}")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = _hints(tp)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for f in dataclasses.fields(tp):
            properties[f.name] = _schema(hints[f.name])
            no_default = (
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            )
            if no_default:
                required.append(f.name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return schema
    raise TypeError(f"unsupported type in an LLM output: {tp!r}")


def decode(tp: type[T], data: object) -> T:
    """Build ``tp`` from parsed JSON, raising SchemaViolation on the first mismatch.

    Lenient where a model's slip is unambiguous (enum case, integral floats, missing
    optional fields, unknown extra keys); strict everywhere else.
    """
    return cast(T, _decode(tp, data, "$"))


def _decode(tp: Any, data: object, path: str) -> object:
    args = _union_args(tp)
    if args is not None:
        if data is None:
            if _NONE_TYPE in args:
                return None
            raise SchemaViolation(path, "must not be null")
        members = [a for a in args if a is not _NONE_TYPE]
        # Try exact scalar types first so True never becomes 1 and 1 never becomes "1".
        for member in members:
            if _exact_scalar(member, data):
                return data
        last: SchemaViolation | None = None
        for member in members:
            try:
                return _decode(member, data, path)
            except SchemaViolation as exc:
                last = exc
        raise last or SchemaViolation(path, "matches no allowed type")
    if tp is str:
        if isinstance(data, str):
            return data
        raise SchemaViolation(path, "expected a string")
    if tp is bool:
        if isinstance(data, bool):
            return data
        raise SchemaViolation(path, "expected a boolean")
    if tp is int:
        if isinstance(data, bool):
            raise SchemaViolation(path, "expected an integer")
        if isinstance(data, int):
            return data
        if isinstance(data, float) and data.is_integer():
            return int(data)
        raise SchemaViolation(path, "expected an integer")
    if tp is float:
        if isinstance(data, bool):
            raise SchemaViolation(path, "expected a number")
        if isinstance(data, int | float):
            return float(data)
        raise SchemaViolation(path, "expected a number")
    if isinstance(tp, type) and issubclass(tp, Enum):
        if isinstance(data, str):
            for member in tp:
                if str(member.value).lower() == data.strip().lower():
                    return member
        allowed = ", ".join(str(m.value) for m in tp)
        raise SchemaViolation(path, f"expected one of: {allowed}")
    if typing.get_origin(tp) is tuple:
        if not isinstance(data, list):
            raise SchemaViolation(path, "expected an array")
        item_type = typing.get_args(tp)[0]
        return tuple(_decode(item_type, item, f"{path}[{i}]") for i, item in enumerate(data))
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(data, dict):
            raise SchemaViolation(path, "expected an object")
        hints = _hints(tp)
        kwargs: dict[str, object] = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = _decode(hints[f.name], data[f.name], f"{path}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SchemaViolation(f"{path}.{f.name}", "is required")
        return tp(**kwargs)
    raise TypeError(f"unsupported type in an LLM output: {tp!r}")


def _exact_scalar(tp: Any, data: object) -> bool:
    if tp is bool:
        return isinstance(data, bool)
    if tp is int:
        return isinstance(data, int) and not isinstance(data, bool)
    if tp is float:
        return isinstance(data, float)
    if tp is str:
        return isinstance(data, str)
    return False


def encode(value: object) -> object:
    """Plain JSON-ready data for a dataclass value (enums as their values)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    return value
