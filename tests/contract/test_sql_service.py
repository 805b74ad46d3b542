"""SqlService through its generated stubs on a real server and a real warehouse: every
RPC, every documented error."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import psycopg
import pytest
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from services.common import GrpcServer, embedded_server_url
from services.common.llm import GeminiProvider, LlmSettings
from services.sql import (
    SqlSettings,
    TargetConfig,
    demo_glossary,
    ensure_warehouse,
    grant_read_only,
)
from services.sql._server import SqlDeps, build_deps, create_server, ready
from services.sql.ask._llm_adapter import LlmSqlGenerator
from services.sql.definitions._glossary import GlossaryEntry
from services.sql.demo._warehouse import SCHEMA, database_url, ensure_reader_role
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings
from tests.fakes.gemini import FakeGemini, Reply
from tests.unit.sql.corpus import HOSTILE

ASK = "tandem.v1.SqlService/AskQuestion"
VALIDATE = "tandem.v1.SqlService/ValidateSql"
EXECUTE = "tandem.v1.SqlService/ExecuteSql"
INTENT = "tandem.v1.SqlService/RunIntent"
DESCRIBE = "tandem.v1.SqlService/DescribeSchema"

pytestmark = pytest.mark.integration

# A statement the gate passes that runs for minutes: a cross join of two series,
# each within the gate's bound, counted.
SLOW_SQL = "SELECT count(*) FROM generate_series(1, 1000000) AS a, generate_series(1, 1000000) AS b"


@dataclass(frozen=True)
class Databases:
    admin_url: str
    warehouse_admin_url: str
    warehouse_reader_url: str
    finance_reader_url: str
    finance_admin_url: str


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Databases:
    """A private embedded server with the demo warehouse and a small second database."""
    admin = embedded_server_url(tmp_path_factory.mktemp("sql-contract"))

    async def setup() -> Databases:
        warehouse = await ensure_warehouse(admin)
        async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
            await conn.execute("DROP DATABASE IF EXISTS finance")
            await conn.execute("CREATE DATABASE finance")
            await ensure_reader_role(conn, warehouse.reader_role)
        finance_admin = database_url(admin, "finance")
        async with await psycopg.AsyncConnection.connect(finance_admin, autocommit=True) as conn:
            await conn.execute("CREATE TABLE invoices (invoice_id int PRIMARY KEY, total numeric)")
            await conn.execute("CREATE TABLE vault (secret_id int PRIMARY KEY)")
            await conn.execute("INSERT INTO invoices VALUES (1, 5), (2, 7)")
            await grant_read_only(conn, "finance", warehouse.reader_role, schemas=["public"])
        return Databases(
            admin_url=admin,
            warehouse_admin_url=database_url(admin, warehouse.database),
            warehouse_reader_url=warehouse.reader_url,
            finance_reader_url=psycopg.conninfo.make_conninfo(
                warehouse.reader_url, dbname="finance"
            ),
            finance_admin_url=finance_admin,
        )

    return asyncio.run(setup())


@dataclass
class Running:
    server: GrpcServer
    stub: pb_grpc.SqlServiceAsyncStub
    deps: SqlDeps


SETTINGS = SqlSettings(
    max_sql_chars=20_000,
    max_question_chars=2000,
    max_rows=1000,
    statement_timeout_s=5.0,
    max_statement_timeout_s=30.0,
    reference_date=None,
)


def configs(dbs: Databases) -> list[TargetConfig]:
    return [
        TargetConfig(
            "warehouse",
            dbs.warehouse_reader_url,
            tenants=frozenset({"*"}),
            glossary=demo_glossary(),
        ),
        TargetConfig("finance", dbs.finance_reader_url, tenants=frozenset({"acme"})),
        TargetConfig(
            "offline", "host=/nonexistent/socket dbname=x user=x", tenants=frozenset({"*"})
        ),
    ]


async def _start(dbs, telemetry_sink, channel_to, generator=None, targets=None) -> Running:
    from dataclasses import replace
    from datetime import date

    settings = replace(SETTINGS, reference_date=date(2025, 6, 30))
    deps = await build_deps(
        settings,
        telemetry_sink("sql").telemetry,
        generator=generator,
        configs=targets or configs(dbs),
    )
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    await ready(server, servicer, deps)
    # The service is SERVING before its catalogs load (in the background); a question in
    # the meantime is UNAVAILABLE CATALOG_LOADING. The contracts here are about the loaded
    # service: on a busy machine a 0.3 s deadline otherwise meets the load, not the RPC.
    for name in deps.targets.names:
        with contextlib.suppress(Exception):  # a target made unreachable on purpose
            await asyncio.wait_for(deps.targets.get(name).get_catalog(), 30)
    channel: grpc.aio.Channel = channel_to(server.address)
    return Running(server, pb_grpc.SqlServiceStub(channel), deps)


@pytest.fixture
async def running(databases, telemetry_sink, channel_to) -> AsyncIterator[Running]:
    run = await _start(databases, telemetry_sink, channel_to)
    yield run
    await run.server.stop(0)
    await run.deps.close()


async def _error(call) -> tuple[grpc.StatusCode, list[str], dict[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    status = await rpc_status.aio.from_call(call)
    bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
    for detail in status.details if status else []:
        if detail.Is(bad.DESCRIPTOR):
            detail.Unpack(bad)
        elif detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
    fields = [v.field for v in bad.field_violations]
    return err.value.code(), fields, {"reason": info.reason, **dict(info.metadata)}


def _requests(tenant: str = "acme", database: str = "") -> dict[str, tuple[str, object]]:
    return {
        ASK: ("AskQuestion", pb.AskQuestionRequest(
            tenant_id=tenant, database=database, question="How many companies are there?")),
        VALIDATE: ("ValidateSql", pb.ValidateSqlRequest(
            tenant_id=tenant, database=database, sql="SELECT 1")),
        EXECUTE: ("ExecuteSql", pb.ExecuteSqlRequest(
            tenant_id=tenant, database=database, sql="SELECT 1")),
        INTENT: ("RunIntent", pb.RunIntentRequest(
            tenant_id=tenant, database=database,
            intent=pb.SqlIntent(kind=pb.INTENT_KIND_COUNT, table="companies"))),
        DESCRIBE: ("DescribeSchema", pb.DescribeSchemaRequest(tenant_id=tenant, database=database)),
    }  # fmt: skip


# --- errors shared by every RPC --------------------------------------------------------


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(VALIDATE)
@pytest.mark.rpc(EXECUTE)
@pytest.mark.rpc(INTENT)
@pytest.mark.rpc(DESCRIBE)
async def test_shared_errors_for_every_rpc(running):
    for tenant in ("", "Bad Tenant!"):
        for method, request in _requests(tenant=tenant).values():
            code, fields, _ = await _error(getattr(running.stub, method)(request, timeout=10))
            assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["tenant_id"]), method
    for method, request in _requests(database="nope").values():
        code, fields, info = await _error(getattr(running.stub, method)(request, timeout=10))
        assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["database"]), method
        assert info == {"reason": "UNKNOWN_DATABASE", "database": "nope"}
    for method, request in _requests(tenant="initech", database="finance").values():
        code, _, info = await _error(getattr(running.stub, method)(request, timeout=10))
        assert code == grpc.StatusCode.PERMISSION_DENIED, method
        assert info == {"reason": "DATABASE_NOT_ALLOWED", "database": "finance"}
    for method, request in _requests(database="offline").values():
        code, _, info = await _error(getattr(running.stub, method)(request, timeout=10))
        assert (code, info["reason"]) == (grpc.StatusCode.UNAVAILABLE, "CATALOG_UNAVAILABLE")


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(EXECUTE)
async def test_not_ready_is_unavailable_and_health_flips_only_when_ready(
    databases, telemetry_sink, channel_to
):
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    try:
        channel = channel_to(server.address)
        stub, health = pb_grpc.SqlServiceStub(channel), health_pb2_grpc.HealthStub(channel)
        check = health_pb2.HealthCheckRequest(service="tandem.v1.SqlService")
        reply = await health.Check(check, timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
        code, _, _ = await _error(
            stub.ExecuteSql(pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT 1"), timeout=5)
        )
        assert code == grpc.StatusCode.UNAVAILABLE
        deps = await build_deps(SETTINGS, telemetry_sink().telemetry, configs=configs(databases))
        await ready(server, servicer, deps)
        reply = await health.Check(check, timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        await deps.close()
    finally:
        await server.stop(0)


# --- AskQuestion -------------------------------------------------------------------------


@pytest.mark.rpc(ASK)
async def test_ask_answers_with_attempts_intent_usage_and_timings(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question="How many deals did we win last quarter?"),
        timeout=10,
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    assert reply.result.row_count == 1 and reply.result.rows[0].values[0].int_value > 0
    assert reply.result.tables_used == ["public.opportunities"]
    assert reply.result.explanation and reply.interpretation
    assert "2025-01-01" in reply.result.sql
    # the offline generator composes SQL from the schema linker: no structured intent
    assert not reply.HasField("intent")
    assert [(a.attempt, a.outcome) for a in reply.attempts] == [
        (1, pb.SQL_ATTEMPT_OUTCOME_SUCCEEDED)
    ]
    assert reply.repairs == 0 and not reply.degraded
    assert {e.tier for e in reply.usage.entries} == {cpb.MODEL_TIER_DETERMINISTIC}
    assert reply.usage.calls >= 3 and reply.usage.input_tokens == 0
    assert {t.stage for t in reply.timings} == {
        "understand",
        "generate",
        "gate",
        "execute",
        "verify",
        "total",
    }
    assert len(reply.result.fingerprint) == 64
    # every check the answer went through, each passed
    assert [(c.name, c.passed, c.reason) for c in reply.checks] == [
        ("values", True, ""),
        ("ties", True, ""),
        ("rows", True, ""),
        ("joins", True, ""),
    ]


@pytest.mark.rpc(ASK)
async def test_ask_unanswerable_is_ok_without_a_result(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question="What will the weather be tomorrow?"),
        timeout=10,
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert not reply.HasField("result") and reply.message and not reply.attempts


# Requests to change data and questions about changes on the demo warehouse.
WRITE_REQUESTS = [
    "Delete all lost deals",
    "Please remove the company Cobalt Academy",
    "Update the amount of every open deal to 0",
    "DROP TABLE companies",
    "DELETE FROM opportunities WHERE stage = 'Closed Lost'",
]
ABOUT_CHANGES = [
    "How many deals were lost last quarter?",
    "How many companies were created in 2024?",
]


@pytest.mark.rpc(ASK)
@pytest.mark.parametrize("question", WRITE_REQUESTS)
async def test_ask_a_request_to_change_data_gets_the_read_only_answer(running, question):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=question), timeout=10
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert reply.refusal_reason == "SQL_READ_ONLY"
    assert reply.message.startswith("Tandem never changes your data")
    assert not reply.HasField("result") and not reply.attempts


@pytest.mark.rpc(ASK)
@pytest.mark.parametrize("question", ABOUT_CHANGES)
async def test_ask_a_question_about_changes_is_read_as_a_question(running, question):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=question), timeout=10
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED and not reply.refusal_reason


@pytest.mark.rpc(ASK)
@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Wie viele Unternehmen gibt es?", "German (de)"),
        ("Combien d'entreprises y a-t-il ?", "French (fr)"),
        ("会社は何社ありますか", "Japanese (ja)"),
    ],
)
async def test_ask_in_another_language_is_refused_offline_naming_it(running, question, named):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=question), timeout=10
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert reply.refusal_reason == "LANGUAGE_UNSUPPORTED"
    assert named in reply.message and "reads English" in reply.message


@pytest.mark.rpc(ASK)
async def test_ask_in_another_language_goes_to_the_model_when_one_is_configured(
    databases, telemetry_sink, channel_to
):
    with FakeGemini() as fake:
        fake.script("understand_sql", Reply.json({"restatement": "Count the companies."}))
        fake.script("identify_tables", Reply.json({"tables": ["companies"]}))
        fake.script("generate_sql", Reply.json({"sql": "SELECT count(*) AS n FROM companies"}))
        generator = _gemini_generator(fake)
        run = await _start(databases, telemetry_sink, channel_to, generator=generator)
        try:
            reply = await run.stub.AskQuestion(
                pb.AskQuestionRequest(tenant_id="acme", question="Wie viele Unternehmen gibt es?"),
                timeout=10,
            )
        finally:
            await run.server.stop(0)
            await run.deps.close()
            await generator.aclose()
    assert [r.role for r in fake.requests] == ["understand_sql", "identify_tables", "generate_sql"]
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED and not reply.refusal_reason
    assert reply.result.rows[0].values[0].int_value > 0 and not reply.degraded


@pytest.mark.rpc(ASK)
async def test_ask_row_cap(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question="List the companies", max_rows=3),
        timeout=10,
    )
    assert reply.result.row_count == 3 and reply.result.truncated
    assert reply.result.truncation_reason == pb.TRUNCATION_REASON_ROW_CAP


@pytest.mark.rpc(ASK)
@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (pb.AskQuestionRequest(tenant_id="acme", question=""), "question"),
        (pb.AskQuestionRequest(tenant_id="acme", question="   "), "question"),
        (pb.AskQuestionRequest(tenant_id="acme", question="x" * 2001), "question"),
        (pb.AskQuestionRequest(tenant_id="acme", question="q", max_rows=-1), "max_rows"),
        (pb.AskQuestionRequest(tenant_id="acme", question="q", max_rows=1001), "max_rows"),
        (
            pb.AskQuestionRequest(tenant_id="acme", question="q", instructions="x" * 4001),
            "instructions",
        ),
        (pb.AskQuestionRequest(tenant_id="acme", question="How many\x00 deals?"), "question"),
        (
            pb.AskQuestionRequest(tenant_id="acme", question="q", instructions="a\x00b"),
            "instructions",
        ),
    ],
    ids=[
        "empty",
        "blank",
        "too-long",
        "rows-negative",
        "rows-over",
        "instructions-long",
        "question-nul",
        "instructions-nul",
    ],
)
async def test_ask_invalid_arguments(running, request_, field):
    code, fields, _ = await _error(running.stub.AskQuestion(request_, timeout=10))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


# --- AskQuestion: follow-ups on an earlier statement -------------------------------------

TOP_COMPANIES = (
    "SELECT c.company_id, c.name, c.employee_count FROM companies AS c "
    "ORDER BY c.employee_count DESC, c.company_id LIMIT 5"
)
BY_INDUSTRY = "SELECT c.industry, COUNT(*) AS n FROM companies AS c GROUP BY c.industry"


def _prior(sql: str, relation: int, **fields: object) -> pb.PriorStatement:
    return pb.PriorStatement(sql=sql, relation=relation, **fields)  # type: ignore[arg-type]


async def _rows(stub: pb_grpc.SqlServiceAsyncStub, sql: str) -> list[tuple[object, ...]]:
    reply = await stub.ExecuteSql(pb.ExecuteSqlRequest(tenant_id="acme", sql=sql), timeout=10)
    return [tuple(_value(v) for v in row.values) for row in reply.result.rows]


def _value(value: cpb.SqlValue) -> object:
    return getattr(value, value.WhichOneof("kind") or "null_value")


def _result_rows(result: pb.SqlResult) -> list[tuple[object, ...]]:
    return [tuple(_value(v) for v in row.values) for row in result.rows]


@pytest.mark.rpc(ASK)
async def test_ask_row_limit_is_the_earlier_statement_with_another_row_count(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="only the top 2",
            prior=_prior(TOP_COMPANIES, pb.PRIOR_RELATION_ROW_LIMIT, limit=2),
        ),
        timeout=10,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    assert _result_rows(reply.result) == (await _rows(running.stub, TOP_COMPANIES))[:2]
    # A breakdown without an order is ranked by its count.
    ranked = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="just the top one",
            prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_ROW_LIMIT, limit=1),
        ),
        timeout=10,
    )  # fmt: skip
    counts = [int(str(n)) for _, n in await _rows(running.stub, BY_INDUSTRY)]
    assert _result_rows(ranked.result)[0][1] == max(counts)


@pytest.mark.rpc(ASK)
async def test_ask_about_the_earlier_rows_scopes_by_a_sub_query(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="What are their industries?",
            prior=_prior(TOP_COMPANIES, pb.PRIOR_RELATION_RESULT_SET),
        ),
        timeout=10,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    # the earlier rows' key and names, the industry asked for, and the column that chose
    # those rows (the ranking's first key), as the question spelled out shows it
    gold = await _rows(
        running.stub,
        "SELECT c.company_id, c.name, c.industry, c.employee_count FROM companies AS c "
        "WHERE c.company_id IN "
        f"(SELECT company_id FROM ({TOP_COMPANIES}) AS t)",
    )
    assert sorted(_result_rows(reply.result)) == sorted(gold)
    assert "IN (SELECT" in reply.result.sql
    assert not any(str(row[1]) in reply.result.sql for row in gold)  # no pasted names


@pytest.mark.rpc(ASK)
async def test_ask_which_of_these_past_a_bare_number_bounds_the_earlier_measure(running):
    counts = sorted({int(str(n)) for _, n in await _rows(running.stub, BY_INDUSTRY)})
    assert len(counts) > 1  # a bound some groups pass and some do not
    bound = counts[0]
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question=f"which of these have more than {bound}?",
            prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_RESULT_SET),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    gold = await _rows(
        running.stub,
        f"SELECT c.industry FROM companies AS c GROUP BY c.industry HAVING COUNT(*) > {bound}",
    )
    assert gold and sorted(_result_rows(reply.result)) == sorted(gold)
    assert [c.name for c in reply.result.columns] == ["industry"]


@pytest.mark.rpc(ASK)
async def test_ask_regroup_and_value_swap_edit_the_earlier_statement(running):
    regrouped = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="How many companies are there by region?",
            prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_REGROUP, dimension="region"),
        ),
        timeout=10,
    )  # fmt: skip
    assert sorted(_result_rows(regrouped.result)) == sorted(
        await _rows(
            running.stub,
            # a region is identified by its key beside its name and code, as the linker
            # shows a row grouped by ("How many companies are there in each region?")
            "SELECT r.region_id, r.name, r.code, COUNT(*) FROM companies c JOIN regions r "
            "ON r.region_id = c.region_id GROUP BY r.region_id, r.name, r.code",
        )
    )
    industries = [str(i) for i, _ in await _rows(running.stub, BY_INDUSTRY)]
    one = f"SELECT COUNT(*) FROM companies AS c WHERE c.industry = '{industries[0]}'"
    swapped = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question=f"and {industries[1]}?",
            prior=_prior(one, pb.PRIOR_RELATION_VALUE_SWAP, value=industries[1].upper()),
        ),
        timeout=10,
    )  # fmt: skip
    assert _result_rows(swapped.result) == await _rows(
        running.stub, one.replace(industries[0], industries[1])
    )


@pytest.mark.rpc(ASK)
async def test_ask_value_swap_reaches_the_value_a_reference_said_again(running):
    """A statement about earlier rows keeps them by a sub-query of the earlier statement
    and says its condition again: "switch to <industry>" replaces the one value in both
    places, as the earlier statement asked anew would."""
    industries = [str(i) for i, _ in await _rows(running.stub, BY_INDUSTRY)]
    kept = (
        "SELECT c.name, c.employee_count FROM companies AS c WHERE c.company_id IN "
        "(SELECT earlier.company_id FROM (SELECT e.company_id FROM companies AS e "
        f"WHERE e.industry = '{industries[0]}') AS earlier) AND c.industry = '{industries[0]}'"
    )
    swapped = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question=f"switch to {industries[1]}",
            prior=_prior(kept, pb.PRIOR_RELATION_VALUE_SWAP, value=industries[1].upper()),
        ),
        timeout=10,
    )  # fmt: skip
    assert swapped.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, swapped.message
    gold = await _rows(running.stub, kept.replace(industries[0], industries[1]))
    assert gold and sorted(_result_rows(swapped.result)) == sorted(gold)


@pytest.mark.rpc(ASK)
async def test_ask_follow_up_that_cannot_build_on_the_statement_is_refused(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="only the top 2",
            prior=_prior("SELECT name FROM companies", pb.PRIOR_RELATION_ROW_LIMIT, limit=2),
        ),
        timeout=10,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert "not a ranking" in reply.message and not reply.HasField("result")


@pytest.mark.rpc(ASK)
async def test_ask_about_the_earlier_rows_the_linker_placed_no_word_of_reads_their_keys(running):
    # "what do they add up to" after a count: no word of it names a column, so the linker
    # places none; the counted rows' one amount, summed over the same rows (s65, fol2)
    industries = [str(i) for i, _ in await _rows(running.stub, BY_INDUSTRY)]
    counted = f"SELECT COUNT(*) AS n FROM companies AS c WHERE c.industry = '{industries[0]}'"
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="what do they add up to",
            prior=_prior(counted, pb.PRIOR_RELATION_RESULT_SET),
        ),
        timeout=10,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    gold = await _rows(
        running.stub,
        f"SELECT SUM(c.annual_revenue) FROM companies AS c WHERE c.industry = '{industries[0]}'",
    )
    assert _result_rows(reply.result) == gold


PER_INDUSTRY_IN_2024 = (
    "SELECT c.industry, COUNT(*) AS n FROM companies AS c WHERE c.created_at >= '2024-01-01' "
    "AND c.created_at < '2025-01-01' GROUP BY c.industry"
)


@pytest.mark.rpc(ASK)
async def test_ask_filter_adds_the_condition_its_words_link_to(running):
    countries = [str(c) for (c,) in await _rows(
        running.stub, "SELECT DISTINCT country FROM companies ORDER BY 1"
    )]  # fmt: skip
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="How many companies are there by industry in it?",
            prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_FILTER, condition=f"in {countries[0]}"),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    gold = await _rows(
        running.stub,
        f"SELECT industry, COUNT(*) FROM companies WHERE country = '{countries[0]}' "
        "GROUP BY industry",
    )
    assert sorted(_result_rows(reply.result)) == sorted(gold)
    # the earlier statement's grouping and measure stay; the condition is the new part
    assert "GROUP BY c.industry" in reply.result.sql
    excluded = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="How many companies are there by industry outside it?",
            prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_FILTER, condition=countries[0],
                         exclude=True),
        ),
        timeout=30,
    )  # fmt: skip
    assert excluded.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, excluded.message
    assert sorted(_result_rows(excluded.result)) == sorted(
        await _rows(
            running.stub,
            f"SELECT industry, COUNT(*) FROM companies WHERE country <> '{countries[0]}' "
            "GROUP BY industry",
        )
    )


@pytest.mark.rpc(ASK)
async def test_ask_filter_with_remove_drops_the_condition_its_words_name(running):
    """ "drop the date filter" (issue 45, s62): the earlier statement's conditions on the
    column the words name go, the rest stays; words naming no condition are refused
    naming the statement's conditions, never answered from a guess."""
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="How many companies are there by industry?",
            prior=_prior(PER_INDUSTRY_IN_2024, pb.PRIOR_RELATION_FILTER, condition="date",
                         remove=True),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    gold = await _rows(running.stub, "SELECT industry, COUNT(*) FROM companies GROUP BY industry")
    assert sorted(_result_rows(reply.result)) == sorted(gold)
    refused = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="How many companies are there by industry?",
            prior=_prior(PER_INDUSTRY_IN_2024, pb.PRIOR_RELATION_FILTER, condition="revenue",
                         remove=True),
        ),
        timeout=30,
    )  # fmt: skip
    assert refused.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert "created_at" in refused.message and not refused.HasField("result")


@pytest.mark.rpc(ASK)
@pytest.mark.parametrize(
    "question",
    ["Delete all cancelled orders", "drop the orders table", "remove the cancelled orders"],
)
async def test_ask_a_request_to_change_data_after_an_answer_gets_the_read_only_answer(
    running, question
):
    """A follow-up that asks to change data is declined as it is alone (issue 45, s62):
    removing a condition is only ever a field of the prior statement, never its words."""
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question=question,
            prior=_prior(PER_INDUSTRY_IN_2024, pb.PRIOR_RELATION_FILTER, condition="date",
                         remove=True),
        ),
        timeout=10,
    )  # fmt: skip
    assert reply.refusal_reason == "SQL_READ_ONLY" and not reply.HasField("result")


# Inhabitants' nouns of places the demo's companies.country stores (test data): nouns
# whose spelling is not near enough the place's for the linker alone to place them.
_INHABITANTS = {"Canada": "Canadians", "Brazil": "Brazilians", "Mexico": "Mexicans"}


@pytest.mark.rpc(ASK)
async def test_ask_filter_reads_an_inhabitants_noun_as_its_place(running):
    """ "just the Canadians": read as the place the stored value names (issue 45, s60),
    by the real linker over the demo data; a noun no stored place forms is refused
    naming it."""
    stored = {str(c) for (c,) in await _rows(
        running.stub, "SELECT DISTINCT country FROM companies"
    )}  # fmt: skip
    places = sorted(stored & set(_INHABITANTS))
    assert places
    for place in places:
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id="acme", question="How many companies are there by industry there?",
                prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_FILTER,
                             condition=_INHABITANTS[place]),
            ),
            timeout=30,
        )  # fmt: skip
        assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
        gold = await _rows(
            running.stub,
            f"SELECT industry, COUNT(*) FROM companies WHERE country = '{place}' GROUP BY industry",
        )
        assert sorted(_result_rows(reply.result)) == sorted(gold)
    refused = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="How many companies are there by industry there?",
            prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_FILTER, condition="Martians"),
        ),
        timeout=30,
    )  # fmt: skip
    assert refused.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert "Martians" in refused.message and not refused.HasField("result")


@pytest.mark.rpc(ASK)
async def test_ask_filter_compares_what_the_rows_are_worth_on_the_value_they_show(running):
    """ "only the ones worth more than N" after a listing that shows one value per row:
    that value compared (issue 45, s60)."""
    listed = "SELECT c.name, c.annual_revenue FROM companies AS c"
    (middle,) = (await _rows(
        running.stub, "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY annual_revenue) "
        "FROM companies"
    ))[0]  # fmt: skip
    bound = int(float(str(middle)))
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="Which of them are worth more?",
            prior=_prior(listed, pb.PRIOR_RELATION_FILTER, condition=f"worth more than {bound}"),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    gold = await _rows(
        running.stub,
        f"SELECT name, annual_revenue FROM companies WHERE annual_revenue > {bound}",
    )
    assert gold and sorted(_result_rows(reply.result)) == sorted(gold)


@pytest.mark.rpc(ASK)
async def test_ask_time_shift_moves_the_earlier_window(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="and the year before?",
            prior=_prior(PER_INDUSTRY_IN_2024, pb.PRIOR_RELATION_TIME_SHIFT,
                         period="the year before"),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert sorted(_result_rows(reply.result)) == sorted(
        await _rows(running.stub, PER_INDUSTRY_IN_2024.replace("2025", "2024", 1)
                    .replace("'2024-01-01'", "'2023-01-01'", 1))
    )  # fmt: skip
    assert "'2023-01-01'" in reply.result.sql and "'2024-01-01'" in reply.result.sql


@pytest.mark.rpc(ASK)
async def test_ask_row_limit_keeps_the_columns_the_earlier_answer_showed(running):
    # The earlier answer named its deals; the rewrite "top 2 … by …", asked alone, shows
    # the key beside the name. A row limit is the earlier answer cut short: the key is no
    # more than the linker's way with that phrasing, so the earlier columns stay.
    named = (
        "SELECT o.name, o.amount FROM opportunities AS o "
        "ORDER BY o.amount DESC NULLS LAST, o.name LIMIT 5"
    )
    spelled = "What are the top 2 opportunities by amount?"
    alone = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=spelled), timeout=30
    )
    assert alone.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, alone.message
    assert "opportunity_id" in [c.name for c in alone.result.columns]  # what it adds
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question=spelled,
            prior=_prior(named, pb.PRIOR_RELATION_ROW_LIMIT, limit=2),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert [c.name for c in reply.result.columns] == ["name", "amount"]
    assert _result_rows(reply.result) == (await _rows(running.stub, named))[:2]


@pytest.mark.rpc(ASK)
async def test_ask_time_shift_keeps_the_columns_the_earlier_answer_showed(running):
    # The earlier answer named the companies created in one year; a time shift is the
    # earlier answer over another period, so the earlier columns stay (issue 45, s59).
    # Asked alone, the rewrite shows the same columns: a listing's row number is shown by
    # the label rule, whatever wording named the rows (s61, ``linker/_unasked``).
    named = (
        "SELECT c.name FROM companies AS c "
        "WHERE c.created_at >= '2024-01-01' AND c.created_at < '2025-01-01'"
    )
    spelled = "Which companies were created in 2023?"
    alone = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=spelled), timeout=30
    )
    assert alone.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, alone.message
    assert [c.name for c in alone.result.columns] == ["name"]
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question=spelled,
            prior=_prior(named, pb.PRIOR_RELATION_TIME_SHIFT, period="2023"),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert [c.name for c in reply.result.columns] == ["name"]
    assert sorted(_result_rows(reply.result)) == sorted(
        await _rows(
            running.stub,
            named.replace("2025", "2024").replace("'2024-01-01' AND", "'2023-01-01' AND"),
        )
    )


@pytest.mark.rpc(ASK)
async def test_ask_listing_by_a_column_shows_it_and_orders_by_it(running):
    # "by industry" on a listing counts nothing: the companies are listed with their
    # industry, one industry's together (issue 45, s62). s61 refused it; before, the
    # words were dropped. Counted, "by industry" stays a grouping.
    listed = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="Show the companies in Germany by industry"
        ),
        timeout=30,
    )
    assert listed.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, listed.message
    columns = [c.name for c in listed.result.columns]
    assert "name" in columns and "industry" in columns
    at = columns.index("industry")
    industries = [row[at] for row in _result_rows(listed.result)]
    runs = [industry for industry, _ in itertools.groupby(industries)]
    assert len(runs) == len(set(runs)) > 1  # each industry's companies together
    expected = await _rows(running.stub, "SELECT count(*) FROM companies WHERE country = 'Germany'")
    assert len(industries) == expected[0][0]
    counted = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="How many companies are in Germany by industry?"
        ),
        timeout=30,
    )
    assert counted.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, counted.message
    assert len(_result_rows(counted.result)) == len(set(industries))


@pytest.mark.rpc(ASK)
async def test_ask_count_by_a_table_noun_groups_by_its_rows(running):
    # "by region" names a table, not a column: main answered one count over companies
    # joined to regions, the grouping dropped (a confident wrong, issue 45, s62). It is
    # read as "in each region" is: one count per region, its key, name and code shown.
    gold = await _rows(
        running.stub,
        "SELECT r.region_id, r.name, r.code, COUNT(*) FROM companies c JOIN regions r "
        "ON r.region_id = c.region_id GROUP BY r.region_id, r.name, r.code",
    )
    for question in (
        "How many companies are there by region?",
        "How many companies are there in each region?",
    ):
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=question), timeout=30
        )
        assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
        assert len(gold) > 1
        assert sorted(map(str, _result_rows(reply.result))) == sorted(map(str, gold))


@pytest.mark.rpc(ASK)
async def test_ask_follow_up_answers_as_its_spelled_out_question_when_it_computes_the_same(
    running,
):
    # The earlier answer showed ids; the follow-up spelled out, asked alone, reads the same
    # query and shows names: the conversation answers as the question asked alone would.
    ids = "SELECT c.company_id FROM companies AS c WHERE c.country = 'France'"
    spelled = "Which companies in France are in Healthcare?"
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question=spelled,
            prior=_prior(ids, pb.PRIOR_RELATION_FILTER, condition="in Healthcare"),
        ),
        timeout=30,
    )  # fmt: skip
    alone = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=spelled), timeout=30
    )
    assert reply.outcome == alone.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert [c.name for c in reply.result.columns] == [c.name for c in alone.result.columns]
    assert [c.name for c in reply.result.columns] != ["company_id"]
    assert sorted(_result_rows(reply.result)) == sorted(_result_rows(alone.result))


@pytest.mark.rpc(ASK)
async def test_ask_filter_no_column_fits_is_refused_with_the_reason(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme", question="only the purple ones",
            prior=_prior(BY_INDUSTRY, pb.PRIOR_RELATION_FILTER, condition="purple zebras"),
        ),
        timeout=30,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert "purple zebras" in reply.message and not reply.HasField("result")


@pytest.mark.rpc(ASK)
@pytest.mark.parametrize(
    ("prior", "field"),
    [
        (pb.PriorStatement(sql=TOP_COMPANIES), "prior.relation"),
        (_prior("", pb.PRIOR_RELATION_RESULT_SET), "prior.sql"),
        (_prior("x" * 20_001, pb.PRIOR_RELATION_RESULT_SET), "prior.sql"),
        (_prior("SELECT 1\x00", pb.PRIOR_RELATION_RESULT_SET), "prior.sql"),
        (_prior("DELETE FROM companies", pb.PRIOR_RELATION_RESULT_SET), "prior.sql"),
        (_prior(TOP_COMPANIES, pb.PRIOR_RELATION_ROW_LIMIT), "prior.limit"),
        (_prior(TOP_COMPANIES, pb.PRIOR_RELATION_ROW_LIMIT, limit=1001), "prior.limit"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_REGROUP), "prior.dimension"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_VALUE_SWAP, value=" "), "prior.value"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_VALUE_SWAP, value="x" * 201), "prior.value"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_FILTER), "prior.condition"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_FILTER, condition="x" * 201), "prior.condition"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_TIME_SHIFT), "prior.period"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_TIME_SHIFT, period="in\x00 2023"), "prior.period"),
        # `remove` edits a FILTER's conditions; with any other relation it is refused,
        # never silently dropped (each prior otherwise valid)
        (_prior(TOP_COMPANIES, pb.PRIOR_RELATION_RESULT_SET, remove=True), "prior.remove"),
        (_prior(TOP_COMPANIES, pb.PRIOR_RELATION_ROW_LIMIT, limit=2, remove=True), "prior.remove"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_REGROUP, dimension="region", remove=True),
         "prior.remove"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_VALUE_SWAP, value="Retail", remove=True),
         "prior.remove"),
        (_prior(BY_INDUSTRY, pb.PRIOR_RELATION_TIME_SHIFT, period="2023", remove=True),
         "prior.remove"),
    ],
    ids=["no-relation", "no-sql", "sql-long", "sql-nul", "sql-refused", "no-limit",
         "limit-over", "no-dimension", "blank-value", "value-long", "no-condition",
         "condition-long", "no-period", "period-nul", "remove-result-set", "remove-row-limit",
         "remove-regroup", "remove-value-swap", "remove-time-shift"],
)  # fmt: skip
async def test_ask_follow_up_invalid_arguments(running, prior, field):
    request = pb.AskQuestionRequest(tenant_id="acme", question="and?", prior=prior)
    code, fields, _ = await _error(running.stub.AskQuestion(request, timeout=10))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


DEFINITIONS = (GlossaryEntry("big", expression="employee_count > 1000"),)
BIG = "How many big companies are there?"
# Instructions at the cap: one definition the question does not use, then filler.
RULES = ("churn means no order in 90 days. " + "y" * 4000)[:4000]


def _with_definitions(dbs: Databases) -> list[TargetConfig]:
    return [
        TargetConfig(
            "warehouse", dbs.warehouse_reader_url, tenants=frozenset({"*"}), glossary=DEFINITIONS
        )
    ]


@pytest.mark.rpc(ASK)
async def test_ask_reports_the_definitions_it_applied_and_ignored(
    databases, telemetry_sink, channel_to
):
    run = await _start(databases, telemetry_sink, channel_to, targets=_with_definitions(databases))
    try:
        reply = await run.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=BIG, instructions=RULES),
            timeout=10,
        )
    finally:
        await run.server.stop(0)
        await run.deps.close()
    assert len(RULES) == 4000
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    assert "employee_count > 1000" in reply.result.sql
    assert list(reply.definitions_applied) == ["big"]
    assert list(reply.definitions_ignored) == ["churn"]


@pytest.mark.rpc(ASK)
async def test_ask_gives_the_model_the_glossary_and_the_instructions(
    databases, telemetry_sink, channel_to
):
    with FakeGemini() as fake:
        fake.script("understand_sql", Reply.json({"restatement": "Count big companies."}))
        fake.script("identify_tables", Reply.json({"tables": ["companies"]}))
        fake.script(
            "generate_sql",
            Reply.json({"sql": "SELECT count(*) AS n FROM companies WHERE employee_count > 1000"}),
        )
        generator = _gemini_generator(fake)
        run = await _start(
            databases, telemetry_sink, channel_to, generator, _with_definitions(databases)
        )
        try:
            reply = await run.stub.AskQuestion(
                pb.AskQuestionRequest(tenant_id="acme", question=BIG, instructions=RULES),
                timeout=10,
            )
        finally:
            await run.server.stop(0)
            await run.deps.close()
            await generator.aclose()
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED and not reply.degraded
    assert [r.role for r in fake.requests] == ["understand_sql", "identify_tables", "generate_sql"]
    for request in fake.requests:
        prompt = request.system_text + "".join(text for _, text in request.turns)
        assert DEFINITIONS[0].text() in prompt, request.role
        assert RULES in prompt, request.role  # whole, at the cap


def _gemini_generator(fake: FakeGemini, **settings: object) -> LlmSqlGenerator:
    """The real Gemini-backed generator, pointed at the scripted local endpoint."""
    values: dict[str, object] = {
        "api_key": "test-key",
        "base_url": fake.base_url,
        "strong_model": "gemini-2.5-pro",
        "fast_model": "gemini-2.5-flash",
        "timeout_s": 30.0,
        "max_retries": 0,
        "backoff_initial_s": 0.01,
    }
    values.update(settings)
    return LlmSqlGenerator(GeminiProvider(LlmSettings(**values)))  # type: ignore[arg-type]


@pytest.mark.rpc(ASK)
async def test_ask_degrades_to_the_deterministic_provider(databases, telemetry_sink, channel_to):
    with FakeGemini() as fake:
        # The model endpoint answers every role with 503: the real adapter gives up.
        fake.script("*", *[Reply.error(503) for _ in range(8)])
        generator = _gemini_generator(fake)
        run = await _start(databases, telemetry_sink, channel_to, generator=generator)
        try:
            reply = await run.stub.AskQuestion(
                pb.AskQuestionRequest(tenant_id="acme", question="How many companies are there?"),
                timeout=10,
            )
            assert fake.requests_for("understand_sql")
            assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED and reply.degraded
            assert [(d.reason, d.component) for d in reply.degradations] == [
                (cpb.DEGRADATION_REASON_LLM_UNAVAILABLE, "llm")
            ]
        finally:
            await run.server.stop(0)
            await run.deps.close()
            await generator.aclose()


@pytest.mark.rpc(ASK)
async def test_ask_deadline_before_any_attempt(databases, telemetry_sink, channel_to):
    with FakeGemini() as fake:
        # The model endpoint stalls (until the fake stops): the request's deadline ends it.
        fake.script("*", Reply.json({"restatement": "slow"}, delay_s=30.0))
        generator = _gemini_generator(fake)
        run = await _start(databases, telemetry_sink, channel_to, generator=generator)
        try:
            code, _, _ = await _error(
                run.stub.AskQuestion(
                    pb.AskQuestionRequest(tenant_id="acme", question="How many companies?"),
                    timeout=0.3,
                )
            )
            assert code == grpc.StatusCode.DEADLINE_EXCEEDED
            assert fake.requests_for("understand_sql")
        finally:
            await run.server.stop(0)
            await run.deps.close()
            await generator.aclose()


# --- ValidateSql ----------------------------------------------------------------------------


@pytest.mark.rpc(VALIDATE)
async def test_validate_accepts_and_normalises(running):
    reply = await running.stub.ValidateSql(
        pb.ValidateSqlRequest(
            tenant_id="acme", sql="select name, deleted_at, replace(name, 'a', 'b') from companies"
        ),
        timeout=10,
    )
    assert reply.valid and not reply.violations
    assert reply.normalized_sql == (
        "SELECT name, deleted_at, REPLACE(name, 'a', 'b') FROM public.companies"
    )
    assert reply.tables_used == ["public.companies"]


@pytest.mark.rpc(VALIDATE)
async def test_validate_refusal_is_ok_with_every_violation(running):
    reply = await running.stub.ValidateSql(
        pb.ValidateSqlRequest(tenant_id="acme", sql="SELECT pg_sleep(1) FROM secrets"),
        timeout=10,
    )
    assert not reply.valid and reply.normalized_sql == ""
    assert {(v.rule, v.subject) for v in reply.violations} == {
        (pb.SQL_GATE_RULE_FUNCTION_NOT_ALLOWED, "pg_sleep"),
        (pb.SQL_GATE_RULE_UNKNOWN_TABLE, "secrets"),
    }
    assert all(v.message for v in reply.violations)


@pytest.mark.rpc(VALIDATE)
@pytest.mark.parametrize("sql", ["", "  ", "SELECT 1" + " " * 20_000, "SELECT 'a\x00b'"])
async def test_validate_invalid_sql_argument(running, sql):
    code, fields, _ = await _error(
        running.stub.ValidateSql(pb.ValidateSqlRequest(tenant_id="acme", sql=sql), timeout=10)
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["sql"])


# --- ExecuteSql -----------------------------------------------------------------------------


@pytest.mark.rpc(EXECUTE)
async def test_execute_returns_typed_rows(running):
    reply = await running.stub.ExecuteSql(
        pb.ExecuteSqlRequest(
            tenant_id="acme",
            sql="SELECT name, annual_revenue, created_at FROM companies ORDER BY company_id",
            max_rows=5,
        ),
        timeout=10,
    )
    result = reply.result
    assert [c.data_type for c in result.columns] == [
        "text", "numeric", "timestamp with time zone",
    ]  # fmt: skip
    assert result.row_count == 5 and result.truncated
    first = result.rows[0].values
    assert first[0].string_value and first[1].decimal_value and first[2].HasField("timestamp_value")
    assert result.database == "warehouse" and result.execution_duration.ToNanoseconds() > 0
    again = await running.stub.ExecuteSql(
        pb.ExecuteSqlRequest(
            tenant_id="acme",
            sql="SELECT name, annual_revenue, created_at FROM companies ORDER BY company_id",
            max_rows=5,
        ),
        timeout=10,
    )
    assert again.result.fingerprint == result.fingerprint


@pytest.mark.rpc(EXECUTE)
async def test_execute_a_huge_value_ends_the_result_at_the_size_cap(running):
    """The rows before a row past the result-size cap come back in order under their own
    names, that row and the ones after it do not. (Each value is within the cap, as the
    gate requires of built values; the row, two of them, is not.)"""
    reply = await running.stub.ExecuteSql(
        pb.ExecuteSqlRequest(
            tenant_id="acme",
            sql="SELECT company_id, CASE WHEN rank = 3 THEN repeat('x', 600000) ELSE name END "
            "AS \"Name\", company_id, CASE WHEN rank = 3 THEN repeat('y', 600000) END AS more "
            "FROM (SELECT company_id, name, "
            "row_number() OVER (ORDER BY company_id DESC) AS rank FROM companies) AS c "
            "ORDER BY rank",
            max_rows=10,
        ),
        timeout=30,
    )
    result = reply.result
    assert result.truncated and result.truncation_reason == pb.TRUNCATION_REASON_SIZE_CAP
    assert [c.name for c in result.columns] == ["company_id", "Name", "company_id", "more"]
    ids = [row.values[0].int_value for row in result.rows]
    assert result.row_count == 2 and ids == sorted(ids, reverse=True)
    assert reply.ByteSize() < 64 * 1024


@pytest.mark.rpc(EXECUTE)
async def test_execute_on_a_named_database(running):
    reply = await running.stub.ExecuteSql(
        pb.ExecuteSqlRequest(
            tenant_id="acme", database="finance", sql="SELECT sum(total) FROM invoices"
        ),
        timeout=10,
    )
    assert reply.result.rows[0].values[0].decimal_value == "12"
    assert reply.result.database == "finance"


@pytest.mark.rpc(EXECUTE)
async def test_execute_refused_by_the_gate_names_the_rule(running):
    code, fields, info = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT * FROM companies FOR UPDATE"),
            timeout=10,
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["sql"])
    assert info == {"reason": "SQL_REJECTED", "rule": "SQL_GATE_RULE_LOCKING_CLAUSE"}


@pytest.mark.rpc(EXECUTE)
async def test_hostile_suite_is_refused_and_leaves_the_data_untouched(running, databases):
    async def checksum() -> list[tuple[str, str]]:
        async with await psycopg.AsyncConnection.connect(databases.warehouse_admin_url) as conn:
            found = []
            for table in SCHEMA:
                query = psycopg.sql.SQL(
                    "SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM {} t"
                ).format(psycopg.sql.Identifier(table.name))
                row = await (await conn.execute(query)).fetchone()
                found.append((table.name, row[0] if row else ""))
            return found

    before = await checksum()
    for sql, rule in HOSTILE:
        if not sql.strip() or len(sql) > 20_000:
            continue
        code, _, info = await _error(
            running.stub.ExecuteSql(pb.ExecuteSqlRequest(tenant_id="acme", sql=sql), timeout=10)
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert info == {"reason": "SQL_REJECTED", "rule": rule.wire_name}, sql
    assert await checksum() == before


@pytest.mark.rpc(EXECUTE)
async def test_execute_database_errors(running):
    code, fields, info = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT missing FROM companies"), timeout=10
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["sql"])
    assert info == {"reason": "SQL_DATABASE_ERROR", "sqlstate": "42703"}


@pytest.mark.rpc(EXECUTE)
async def test_execute_refused_by_a_database_side_defence(running, databases):
    target = running.deps.targets.get("finance")
    assert (await target.get_catalog()).table("vault") is not None  # cached while granted
    async with await psycopg.AsyncConnection.connect(
        databases.finance_admin_url, autocommit=True
    ) as admin:
        await admin.execute("REVOKE SELECT ON vault FROM tandem_reader")
        try:
            code, _, info = await _error(
                running.stub.ExecuteSql(
                    pb.ExecuteSqlRequest(
                        tenant_id="acme", database="finance", sql="SELECT * FROM vault"
                    ),
                    timeout=10,
                )
            )
        finally:
            await admin.execute("GRANT SELECT ON vault TO tandem_reader")
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert info == {"reason": "SQL_DATABASE_ERROR", "sqlstate": "42501"}


@pytest.mark.rpc(EXECUTE)
async def test_execute_statement_timeout(running):
    timeout = duration_pb2.Duration()
    timeout.FromMilliseconds(200)
    code, _, info = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(
                tenant_id="acme",
                sql=SLOW_SQL,
                statement_timeout=timeout,
            ),
            timeout=10,
        )
    )
    assert (code, info["reason"]) == (grpc.StatusCode.DEADLINE_EXCEEDED, "STATEMENT_TIMEOUT")


@pytest.mark.rpc(EXECUTE)
async def test_execute_a_database_limit_is_a_resource_limit(running):
    """A statement the gate passes but Postgres cannot plan (a target list past its 1,664
    entries, SQLSTATE 54011): RESOURCE_EXHAUSTED with SQL_RESOURCE_LIMIT, no RetryInfo."""
    code, _, info = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT " + ", ".join(["1"] * 1700)),
            timeout=10,
        )
    )
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert info == {"reason": "SQL_RESOURCE_LIMIT", "sqlstate": "54011"}


@pytest.mark.rpc(EXECUTE)
async def test_execute_a_statement_building_a_huge_value_is_refused_by_the_gate(running):
    code, fields, info = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT length(repeat('x', 900000000))"),
            timeout=10,
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["sql"])
    assert info == {"reason": "SQL_REJECTED", "rule": "SQL_GATE_RULE_VALUE_TOO_LARGE"}


@pytest.mark.rpc(EXECUTE)
async def test_execute_call_deadline(running):
    code, _, _ = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(
                tenant_id="acme",
                sql=SLOW_SQL,
            ),
            timeout=0.3,
        )
    )
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED


def _duration(seconds: float) -> duration_pb2.Duration:
    value = duration_pb2.Duration()
    value.FromNanoseconds(int(seconds * 1e9))
    return value


@pytest.mark.rpc(EXECUTE)
@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (pb.ExecuteSqlRequest(tenant_id="acme", sql=""), "sql"),
        (pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT 1" + " " * 20_000), "sql"),
        (pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT '\x00'"), "sql"),
        (pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT 1", max_rows=-1), "max_rows"),
        (pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT 1", max_rows=1001), "max_rows"),
        (pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT 1", statement_timeout=_duration(-1)),
         "statement_timeout"),
        (pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT 1", statement_timeout=_duration(31)),
         "statement_timeout"),
    ],
)  # fmt: skip
async def test_execute_invalid_arguments(running, request_, field):
    code, fields, _ = await _error(running.stub.ExecuteSql(request_, timeout=10))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


# --- RunIntent ------------------------------------------------------------------------------


@pytest.mark.rpc(INTENT)
async def test_run_intent_group_by_with_join_filter_and_order(running):
    intent = pb.SqlIntent(
        kind=pb.INTENT_KIND_GROUP_BY,
        table="opportunities",
        join_tables=["regions"],
        group_by=[pb.IntentGroup(column="regions.name")],
        filters=[
            pb.IntentFilter(column="stage", op=pb.FILTER_OPERATOR_EQUAL,
                            values=[cpb.SqlValue(string_value="Closed Won")]),
            pb.IntentFilter(column="close_date", op=pb.FILTER_OPERATOR_IN_RANGE,
                            values=[cpb.SqlValue(date_value="2024-01-01"),
                                    cpb.SqlValue(date_value="2025-01-01")]),
        ],
        aggregate_function=pb.AGGREGATE_FUNCTION_SUM,
        aggregate_column="amount",
        order_by=[pb.IntentOrder(by_aggregate=True, descending=True)],
    )  # fmt: skip
    reply = await running.stub.RunIntent(
        pb.RunIntentRequest(tenant_id="acme", intent=intent), timeout=10
    )
    result = reply.result
    assert [c.name for c in result.columns] == ["name", "sum_amount"]
    assert result.row_count == 4
    totals = [float(r.values[1].decimal_value) for r in result.rows]
    assert totals == sorted(totals, reverse=True)
    assert result.tables_used == ["public.opportunities", "public.companies", "public.regions"]
    assert result.explanation.startswith("Groups opportunities")
    # A category and a measure: a bar chart of the same rows, largest first.
    assert result.chart.kind == pb.CHART_KIND_BAR and result.chart.reason == "sum_amount per name"
    spec = json.loads(result.chart.vega_lite)
    assert [v["sum_amount"] for v in spec["data"]["values"]] == totals


@pytest.mark.rpc(INTENT)
async def test_run_intent_top_n_default_limit(running):
    intent = pb.SqlIntent(
        kind=pb.INTENT_KIND_TOP_N,
        table="companies",
        columns=["name", "employee_count"],
        order_by=[pb.IntentOrder(column="employee_count", descending=True)],
    )
    reply = await running.stub.RunIntent(
        pb.RunIntentRequest(tenant_id="acme", intent=intent), timeout=10
    )
    assert reply.result.row_count == 10 and not reply.result.truncated
    assert reply.result.sql.endswith("LIMIT 10")


def _intent_error_cases() -> list[tuple[pb.SqlIntent, str]]:
    count, filter_ = pb.INTENT_KIND_COUNT, pb.IntentFilter
    text = cpb.SqlValue(string_value="x")
    return [
        (pb.SqlIntent(table="companies"), "intent.kind"),
        (pb.SqlIntent(kind=count, table="secrets"), "intent.table"),
        (pb.SqlIntent(kind=pb.INTENT_KIND_LIST, table="companies", columns=["name", "nope"]),
         "intent.columns[1]"),
        (pb.SqlIntent(kind=count, table="companies",
                      filters=[filter_(column="nope", op=pb.FILTER_OPERATOR_IS_NULL)]),
         "intent.filters[0].column"),
        (pb.SqlIntent(kind=pb.INTENT_KIND_GROUP_BY, table="companies",
                      group_by=[pb.IntentGroup(column="nope")]), "intent.group_by[0].column"),
        (pb.SqlIntent(kind=pb.INTENT_KIND_TOP_N, table="companies",
                      order_by=[pb.IntentOrder(column="nope")]), "intent.order_by[0].column"),
        (pb.SqlIntent(kind=pb.INTENT_KIND_AGGREGATE, table="companies",
                      aggregate_function=pb.AGGREGATE_FUNCTION_SUM, aggregate_column="nope"),
         "intent.aggregate_column"),
        (pb.SqlIntent(kind=count, table="companies", join_tables=["nope"]),
         "intent.join_tables[0]"),
        (pb.SqlIntent(kind=count, table="companies",
                      filters=[filter_(column="name", op=pb.FILTER_OPERATOR_EQUAL)]),
         "intent.filters[0].values"),
        (pb.SqlIntent(kind=count, table="companies",
                      filters=[filter_(column="employee_count", op=pb.FILTER_OPERATOR_EQUAL,
                                 values=[text])]), "intent.filters[0].values[0]"),
        (pb.SqlIntent(kind=count, table="companies", limit=-1), "intent.limit"),
    ]  # fmt: skip


@pytest.mark.rpc(INTENT)
@pytest.mark.parametrize(("intent", "field"), _intent_error_cases())
async def test_run_intent_invalid_intent_names_the_field(running, intent, field):
    code, fields, info = await _error(
        running.stub.RunIntent(pb.RunIntentRequest(tenant_id="acme", intent=intent), timeout=10)
    )
    assert (code, fields, info["reason"]) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        [field],
        "INVALID_INTENT",
    )


@pytest.mark.rpc(INTENT)
@pytest.mark.parametrize("max_rows", [-1, 1001])
async def test_run_intent_max_rows_out_of_range(running, max_rows):
    intent = pb.SqlIntent(kind=pb.INTENT_KIND_COUNT, table="companies")
    code, fields, _ = await _error(
        running.stub.RunIntent(
            pb.RunIntentRequest(tenant_id="acme", intent=intent, max_rows=max_rows), timeout=10
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["max_rows"])


@pytest.mark.rpc(INTENT)
async def test_run_intent_refuses_absurd_numbers(running):
    intent = pb.SqlIntent(
        kind=pb.INTENT_KIND_COUNT,
        table="opportunities",
        filters=[
            pb.IntentFilter(
                column="amount",
                op=pb.FILTER_OPERATOR_GREATER,
                values=[cpb.SqlValue(decimal_value="1e400000")],
            )
        ],
    )
    code, _, info = await _error(
        running.stub.RunIntent(pb.RunIntentRequest(tenant_id="acme", intent=intent), timeout=10)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert info["reason"] == "INVALID_INTENT"


# --- DescribeSchema ---------------------------------------------------------------------------


@pytest.mark.rpc(DESCRIBE)
async def test_describe_returns_text_and_structure(running):
    reply = await running.stub.DescribeSchema(
        pb.DescribeSchemaRequest(tenant_id="acme"), timeout=10
    )
    assert reply.database == "warehouse" and not reply.truncated
    assert len(reply.catalog_text) <= 8000
    names = [t.name for t in reply.tables]
    assert names == sorted(t.name for t in SCHEMA)
    opportunities = next(t for t in reply.tables if t.name == "opportunities")
    assert opportunities.primary_key_columns == ["opportunity_id"]
    assert opportunities.row_estimate > 0 and opportunities.comment
    stage = next(c for c in opportunities.columns if c.name == "stage")
    assert "Closed Won" in stage.sample_values and not stage.nullable
    assert any(fk.referenced_table == "public.companies" for fk in opportunities.foreign_keys)
    assert reply.refresh_time.seconds > 0 and not reply.omitted_tables
    # the demo declares its keys: every join is a declared one, with no evidence to give
    assert not opportunities.primary_key_evidence
    joins = {(j.child_table, tuple(j.child_columns), j.parent_table) for j in reply.joins}
    assert ("public.opportunities", ("company_id",), "public.companies") in joins
    assert {j.origin for j in reply.joins} == {pb.JOIN_ORIGIN_DECLARED}


@pytest.mark.rpc(DESCRIBE)
async def test_describe_prunes_to_a_question_and_filters_tables(running):
    pruned = await running.stub.DescribeSchema(
        pb.DescribeSchemaRequest(
            tenant_id="acme", question="won deals by industry", max_chars=3500
        ),
        timeout=10,
    )
    assert len(pruned.catalog_text) <= 3500
    assert {"opportunities", "companies"} <= {t.name for t in pruned.tables}
    assert pruned.omitted_tables
    only = await running.stub.DescribeSchema(
        pb.DescribeSchemaRequest(tenant_id="acme", tables=["regions", "public.products"]),
        timeout=10,
    )
    assert [t.name for t in only.tables] == ["regions", "products"]  # as requested
    assert "public.companies" in only.omitted_tables
    # joins only between the tables described
    shown = {"public.regions", "public.products"}
    assert all(j.child_table in shown and j.parent_table in shown for j in only.joins)


@pytest.mark.rpc(DESCRIBE)
@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (pb.DescribeSchemaRequest(tenant_id="acme", question="x" * 2001), "question"),
        (pb.DescribeSchemaRequest(tenant_id="acme", max_chars=-1), "max_chars"),
        (pb.DescribeSchemaRequest(tenant_id="acme", max_chars=100_001), "max_chars"),
        (pb.DescribeSchemaRequest(tenant_id="acme", tables=["regions", "nope"]), "tables[1]"),
    ],
)
async def test_describe_invalid_arguments(running, request_, field):
    code, fields, _ = await _error(running.stub.DescribeSchema(request_, timeout=10))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


# --- a principal under the database's access policy (SQL_ACCESS_POLICIES) ---------------


@pytest.fixture
async def policed(databases, telemetry_sink, channel_to, tmp_path) -> AsyncIterator[Running]:
    from services.sql.access import load_access_policy

    path = tmp_path / "access.json"
    path.write_text(
        json.dumps(
            {"row_filters": {"invoices": "invoice_id = {principal.invoice}"},
             "hidden": {"invoices.total": ["finance"]}}
        )
    )  # fmt: skip
    finance = TargetConfig(
        "finance",
        databases.finance_reader_url,
        tenants=frozenset({"acme"}),
        access=load_access_policy(path),
    )
    others = [c for c in configs(databases) if c.name != "finance"]
    run = await _start(databases, telemetry_sink, channel_to, targets=[*others, finance])
    yield run
    await run.server.stop(0)
    await run.deps.close()


def _principal(**attributes: str) -> tuple[tuple[str, str], ...]:
    from services.common import Principal

    return tuple(Principal.of("dave", ["sales"], attributes).headers())


@pytest.mark.rpc(EXECUTE)
async def test_execute_access_denied_names_the_rule_and_the_missing_attribute(policed):
    code, _, meta = await _error(
        policed.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", database="finance",
                                 sql="SELECT count(*) FROM invoices"),
            metadata=_principal(), timeout=10,
        )
    )  # fmt: skip
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert meta == {"reason": "SQL_ACCESS_DENIED", "rule": "SQL_GATE_RULE_ACCESS_DENIED",
                    "attribute": "invoice"}  # fmt: skip
    code, _, meta = await _error(
        policed.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", database="finance",
                                 sql="SELECT total FROM invoices"),
            metadata=_principal(invoice="1"), timeout=10,
        )
    )  # fmt: skip
    assert (code, meta["reason"]) == (grpc.StatusCode.PERMISSION_DENIED, "SQL_ACCESS_DENIED")
    assert "attribute" not in meta
    reply = await policed.stub.ExecuteSql(
        pb.ExecuteSqlRequest(tenant_id="acme", database="finance", sql="SELECT * FROM invoices"),
        metadata=_principal(invoice="1"),
        timeout=10,
    )
    assert [c.name for c in reply.result.columns] == ["invoice_id"]
    assert _result_rows(reply.result) == [(1,)]


@pytest.mark.rpc(INTENT)
async def test_run_intent_access_denied(policed):
    code, _, meta = await _error(
        policed.stub.RunIntent(
            pb.RunIntentRequest(tenant_id="acme", database="finance",
                                intent=pb.SqlIntent(kind=pb.INTENT_KIND_COUNT, table="invoices")),
            metadata=_principal(), timeout=10,
        )
    )  # fmt: skip
    assert (code, meta["reason"]) == (grpc.StatusCode.PERMISSION_DENIED, "SQL_ACCESS_DENIED")


@pytest.mark.rpc(VALIDATE)
async def test_validate_reports_the_access_rule(policed):
    reply = await policed.stub.ValidateSql(
        pb.ValidateSqlRequest(tenant_id="acme", database="finance",
                              sql="SELECT total FROM invoices"),
        metadata=_principal(invoice="1"), timeout=10,
    )  # fmt: skip
    assert not reply.valid and reply.violations[0].rule == pb.SQL_GATE_RULE_ACCESS_DENIED


@pytest.mark.rpc(ASK)
async def test_ask_refused_by_the_access_policy_says_so(policed):
    reply = await policed.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", database="finance",
                              question="How many invoices are there?"),
        metadata=_principal(), timeout=10,
    )  # fmt: skip
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert reply.refusal_reason == "SQL_ACCESS_DENIED"


@pytest.mark.rpc(EXECUTE)
async def test_a_policy_the_catalog_does_not_match_refuses_the_database(
    databases, telemetry_sink, channel_to, tmp_path
):
    from services.sql.access import load_access_policy

    path = tmp_path / "access.json"
    path.write_text(json.dumps({"hidden": {"invoices.discount": ["finance"]}}))
    finance = TargetConfig(
        "finance",
        databases.finance_reader_url,
        tenants=frozenset({"acme"}),
        access=load_access_policy(path),
    )
    others = [c for c in configs(databases) if c.name != "finance"]
    run = await _start(databases, telemetry_sink, channel_to, targets=[*others, finance])
    try:
        code, _, meta = await _error(
            run.stub.ExecuteSql(
                pb.ExecuteSqlRequest(tenant_id="acme", database="finance", sql="SELECT 1"),
                timeout=10,
            )
        )
        assert code == grpc.StatusCode.FAILED_PRECONDITION
        assert meta == {"reason": "SQL_ACCESS_DENIED", "database": "finance"}
    finally:
        await run.server.stop(0)
        await run.deps.close()
