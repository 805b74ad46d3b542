"""Intents on the wire: ``tandem.v1.SqlIntent`` <-> :class:`Intent`, for the RPC that runs
an intent and for the answer memory, which stores the intent an answer was compiled from."""

from __future__ import annotations

import enum
from typing import TypeVar

from services.sql.intents._intents import (
    Aggregate,
    Filter,
    FilterOp,
    Group,
    Intent,
    IntentKind,
    Order,
    TimeGrain,
    Value,
)
from services.sql.results import decode, encode
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb

_E = TypeVar("_E", bound=enum.Enum)


def intent_from_pb(message: pb.SqlIntent) -> Intent:
    """The request's intent; unknown enum numbers become ``None``/UNSPECIFIED and are
    refused by the compiler with the field they came from."""
    return Intent(
        kind=_enum(IntentKind, message.kind),
        table=message.table,
        join_tables=tuple(message.join_tables),
        columns=tuple(message.columns),
        filters=tuple(
            Filter(
                column=f.column,
                op=_enum(FilterOp, f.op) or FilterOp.UNSPECIFIED,
                values=tuple(_value(v) for v in f.values),
            )
            for f in message.filters
        ),
        group_by=tuple(
            Group(g.column, _enum(TimeGrain, g.time_grain) or TimeGrain.NONE)
            for g in message.group_by
        ),
        order_by=tuple(Order(o.column, o.descending, o.by_aggregate) for o in message.order_by),
        limit=message.limit,
        aggregate=_enum(Aggregate, message.aggregate_function) or Aggregate.UNSPECIFIED,
        aggregate_column=message.aggregate_column,
    )


def _enum(kind: type[_E], number: int) -> _E | None:
    try:
        return kind(number)
    except ValueError:
        return None


def _value(message: cpb.SqlValue) -> Value:
    return Value(message.WhichOneof("kind") or "unset", decode(message))


def intent_to_pb(intent: Intent) -> pb.SqlIntent:
    return pb.SqlIntent(
        kind=intent.kind.value if intent.kind else 0,  # type: ignore[arg-type]
        table=intent.table,
        join_tables=list(intent.join_tables),
        columns=list(intent.columns),
        filters=[
            pb.IntentFilter(
                column=f.column,
                op=f.op.value,  # type: ignore[arg-type]
                values=[_value_pb(v) for v in f.values],
            )
            for f in intent.filters
        ],
        group_by=[
            pb.IntentGroup(column=g.column, time_grain=g.grain.value)  # type: ignore[arg-type]
            for g in intent.group_by
        ],
        order_by=[
            pb.IntentOrder(column=o.column, descending=o.descending, by_aggregate=o.by_aggregate)
            for o in intent.order_by
        ],
        limit=intent.limit,
        aggregate_function=intent.aggregate.value,  # type: ignore[arg-type]
        aggregate_column=intent.aggregate_column,
    )


_TEXT_KINDS = frozenset(
    {
        "date_value",
        "datetime_value",
        "interval_value",
        "json_value",
        "time_value",
        "string_value",
        "decimal_value",
    }
)


def _value_pb(value: Value) -> cpb.SqlValue:
    if value.kind in _TEXT_KINDS:
        out = cpb.SqlValue()
        setattr(out, value.kind, str(value.value))
        return out
    return encode(value.value)
