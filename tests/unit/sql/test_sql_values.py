"""Lossless value encoding and the result fingerprint."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

from services.sql.results._values import column_kind, decimal_text, decode, encode, fingerprint
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb


def which(value: cpb.SqlValue) -> tuple[str | None, object]:
    kind = value.WhichOneof("kind")
    return kind, getattr(value, kind) if kind else None


def test_scalars_keep_their_type_and_precision():
    assert which(encode(None)) == ("null_value", 0)
    assert which(encode(True)) == ("bool_value", True)
    assert which(encode(2**62)) == ("int_value", 2**62)
    assert which(encode(2**70)) == ("decimal_value", str(2**70))
    assert which(encode(1.5)) == ("double_value", 1.5)
    assert which(encode(Decimal("1234.50"))) == ("decimal_value", "1234.50")
    assert which(encode(Decimal("1E-7"))) == ("decimal_value", "0.0000001")
    assert which(encode(Decimal("NaN"))) == ("decimal_value", "NaN")
    assert which(encode("text")) == ("string_value", "text")
    assert which(encode(b"\x00\x01")) == ("bytes_value", b"\x00\x01")
    identifier = uuid.UUID(int=7)
    assert which(encode(identifier)) == ("string_value", str(identifier))


def test_dates_times_and_intervals():
    assert which(encode(dt.date(2024, 5, 1))) == ("date_value", "2024-05-01")
    naive = dt.datetime(2024, 5, 1, 13, 45, 0, 123456)
    assert which(encode(naive)) == ("datetime_value", "2024-05-01T13:45:00.123456")
    aware = encode(dt.datetime(2024, 5, 1, 13, 45, tzinfo=dt.timezone(dt.timedelta(hours=2))))
    assert aware.timestamp_value.ToJsonString() == "2024-05-01T11:45:00Z"
    assert which(encode(dt.time(13, 45))) == ("time_value", "13:45:00")
    assert which(encode("P1Y2M3D", "interval")) == ("interval_value", "P1Y2M3D")
    assert which(encode("infinity", "date")) == ("date_value", "infinity")
    assert which(encode("-infinity", "timestamp")) == ("datetime_value", "-infinity")


def test_json_stays_verbatim_and_arrays_nest():
    assert which(encode('{"a": 1.10}', "json")) == ("json_value", '{"a": 1.10}')
    nested = encode([[1, 2], [3, None]])
    rows = [[which(v) for v in inner.array_value.values] for inner in nested.array_value.values]
    assert rows == [[("int_value", 1), ("int_value", 2)], [("int_value", 3), ("null_value", 0)]]
    assert which(encode(['{"b": 2}'], "json").array_value.values[0]) == ("json_value", '{"b": 2}')


def test_column_kinds():
    assert column_kind("jsonb") == "json"
    assert column_kind("json[]") == "json"
    assert column_kind("interval") == "interval"
    assert column_kind("timestamp without time zone") == "timestamp"
    assert column_kind("timestamp with time zone") == "timestamptz"
    assert column_kind("text") == ""


def test_decimal_text_and_decode_round_trip():
    assert decimal_text(Decimal("-0.001")) == "-0.001"
    assert decimal_text(Decimal("Infinity")) == "Infinity"
    assert decode(cpb.SqlValue(decimal_value="12.30")) == Decimal("12.30")
    assert decode(cpb.SqlValue(string_value="x")) == "x"
    assert decode(cpb.SqlValue()) is None


def test_fingerprint_is_stable_and_order_sensitive():
    columns = [pb.SqlColumn(name="a", data_type="integer")]
    rows = [pb.SqlRow(values=[encode(1)]), pb.SqlRow(values=[encode(2)])]
    again = [pb.SqlRow(values=[encode(1)]), pb.SqlRow(values=[encode(2)])]
    assert fingerprint(columns, rows) == fingerprint(columns, again)
    assert fingerprint(columns, rows) != fingerprint(columns, list(reversed(rows)))
    renamed = [pb.SqlColumn(name="b", data_type="integer")]
    assert fingerprint(columns, rows) != fingerprint(renamed, rows)
    assert len(fingerprint(columns, [])) == 64
