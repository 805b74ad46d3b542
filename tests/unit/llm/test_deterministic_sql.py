"""Deterministic text-to-SQL roles: schema linking to intents, compilation and repair."""

from __future__ import annotations

import dataclasses

import pytest
import sqlglot
from sqlglot import exp

from services.common.llm import (
    AggregateFunction,
    DeterministicProvider,
    FilterOp,
    GenerateSqlRequest,
    IdentifyTablesRequest,
    IntentAggregate,
    IntentError,
    IntentFilter,
    IntentKind,
    RepairSqlRequest,
    SortDirection,
    SqlIntent,
    Tier,
    UnderstandSqlRequest,
    compile_intent,
)
from tests.unit.llm.fix_crm import CRM

COUNT = IntentAggregate(AggregateFunction.COUNT)
LAST_Q = (
    IntentFilter("close_date", FilterOp.GTE, "2025-01-01"),
    IntentFilter("close_date", FilterOp.LT, "2025-04-01"),
)
CLOSED = IntentFilter("stage", FilterOp.CONTAINS, "Closed")


def f(column: str, op: str, value: str | int | float) -> IntentFilter:
    return IntentFilter(column, FilterOp(op), value)


def intent(
    kind: IntentKind,
    table: str,
    *filters: IntentFilter,
    columns: tuple[str, ...] | None = None,
    group: tuple[str, ...] = (),
    agg: IntentAggregate | None = None,
    order: str | None = None,
    direction: SortDirection = SortDirection.DESC,
    limit: int | None = None,
) -> tuple[SqlIntent, bool]:
    """An expected intent; ``columns=None`` means the projection is not checked."""
    if kind is IntentKind.COUNT and agg is None:
        agg = COUNT
    if kind is IntentKind.GROUP_BY and order is None and agg is not None:
        order = agg.alias
    built = SqlIntent(kind, table, columns or (), filters, group, agg, order, direction, limit)
    return built, columns is not None


def normalised(value: SqlIntent, check_columns: bool) -> SqlIntent:
    return dataclasses.replace(
        value,
        filters=tuple(sorted(value.filters, key=repr)),
        columns=value.columns if check_columns else (),
    )


K = IntentKind
SQL_CASES: list[tuple[str, tuple[SqlIntent, bool]]] = [
    # counts, with paraphrases, casing, abbreviations and typos
    ("how many deals closed last quarter?", intent(K.COUNT, "opportunities", CLOSED, *LAST_Q)),
    ("Number of deals closed last quarter", intent(K.COUNT, "opportunities", CLOSED, *LAST_Q)),
    ("count the deals that closed last qtr", intent(K.COUNT, "opportunities", CLOSED, *LAST_Q)),
    (
        "How many opportunities did we close in the previous quarter?",
        intent(K.COUNT, "opportunities", *LAST_Q),
    ),
    (
        "how many companies are in healthcare?",
        intent(K.COUNT, "companies", f("industry", "eq", "Healthcare")),
    ),
    (
        "HOW MANY HEALTHCARE ACCOUNTS DO WE HAVE",
        intent(K.COUNT, "companies", f("industry", "eq", "Healthcare")),
    ),
    (
        "how many compnies are in helthcare",
        intent(K.COUNT, "companies", f("industry", "eq", "Healthcare")),
    ),
    (
        "how many oportunities are in negotation",
        intent(K.COUNT, "opportunities", f("stage", "eq", "Negotiation")),
    ),
    (
        "count of meetings in 2024",
        intent(
            K.COUNT,
            "activities",
            f("type", "eq", "Meeting"),
            f("occurred_at", "gte", "2024-01-01"),
            f("occurred_at", "lt", "2025-01-01"),
        ),
    ),
    (
        "how many emails were sent last month",
        intent(
            K.COUNT,
            "activities",
            f("type", "eq", "Email"),
            f("occurred_at", "gte", "2025-04-01"),
            f("occurred_at", "lt", "2025-05-01"),
        ),
    ),
    (
        "number of demos since 2024",
        intent(
            K.COUNT, "activities", f("type", "eq", "Demo"), f("occurred_at", "gte", "2024-01-01")
        ),
    ),
    (
        "how many deals does Hooli have",
        intent(K.COUNT, "opportunities", f("companies.name", "contains", "Hooli")),
    ),
    (
        "count deals between 10k and 50k",
        intent(K.COUNT, "opportunities", f("amount", "gte", 10000), f("amount", "lte", 50000)),
    ),
    # group by
    (
        "number of opportunities per stage",
        intent(K.GROUP_BY, "opportunities", group=("stage",), agg=COUNT),
    ),
    ("deals by stage", intent(K.GROUP_BY, "opportunities", group=("stage",), agg=COUNT)),
    (
        "how many deals in each stage",
        intent(K.GROUP_BY, "opportunities", group=("stage",), agg=COUNT),
    ),
    (
        "how many contacts per company",
        intent(K.GROUP_BY, "contacts", group=("companies.name",), agg=COUNT),
    ),
    (
        "average deal amount by industry",
        intent(
            K.GROUP_BY,
            "opportunities",
            group=("companies.industry",),
            agg=IntentAggregate(AggregateFunction.AVG, "amount"),
        ),
    ),
    (
        "avg opportunity value per industry",
        intent(
            K.GROUP_BY,
            "opportunities",
            group=("companies.industry",),
            agg=IntentAggregate(AggregateFunction.AVG, "amount"),
        ),
    ),
    (
        "which company has the most deals",
        intent(K.GROUP_BY, "opportunities", group=("companies.name",), agg=COUNT, limit=1),
    ),
    (
        "Which account has the most opportunities?",
        intent(K.GROUP_BY, "opportunities", group=("companies.name",), agg=COUNT, limit=1),
    ),
    (
        "which industry has the most companies",
        intent(K.GROUP_BY, "companies", group=("industry",), agg=COUNT, limit=1),
    ),
    (
        "which rep has the most closed won deals",
        intent(
            K.GROUP_BY,
            "opportunities",
            f("stage", "eq", "Closed Won"),
            group=("owner",),
            agg=COUNT,
            limit=1,
        ),
    ),
    (
        "which region has the highest total deal amount",
        intent(
            K.GROUP_BY,
            "opportunities",
            group=("companies.region",),
            agg=IntentAggregate(AggregateFunction.SUM, "amount"),
            limit=1,
        ),
    ),
    # aggregates
    (
        "total amount of closed won opportunities",
        intent(
            K.AGGREGATE,
            "opportunities",
            f("stage", "eq", "Closed Won"),
            agg=IntentAggregate(AggregateFunction.SUM, "amount"),
        ),
    ),
    (
        "sum of amount for won deals",
        intent(
            K.AGGREGATE,
            "opportunities",
            f("stage", "contains", "Won"),
            agg=IntentAggregate(AggregateFunction.SUM, "amount"),
        ),
    ),
    (
        "what's the total pipeline in EMEA",
        intent(
            K.AGGREGATE,
            "opportunities",
            f("companies.region", "eq", "EMEA"),
            agg=IntentAggregate(AggregateFunction.SUM, "amount"),
        ),
    ),
    (
        "what is the average deal size",
        intent(K.AGGREGATE, "opportunities", agg=IntentAggregate(AggregateFunction.AVG, "amount")),
    ),
    (
        "What is the highest deal amount?",
        intent(K.AGGREGATE, "opportunities", agg=IntentAggregate(AggregateFunction.MAX, "amount")),
    ),
    (
        "what is the minimum list price",
        intent(K.AGGREGATE, "products", agg=IntentAggregate(AggregateFunction.MIN, "list_price")),
    ),
    (
        "average score of deals owned by Sam Patel",
        intent(
            K.AGGREGATE,
            "opportunities",
            f("owner", "eq", "Sam Patel"),
            agg=IntentAggregate(AggregateFunction.AVG, "score"),
        ),
    ),
    (
        "how many employes in total",
        intent(K.AGGREGATE, "companies", agg=IntentAggregate(AggregateFunction.SUM, "employees")),
    ),
    (
        "how many employees does Acme have",
        intent(
            K.AGGREGATE,
            "companies",
            f("name", "contains", "Acme"),
            agg=IntentAggregate(AggregateFunction.SUM, "employees"),
        ),
    ),
    (
        "how many employees per region",
        intent(
            K.GROUP_BY,
            "companies",
            group=("region",),
            agg=IntentAggregate(AggregateFunction.SUM, "employees"),
        ),
    ),
    # rankings
    (
        "top ten opportunities by score",
        intent(K.TOP_N, "opportunities", columns=("name", "score"), order="score", limit=10),
    ),
    (
        "Top 10 deals by score",
        intent(K.TOP_N, "opportunities", columns=("name", "score"), order="score", limit=10),
    ),
    (
        "show me the 10 highest scoring opportunities",
        intent(K.TOP_N, "opportunities", columns=("name", "score"), order="score", limit=10),
    ),
    (
        "which 5 products have the highest list price",
        intent(K.TOP_N, "products", columns=("name", "list_price"), order="list_price", limit=5),
    ),
    (
        "what are the 3 most expensive products",
        intent(K.TOP_N, "products", columns=("name", "list_price"), order="list_price", limit=3),
    ),
    (
        "which company has the most employees",
        intent(K.TOP_N, "companies", columns=("name", "employees"), order="employees", limit=1),
    ),
    (
        "what is the largest company by headcount",
        intent(K.TOP_N, "companies", columns=("name", "employees"), order="employees", limit=1),
    ),
    (
        "who owns the biggest deal",
        intent(
            K.TOP_N,
            "opportunities",
            columns=("name", "owner", "amount"),
            order="amount",
            limit=1,
        ),
    ),
    (
        "what are the cheapest products",
        intent(
            K.TOP_N,
            "products",
            columns=("name", "list_price"),
            order="list_price",
            direction=SortDirection.ASC,
            limit=10,
        ),
    ),
    (
        "show the most recent activities",
        intent(
            K.TOP_N,
            "activities",
            columns=("subject", "occurred_at"),
            order="occurred_at",
            limit=10,
        ),
    ),
    (
        "Top 3 deals by amount in healthcare",
        intent(
            K.TOP_N,
            "opportunities",
            f("companies.industry", "eq", "Healthcare"),
            order="amount",
            limit=3,
        ),
    ),
    # lists and lookups
    ("list all products", intent(K.LIST, "products", columns=("name",))),
    (
        "list contacts at Acme Corp",
        intent(
            K.LIST,
            "contacts",
            f("companies.name", "eq", "Acme Corp"),
            columns=("first_name", "last_name"),
        ),
    ),
    ("show contacts from globex", intent(K.LIST, "contacts", f("companies.name", "eq", "Globex"))),
    (
        "opportunities with amount over 50k",
        intent(K.LIST, "opportunities", f("amount", "gt", 50000)),
    ),
    ("deals above $1.2m", intent(K.LIST, "opportunities", f("amount", "gt", 1200000))),
    ("deals worth less than 5000", intent(K.LIST, "opportunities", f("amount", "lt", 5000))),
    (
        "companies with more than 500 employees in EMEA",
        intent(K.LIST, "companies", f("region", "eq", "EMEA"), f("employees", "gt", 500)),
    ),
    (
        "list companies in retail with revenue above 1m",
        intent(
            K.LIST,
            "companies",
            f("industry", "eq", "Retail"),
            f("annual_revenue", "gt", 1000000),
        ),
    ),
    (
        "show deals not in closed lost",
        intent(K.LIST, "opportunities", f("stage", "ne", "Closed Lost")),
    ),
    (
        "Which companies have deals in negotiation?",
        intent(K.LIST, "companies", f("opportunities.stage", "eq", "Negotiation")),
    ),
    (
        "deals closing this quarter",
        intent(
            K.LIST,
            "opportunities",
            f("close_date", "gte", "2025-04-01"),
            f("close_date", "lt", "2025-07-01"),
        ),
    ),
    (
        "what is the email of the CFO at Globex",
        intent(
            K.LOOKUP,
            "contacts",
            f("title", "eq", "CFO"),
            f("companies.name", "eq", "Globex"),
            columns=("first_name", "last_name", "email"),
        ),
    ),
    (
        "what's the phone number of contacts at initech",
        intent(
            K.LOOKUP,
            "contacts",
            f("companies.name", "eq", "Initech"),
            columns=("first_name", "last_name", "phone"),
        ),
    ),
    (
        "what is the industry of Globex",
        intent(K.LOOKUP, "companies", f("name", "eq", "Globex"), columns=("name", "industry")),
    ),
]


@pytest.mark.parametrize(("question", "expected"), SQL_CASES, ids=[q for q, _ in SQL_CASES])
async def test_understand_links_the_question_to_an_intent(
    deterministic: DeterministicProvider, question: str, expected: tuple[SqlIntent, bool]
) -> None:
    result = await deterministic.understand_sql(UnderstandSqlRequest(question, CRM))
    want, check_columns = expected
    got = result.output.intent
    assert got is not None, result.output.restatement
    assert normalised(got, check_columns) == normalised(want, check_columns)
    assert result.output.restatement
    assert result.usage.tier is Tier.FAST


@pytest.mark.parametrize(("question", "expected"), SQL_CASES, ids=[q for q, _ in SQL_CASES])
async def test_generated_sql_is_one_select_over_known_tables(
    deterministic: DeterministicProvider, question: str, expected: tuple[SqlIntent, bool]
) -> None:
    result = await deterministic.generate_sql(GenerateSqlRequest(question, CRM, row_limit=50))
    sql = result.output.sql
    assert sql is not None
    statements = sqlglot.parse(sql, dialect="postgres")
    assert len(statements) == 1
    tree = statements[0]
    assert isinstance(tree, exp.Select)
    known = {t.name for t in CRM.tables}
    assert {t.name for t in tree.find_all(exp.Table)} <= known
    assert all(isinstance(star.parent, exp.Count) for star in tree.find_all(exp.Star))
    limit = tree.args.get("limit")
    if expected[0].kind in (IntentKind.COUNT, IntentKind.AGGREGATE):
        assert limit is None
    else:
        assert limit is not None and int(limit.expression.name) <= 50
    assert result.output.tables_used[0] == expected[0].table


@pytest.mark.parametrize(
    ("question", "tables"),
    [
        ("how many deals closed last quarter?", ("opportunities",)),
        ("average deal amount by industry", ("opportunities", "companies")),
        ("list contacts at Acme Corp", ("contacts", "companies")),
        ("Which companies have deals in negotiation?", ("companies", "opportunities")),
        ("what's the weather like", ()),
    ],
)
async def test_identify_tables(
    deterministic: DeterministicProvider, question: str, tables: tuple[str, ...]
) -> None:
    result = await deterministic.identify_tables(IdentifyTablesRequest(question, CRM))
    assert result.output.tables == tables


async def test_unlinkable_question_yields_no_sql(deterministic: DeterministicProvider) -> None:
    result = await deterministic.generate_sql(GenerateSqlRequest("what's the weather like", CRM))
    assert result.output.sql is None and result.output.explanation


async def test_write_request_is_restated_as_read_only(deterministic: DeterministicProvider) -> None:
    question = "Show me all deals in negotiation, and also DROP the opportunities table"
    understood = await deterministic.understand_sql(UnderstandSqlRequest(question, CRM))
    assert "only reading is supported" in understood.output.restatement
    generated = await deterministic.generate_sql(GenerateSqlRequest(question, CRM))
    assert generated.output.sql is not None
    assert generated.output.sql.lstrip().upper().startswith("SELECT")
    assert "DROP" not in generated.output.sql.upper()


async def test_injected_sql_in_a_value_stays_a_literal(
    deterministic: DeterministicProvider,
) -> None:
    question = 'how many deals does "Acme\'; DROP TABLE companies; --" have'
    result = await deterministic.generate_sql(GenerateSqlRequest(question, CRM))
    assert result.output.sql is not None
    (tree,) = sqlglot.parse(result.output.sql, dialect="postgres")
    assert isinstance(tree, exp.Select)
    assert not list(tree.find_all(exp.Drop))


@pytest.mark.parametrize(
    ("sql", "error", "fixed_fragment"),
    [
        (
            'SELECT "opportunities"."amout" FROM opportunities LIMIT 10',
            'column "amout" does not exist',
            '"opportunities"."amount"',
        ),
        (
            "SELECT name FROM opportunity LIMIT 10",
            'relation "opportunity" does not exist',
            '"opportunities"',
        ),
        (
            "SELECT c.nmae FROM companies AS c LIMIT 5",
            "ERROR: column c.nmae does not exist",
            '"name"',
        ),
    ],
)
async def test_repair_replaces_unknown_names(
    deterministic: DeterministicProvider, sql: str, error: str, fixed_fragment: str
) -> None:
    result = await deterministic.repair_sql(RepairSqlRequest("top deals", CRM, sql, error))
    assert result.output.sql is not None and fixed_fragment in result.output.sql
    assert result.usage.tier is Tier.STRONG


async def test_repair_regenerates_from_the_question_when_names_are_fine(
    deterministic: DeterministicProvider,
) -> None:
    question = "top ten opportunities by score"
    result = await deterministic.repair_sql(
        RepairSqlRequest(question, CRM, "SELECT pg_sleep(10)", "function pg_sleep is not allowed")
    )
    assert result.output.sql is not None and "pg_sleep" not in result.output.sql
    assert result.output.intent is not None and result.output.intent.kind is IntentKind.TOP_N


async def test_repair_does_not_repeat_the_failed_query(
    deterministic: DeterministicProvider,
) -> None:
    question = "top ten opportunities by score"
    first = await deterministic.generate_sql(GenerateSqlRequest(question, CRM))
    assert first.output.sql is not None
    result = await deterministic.repair_sql(
        RepairSqlRequest(question, CRM, first.output.sql, "canceling statement due to timeout")
    )
    assert result.output.sql is None


def test_compile_rejects_unknown_names_and_unjoined_tables() -> None:
    with pytest.raises(IntentError, match="unknown table"):
        compile_intent(SqlIntent(IntentKind.COUNT, "pg_shadow"), CRM)
    with pytest.raises(IntentError, match="unknown column"):
        compile_intent(SqlIntent(IntentKind.LIST, "companies", columns=("password",)), CRM)
    with pytest.raises(IntentError, match="not joined"):
        compile_intent(SqlIntent(IntentKind.LIST, "products", columns=("companies.name",)), CRM)
    with pytest.raises(IntentError, match="numeric"):
        compile_intent(
            SqlIntent(
                IntentKind.AGGREGATE,
                "companies",
                aggregate=IntentAggregate(AggregateFunction.SUM, "name"),
            ),
            CRM,
        )


def test_compile_caps_limits_and_escapes_like_patterns() -> None:
    sql = compile_intent(
        SqlIntent(
            IntentKind.LIST,
            "companies",
            columns=("name",),
            filters=(IntentFilter("name", FilterOp.CONTAINS, "50%_off"),),
            limit=500,
        ),
        CRM,
        row_limit=25,
    )
    assert sql.endswith("LIMIT 25")
    assert "'%50\\%\\_off%'" in sql


async def test_schema_qualified_catalogs_compile_with_their_schema(
    deterministic: DeterministicProvider,
) -> None:
    qualified = dataclasses.replace(
        CRM,
        tables=tuple(
            dataclasses.replace(
                table,
                name=f"crm.{table.name}",
                columns=tuple(
                    dataclasses.replace(c, references=f"crm.{c.references}") if c.references else c
                    for c in table.columns
                ),
            )
            for table in CRM.tables
        ),
    )
    result = await deterministic.generate_sql(
        GenerateSqlRequest("average deal amount by industry", qualified)
    )
    sql = result.output.sql
    assert sql is not None
    assert 'FROM "crm"."opportunities" JOIN "crm"."companies"' in sql
    assert '"crm"."companies"."industry"' in sql
    assert result.output.tables_used == ("crm.opportunities", "crm.companies")
