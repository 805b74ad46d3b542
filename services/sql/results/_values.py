"""Lossless encoding of Postgres values into ``tandem.v1.SqlValue``, and back for intents.

The wire type is the documented representation, so rows are built as SqlValues directly:
numerics as exact decimal text, timestamps as instants, dates and intervals as ISO 8601,
json verbatim, arrays recursively, NULL as ``null_value``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import uuid
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import psycopg
from google.protobuf import struct_pb2
from psycopg.adapt import Loader
from psycopg.types.datetime import DateLoader, TimestampLoader, TimestamptzLoader
from psycopg.types.string import TextLoader

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Column kinds whose Python value alone does not say how to encode it.
KIND_JSON = "json"
KIND_INTERVAL = "interval"


def _lenient(base: type[Loader]) -> type[Loader]:
    """A date/time loader that keeps 'infinity' and out-of-range values as text."""

    class Lenient(base):  # type: ignore[valid-type,misc]
        def load(self, data: Any) -> Any:
            try:
                return super().load(data)
            except psycopg.DataError:
                return bytes(data).decode()

    Lenient.__name__ = f"Lenient{base.__name__}"
    return Lenient


_LENIENT_DATE = _lenient(DateLoader)
_LENIENT_TIMESTAMP = _lenient(TimestampLoader)
_LENIENT_TIMESTAMPTZ = _lenient(TimestamptzLoader)


def register_loaders(conn: psycopg.AsyncConnection[Any]) -> None:
    """json/jsonb and intervals stay text (verbatim JSON; ISO 8601 intervals when the
    session's IntervalStyle is iso_8601); infinite dates stay text instead of failing."""
    for name in ("json", "jsonb", "interval"):
        conn.adapters.register_loader(name, TextLoader)
    conn.adapters.register_loader("date", _LENIENT_DATE)
    conn.adapters.register_loader("timestamp", _LENIENT_TIMESTAMP)
    conn.adapters.register_loader("timestamptz", _LENIENT_TIMESTAMPTZ)


def column_kind(data_type: str) -> str:
    """The encoding hint for a column from its Postgres type name."""
    base = data_type.removesuffix("[]")
    if base in ("json", "jsonb"):
        return KIND_JSON
    if base == "interval":
        return KIND_INTERVAL
    if base == "date":
        return "date"
    if base.startswith("timestamp"):
        return "timestamptz" if "with time zone" in base else "timestamp"
    return ""


def encode(value: object, kind: str = "") -> cpb.SqlValue:
    """One Python value from psycopg as a SqlValue (``kind`` from :func:`column_kind`)."""
    if value is None:
        return cpb.SqlValue(null_value=struct_pb2.NULL_VALUE)
    if isinstance(value, bool):
        return cpb.SqlValue(bool_value=value)
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return cpb.SqlValue(int_value=value)
        return cpb.SqlValue(decimal_value=str(value))
    if isinstance(value, float):
        return cpb.SqlValue(double_value=value)
    if isinstance(value, Decimal):
        return cpb.SqlValue(decimal_value=decimal_text(value))
    if isinstance(value, str):
        if kind == KIND_JSON:
            return cpb.SqlValue(json_value=value)
        if kind == KIND_INTERVAL:
            return cpb.SqlValue(interval_value=value)
        if kind == "date":
            return cpb.SqlValue(date_value=value)
        if kind == "timestamp":
            return cpb.SqlValue(datetime_value=value)
        return cpb.SqlValue(string_value=value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return cpb.SqlValue(datetime_value=value.isoformat())
        out = cpb.SqlValue()
        out.timestamp_value.FromDatetime(value.astimezone(dt.UTC))
        return out
    if isinstance(value, dt.date):
        return cpb.SqlValue(date_value=value.isoformat())
    if isinstance(value, dt.time):
        return cpb.SqlValue(time_value=value.isoformat())
    if isinstance(value, dt.timedelta):
        return cpb.SqlValue(interval_value=_iso_duration(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return cpb.SqlValue(bytes_value=bytes(value))
    if isinstance(value, list | tuple):
        return cpb.SqlValue(array_value=cpb.SqlArray(values=[encode(v, kind) for v in value]))
    if isinstance(value, uuid.UUID | ipaddress.IPv4Address | ipaddress.IPv6Address):
        return cpb.SqlValue(string_value=str(value))
    return cpb.SqlValue(string_value=str(value))


def decimal_text(value: Decimal) -> str:
    """Exact decimal text without exponent ("1234.50", "0.0000001", "NaN", "Infinity")."""
    if value.is_nan():
        return "NaN"
    if value.is_infinite():
        return "Infinity" if value > 0 else "-Infinity"
    return format(value, "f")


def _iso_duration(delta: dt.timedelta) -> str:
    sign = "-" if delta < dt.timedelta(0) else ""
    delta = abs(delta)
    seconds = delta.seconds + delta.microseconds / 1e6
    return f"{sign}P{delta.days}DT{seconds:g}S"


def encoded_size(value: cpb.SqlValue) -> int:
    """Bytes the value takes on the wire (for the result-size cap)."""
    return value.ByteSize()


def fingerprint(columns: Sequence[pb.SqlColumn], rows: Iterable[pb.SqlRow]) -> str:
    """SHA-256 over the deterministic encoding of columns then rows, each length-prefixed."""
    digest = hashlib.sha256()
    for message in [*columns, *rows]:
        data = message.SerializeToString(deterministic=True)
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def decode(value: cpb.SqlValue) -> object:
    """A SqlValue as the Python value sqlglot should write as a literal (intents)."""
    which = value.WhichOneof("kind")
    if which is None or which == "null_value":
        return None
    if which == "decimal_value":
        return Decimal(value.decimal_value)
    if which == "timestamp_value":
        return value.timestamp_value.ToDatetime(tzinfo=dt.UTC)
    if which == "array_value":
        return [decode(v) for v in value.array_value.values]
    return getattr(value, which)
