"""The intent compiler: deterministic SQL from structured intents, every error named."""

from __future__ import annotations

import pytest

from services.sql import (
    Aggregate,
    Filter,
    FilterOp,
    GateRule,
    Group,
    Intent,
    IntentError,
    IntentKind,
    Order,
    SqlGate,
    TimeGrain,
    Value,
    compile_intent,
)

K = IntentKind


def sql_of(intent: Intent, catalog, row_cap: int = 50) -> str:
    return compile_intent(intent, catalog, row_cap=row_cap).sql


def test_count_with_filters_and_date_range(catalog):
    intent = Intent(
        K.COUNT,
        "opportunities",
        filters=(
            Filter("stage", FilterOp.EQUAL, (Value.text("Closed Won"),)),
            Filter("close_date", FilterOp.IN_RANGE, (Value.text("2025-01-01"),
                                                     Value.text("2025-04-01"))),
        ),
    )  # fmt: skip
    assert sql_of(intent, catalog) == (
        "SELECT COUNT(*) AS count FROM public.opportunities "
        "WHERE opportunities.stage = 'Closed Won' AND (opportunities.close_date >= "
        "CAST('2025-01-01' AS DATE) AND opportunities.close_date < CAST('2025-04-01' AS DATE))"
    )


def test_count_over_a_join_counts_main_rows_once(catalog):
    sql = sql_of(Intent(K.COUNT, "companies", join_tables=("opportunities",)), catalog)
    assert "COUNT(DISTINCT companies.company_id)" in sql
    assert (
        "INNER JOIN public.opportunities ON opportunities.company_id = companies.company_id" in sql
    )


def test_group_by_joined_column_with_sum_and_order(catalog):
    intent = Intent(
        K.GROUP_BY,
        "opportunities",
        join_tables=("companies",),
        group_by=(Group("industry"),),
        aggregate=Aggregate.SUM,
        aggregate_column="amount",
        order_by=(Order(by_aggregate=True, descending=True),),
        limit=3,
    )
    assert sql_of(intent, catalog) == (
        "SELECT companies.industry AS industry, SUM(opportunities.amount) AS sum_amount "
        "FROM public.opportunities INNER JOIN public.companies "
        "ON opportunities.company_id = companies.company_id GROUP BY 1 "
        "ORDER BY sum_amount DESC NULLS LAST, industry ASC LIMIT 3"
    )


def test_group_by_time_grain(catalog):
    intent = Intent(K.GROUP_BY, "activities", group_by=(Group("occurred_at", TimeGrain.MONTH),))
    sql = sql_of(intent, catalog)
    assert "CAST(DATE_TRUNC('month', activities.occurred_at) AS DATE) AS occurred_at_month" in sql
    assert sql.endswith("ORDER BY occurred_at_month ASC")


def test_joins_follow_foreign_keys_through_intermediate_tables(catalog):
    intent = Intent(
        K.COUNT,
        "opportunities",
        join_tables=("regions",),
        filters=(Filter("regions.name", FilterOp.EQUAL, (Value.text("EMEA"),)),),
    )
    compiled = compile_intent(intent, catalog, row_cap=50)
    assert compiled.tables == ("public.opportunities", "public.companies", "public.regions")
    assert "INNER JOIN public.companies" in compiled.sql
    assert "INNER JOIN public.regions ON companies.region_id = regions.region_id" in compiled.sql


def test_top_n_orders_with_a_primary_key_tiebreak_and_default_limit(catalog):
    intent = Intent(
        K.TOP_N, "opportunities", columns=("name", "amount"), order_by=(Order("amount", True),)
    )
    assert sql_of(intent, catalog) == (
        "SELECT opportunities.name AS name, opportunities.amount AS amount "
        "FROM public.opportunities ORDER BY opportunities.amount DESC NULLS LAST, "
        "opportunities.opportunity_id LIMIT 10"
    )


def test_limits_never_exceed_the_row_cap_and_lists_rely_on_fetching(catalog):
    listing = Intent(K.LIST, "companies", columns=("name",))
    assert "LIMIT" not in sql_of(listing, catalog)
    assert sql_of(Intent(K.LIST, "companies", columns=("name",), limit=500), catalog,
                  row_cap=20).endswith("LIMIT 20")  # fmt: skip


def test_list_without_columns_names_every_column_explicitly(catalog):
    sql = sql_of(Intent(K.LIST, "regions"), catalog)
    assert sql == (
        "SELECT regions.region_id AS region_id, regions.code AS code, regions.name AS name "
        "FROM public.regions"
    )


def test_contains_escapes_like_wildcards_and_quotes(catalog):
    intent = Intent(
        K.LOOKUP,
        "companies",
        columns=("name",),
        filters=(Filter("name", FilterOp.CONTAINS, (Value.text("50%_off'; DROP TABLE x; --\\"),)),),
    )
    sql = sql_of(intent, catalog)
    assert "ILIKE '%50\\%\\_off''; DROP TABLE x; --\\\\%'" in sql
    verdict = SqlGate().check(sql, catalog)
    assert verdict.valid


@pytest.mark.parametrize(
    ("op", "values", "fragment"),
    [
        (FilterOp.NOT_EQUAL, (Value.integer(5),), "opportunities.score <> 5"),
        (FilterOp.LESS, (Value.integer(5),), "opportunities.score < 5"),
        (FilterOp.LESS_OR_EQUAL, (Value.decimal("5.5"),), "opportunities.score <= 5.5"),
        (FilterOp.GREATER, (Value("double_value", 2.5),), "opportunities.score > 2.5"),
        (FilterOp.GREATER_OR_EQUAL, (Value.integer(5),), "opportunities.score >= 5"),
        (FilterOp.IN, (Value.integer(1), Value.integer(2)), "opportunities.score IN (1, 2)"),
        (FilterOp.NOT_IN, (Value.integer(1),), "NOT opportunities.score IN (1)"),
        (FilterOp.IS_NULL, (), "opportunities.score IS NULL"),
        (FilterOp.IS_NOT_NULL, (), "NOT opportunities.score IS NULL"),
    ],
)
def test_every_operator_compiles(catalog, op, values, fragment):
    intent = Intent(K.COUNT, "opportunities", filters=(Filter("score", op, values),))
    assert fragment in sql_of(intent, catalog)


def test_typed_values_become_typed_literals(catalog):
    intent = Intent(
        K.COUNT,
        "opportunities",
        filters=(
            Filter("created_at", FilterOp.GREATER, (Value("date_value", "2025-01-01"),)),
            Filter("closed_at", FilterOp.LESS, (Value("datetime_value", "2025-02-01T10:00:00"),)),
        ),
    )
    sql = sql_of(intent, catalog)
    assert "opportunities.created_at > CAST('2025-01-01' AS DATE)" in sql
    assert "opportunities.closed_at < CAST('2025-02-01T10:00:00' AS TIMESTAMP)" in sql
    owners = Intent(K.COUNT, "owners", filters=(Filter("active", FilterOp.EQUAL,
                                                        (Value.boolean(False),)),))  # fmt: skip
    assert "owners.active = FALSE" in sql_of(owners, catalog)


def test_compilation_is_deterministic(catalog):
    intent = Intent(K.GROUP_BY, "companies", group_by=(Group("industry"), Group("segment")))
    assert len({sql_of(intent, catalog) for _ in range(5)}) == 1


@pytest.mark.parametrize(
    ("intent", "field"),
    [
        (Intent(None, "companies"), "intent.kind"),
        (Intent(K.COUNT, "secrets"), "intent.table"),
        (Intent(K.COUNT, ""), "intent.table"),
        (Intent(K.LIST, "companies", columns=("name", "nope")), "intent.columns[1]"),
        (Intent(K.LIST, "companies", columns=("opportunities.amount",)), "intent.columns[0]"),
        (Intent(K.COUNT, "companies", filters=(Filter("nope", FilterOp.IS_NULL),)),
         "intent.filters[0].column"),
        (Intent(K.GROUP_BY, "companies", group_by=(Group("nope"),)),
         "intent.group_by[0].column"),
        (Intent(K.TOP_N, "companies", order_by=(Order("nope"),)), "intent.order_by[0].column"),
        (Intent(K.AGGREGATE, "companies", aggregate=Aggregate.SUM, aggregate_column="nope"),
         "intent.aggregate_column"),
        (Intent(K.COUNT, "companies", join_tables=("secrets",)), "intent.join_tables[0]"),
        (Intent(K.COUNT, "companies", filters=(Filter("name", FilterOp.EQUAL, ()),)),
         "intent.filters[0].values"),
        (Intent(K.COUNT, "companies", filters=(Filter("name", FilterOp.IN_RANGE,
                                                      (Value.text("a"),)),)),
         "intent.filters[0].values"),
        (Intent(K.COUNT, "companies", filters=(Filter("employee_count", FilterOp.EQUAL,
                                                      (Value.text("many"),)),)),
         "intent.filters[0].values[0]"),
        (Intent(K.COUNT, "companies", filters=(Filter("created_at", FilterOp.GREATER,
                                                      (Value.text("yesterday"),)),)),
         "intent.filters[0].values[0]"),
        (Intent(K.COUNT, "companies", filters=(Filter("employee_count", FilterOp.CONTAINS,
                                                      (Value.text("1"),)),)),
         "intent.filters[0].values"),
        (Intent(K.COUNT, "companies", filters=(Filter("name", FilterOp.UNSPECIFIED),)),
         "intent.filters[0].op"),
        (Intent(K.COUNT, "companies", filters=(Filter("name", FilterOp.EQUAL,
                                                      (Value("null_value", None),)),)),
         "intent.filters[0].values[0]"),
        (Intent(K.COUNT, "companies", limit=-1), "intent.limit"),
        (Intent(K.AGGREGATE, "companies"), "intent.aggregate_function"),
        (Intent(K.AGGREGATE, "companies", aggregate=Aggregate.SUM, aggregate_column="name"),
         "intent.aggregate_column"),
        (Intent(K.AGGREGATE, "companies", aggregate=Aggregate.AVG), "intent.aggregate_column"),
        (Intent(K.GROUP_BY, "companies"), "intent.group_by"),
        (Intent(K.GROUP_BY, "companies", group_by=(Group("industry", TimeGrain.MONTH),)),
         "intent.group_by[0].time_grain"),
        (Intent(K.TOP_N, "companies"), "intent.order_by"),
        (Intent(K.LOOKUP, "companies"), "intent.filters"),
        (Intent(K.LIST, "companies", order_by=(Order(by_aggregate=True),)),
         "intent.order_by[0].by_aggregate"),
        (Intent(K.LIST, "opportunities", join_tables=("companies",), columns=("created_at",
                                                                           "x.name")),
         "intent.columns[1]"),
    ],
)  # fmt: skip
def test_invalid_intents_name_the_field(catalog, intent, field):
    with pytest.raises(IntentError) as err:
        compile_intent(intent, catalog, row_cap=50)
    assert err.value.field == field


def test_ambiguous_bare_column_must_be_qualified(catalog):
    intent = Intent(K.LIST, "activities", join_tables=("companies", "contacts"),
                    columns=("created_at",))  # fmt: skip
    with pytest.raises(IntentError) as err:
        compile_intent(intent, catalog, row_cap=50)
    assert "ambiguous" in err.value.description


def test_unreachable_join_is_refused():
    from services.sql import Catalog, ColumnInfo, TableInfo

    catalog = Catalog(
        "w",
        (
            TableInfo("public", "a", columns=(ColumnInfo("id", "integer", False),)),
            TableInfo("public", "b", columns=(ColumnInfo("id", "integer", False),)),
        ),
    )
    with pytest.raises(IntentError) as err:
        compile_intent(Intent(K.COUNT, "a", join_tables=("b",)), catalog, row_cap=5)
    assert (err.value.field, err.value.description) == (
        "intent.join_tables[0]",
        "not reachable by any join",
    )


def test_every_compiled_kind_passes_the_gate(catalog):
    gate = SqlGate()
    intents = [
        Intent(K.COUNT, "contacts", join_tables=("companies",)),
        Intent(K.LIST, "contacts", columns=("first_name", "companies.name"),
               join_tables=("companies",), order_by=(Order("last_name"),)),
        Intent(K.GROUP_BY, "activities", join_tables=("owners",),
               group_by=(Group("owners.full_name"),), aggregate=Aggregate.COUNT_DISTINCT,
               aggregate_column="company_id"),
        Intent(K.TOP_N, "companies", columns=("name",), order_by=(Order("employee_count", True),)),
        Intent(K.LOOKUP, "products", filters=(Filter("name", FilterOp.STARTS_WITH,
                                                     (Value.text("Tandem"),)),)),
        Intent(K.AGGREGATE, "opportunities", aggregate=Aggregate.MAX,
               aggregate_column="close_date"),
    ]  # fmt: skip
    for intent in intents:
        verdict = gate.check(sql_of(intent, catalog), catalog)
        assert verdict.valid, verdict.violations
        assert verdict.first_rule is None
    assert GateRule.QUERY_ROOT  # the gate still runs on compiled SQL in the engine
