"""Structured intents (count, list, group, top, lookup, aggregate with filters) compiled to
SQL with sqlglot's builder: deterministic, checked against the catalog, safe by
construction; a model's intent is translated into one (``_model_intent``).
"""

from __future__ import annotations

from services.sql.intents._intents import (
    Aggregate,
    CompiledIntent,
    Filter,
    FilterOp,
    Group,
    Intent,
    IntentError,
    IntentKind,
    Order,
    TimeGrain,
    Value,
    compile_intent,
)
from services.sql.intents._model_intent import intent_from_model
from services.sql.intents._wire import intent_from_pb, intent_to_pb

__all__ = [
    "Aggregate",
    "CompiledIntent",
    "Filter",
    "FilterOp",
    "Group",
    "Intent",
    "IntentError",
    "IntentKind",
    "Order",
    "TimeGrain",
    "Value",
    "compile_intent",
    "intent_from_model",
    "intent_from_pb",
    "intent_to_pb",
]
