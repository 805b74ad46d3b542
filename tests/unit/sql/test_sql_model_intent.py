"""A model's structured intent is compiled by the SQL service's own intent compiler."""

from __future__ import annotations

import pytest

from services.common.llm import (
    AggregateFunction,
    FilterOp,
    IntentAggregate,
    IntentFilter,
    IntentKind,
    SortDirection,
    SqlIntent,
)
from services.sql import Catalog
from services.sql.intents._intents import Aggregate, IntentError, compile_intent
from services.sql.intents._intents import FilterOp as Op
from services.sql.intents._intents import IntentKind as Kind
from services.sql.intents._model_intent import intent_from_model


def test_a_ranking_by_an_aggregate_becomes_a_grouped_intent(catalog: Catalog) -> None:
    model = SqlIntent(
        IntentKind.TOP_N,
        "opportunities",
        columns=("name",),
        filters=(
            IntentFilter("stage", FilterOp.EQ, "Open"),
            IntentFilter("amount", FilterOp.GT, 5),
        ),
        aggregate=IntentAggregate(AggregateFunction.SUM, "amount"),
        order_by="sum_amount",
        direction=SortDirection.DESC,
        limit=5,
    )
    intent = intent_from_model(model)
    assert (intent.kind, intent.table, intent.limit) == (Kind.GROUP_BY, "opportunities", 5)
    assert [g.column for g in intent.group_by] == ["name"]
    assert [(f.op, f.values[0].kind) for f in intent.filters] == [
        (Op.EQUAL, "string_value"),
        (Op.GREATER, "int_value"),
    ]
    assert (intent.aggregate, intent.aggregate_column) == (Aggregate.SUM, "amount")
    (order,) = intent.order_by
    assert order.by_aggregate and order.descending and not order.column
    compiled = compile_intent(intent, catalog, row_cap=50)
    assert "GROUP BY 1" in compiled.sql and "ORDER BY sum_amount DESC" in compiled.sql
    assert "LIMIT 5" in compiled.sql


def test_qualified_columns_become_joins(catalog: Catalog) -> None:
    model = SqlIntent(
        IntentKind.COUNT,
        "opportunities",
        filters=(IntentFilter("companies.industry", FilterOp.EQ, "Healthcare"),),
        aggregate=IntentAggregate(AggregateFunction.COUNT),
    )
    intent = intent_from_model(model)
    assert intent.join_tables == ("companies",) and intent.aggregate_column == ""
    compiled = compile_intent(intent, catalog, row_cap=50)
    assert "INNER JOIN public.companies" in compiled.sql
    assert "'Healthcare'" in compiled.sql


def test_names_outside_the_catalog_are_refused_by_the_compiler(catalog: Catalog) -> None:
    # The model's names are not trusted: the one compiler checks them against the catalog.
    model = SqlIntent(IntentKind.LIST, "pg_shadow", columns=("passwd",))
    with pytest.raises(IntentError, match=r"intent\.table"):
        compile_intent(intent_from_model(model), catalog, row_cap=50)
