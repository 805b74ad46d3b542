"""A model's structured intent (the LLM layer's ``SqlIntent``) as this service's ``Intent``.

A model may answer a SQL role with an intent instead of a statement. It is translated
here, field by field, and compiled by the SQL service's own compiler like any other
intent, so there is one intent compiler and it lives in this package.
"""

from __future__ import annotations

from services.common.llm import SqlIntent
from services.sql.intents._intents import (
    Aggregate,
    Filter,
    FilterOp,
    Group,
    Intent,
    IntentKind,
    Order,
    Value,
)

_KINDS = {
    "count": IntentKind.COUNT,
    "list": IntentKind.LIST,
    "group_by": IntentKind.GROUP_BY,
    "top_n": IntentKind.TOP_N,
    "lookup": IntentKind.LOOKUP,
    "aggregate": IntentKind.AGGREGATE,
}
_OPS = {
    "eq": FilterOp.EQUAL,
    "ne": FilterOp.NOT_EQUAL,
    "gt": FilterOp.GREATER,
    "gte": FilterOp.GREATER_OR_EQUAL,
    "lt": FilterOp.LESS,
    "lte": FilterOp.LESS_OR_EQUAL,
    "contains": FilterOp.CONTAINS,
}
_AGGREGATES = {
    "count": Aggregate.COUNT,
    "sum": Aggregate.SUM,
    "avg": Aggregate.AVG,
    "min": Aggregate.MIN,
    "max": Aggregate.MAX,
}


def intent_from_model(intent: SqlIntent) -> Intent:
    """The model's intent for :func:`services.sql.intents._intents.compile_intent`.

    The model names a joined table's column as ``table.column``; those qualifiers become
    the intent's ``join_tables`` (the compiler finds the join path and refuses names
    outside the catalog). An ``order_by`` equal to the aggregate's alias orders by it,
    and a ranking by an aggregate ("top 5 companies by total amount") is a ``GROUP_BY``
    over its columns here, since only grouped intents carry an aggregate per row.
    """
    names = [*intent.columns, *(f.column for f in intent.filters), *intent.group_by]
    aggregate = intent.aggregate
    by_aggregate = aggregate is not None and intent.order_by == aggregate.alias
    if aggregate is not None and aggregate.column != "*":
        names.append(aggregate.column)
    if intent.order_by and not by_aggregate:
        names.append(intent.order_by)
    joins: list[str] = []
    for name in names:
        qualifier = name.rpartition(".")[0]
        if qualifier and qualifier != intent.table and qualifier not in joins:
            joins.append(qualifier)
    kind = _KINDS[intent.kind.value]
    group_by = intent.group_by
    if by_aggregate and kind in (IntentKind.TOP_N, IntentKind.LIST):
        kind, group_by = IntentKind.GROUP_BY, group_by or intent.columns
    order: tuple[Order, ...] = ()
    if intent.order_by:
        descending = intent.direction.value == "desc"
        column = "" if by_aggregate else intent.order_by
        order = (Order(column, descending, by_aggregate),)
    return Intent(
        kind=kind,
        table=intent.table,
        join_tables=tuple(joins),
        columns=intent.columns,
        filters=tuple(
            Filter(f.column, _OPS[f.op.value], (_value(f.value),)) for f in intent.filters
        ),
        group_by=tuple(Group(c) for c in group_by),
        order_by=order,
        limit=intent.limit or 0,
        aggregate=_AGGREGATES[aggregate.function.value] if aggregate else Aggregate.UNSPECIFIED,
        aggregate_column="" if aggregate is None or aggregate.column == "*" else aggregate.column,
    )


def _value(value: str | int | float | bool) -> Value:
    if isinstance(value, bool):
        return Value.boolean(value)
    if isinstance(value, int):
        return Value.integer(value)
    if isinstance(value, float):
        return Value("double_value", value)
    return Value.text(value)
