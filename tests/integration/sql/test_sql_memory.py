"""The answer memory on real parts: the embedded Postgres with its row-level security,
the real embedding model over gRPC, the real SQL service on loopback. Tenant isolation
in the database itself, reuse decided by the real model's similarity, retention, and
principle 6: no question, statement, literal or note in spans, logs or metrics."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import psycopg
import pytest

from services.sql import MemorySettings
from services.sql.memory._store import APP_ROLE, app_conninfo
from services.sql.verify import VerifyMode
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import TelemetrySink
from tests.integration.gateway.stack import Sql, start_sql
from tests.privacy import assert_code_never_tries, assert_no_canary, captured_logs, new_canary
from tests.privacy import raw_spans as raw_span_exporter
from tests.security.corpora.stacks import error_details

pytestmark = pytest.mark.integration

HEALTHCARE = "How many companies are in the Healthcare industry?"
HEALTHCARE_SQL = "SELECT count(*) AS companies FROM companies WHERE industry = 'Healthcare'"


@pytest.fixture
async def service(pg_url, embedding) -> AsyncIterator[tuple[Sql, TelemetrySink, Any]]:
    sink = TelemetrySink("sql")
    raw = raw_span_exporter(sink.telemetry.tracer_provider)
    # The canary values of the privacy test are held by no row: the checks audit rather
    # than refuse, so the reuse still happens, and every check still runs (their probes
    # carry the canary literal, so their telemetry is covered too).
    sql = await start_sql(
        pg_url, sink.telemetry, embedding_addr=embedding.server.address, verify=VerifyMode.AUDIT
    )
    sql.channels.append(grpc.aio.insecure_channel(sql.address))
    yield sql, sink, raw
    await sql.close()
    sink.telemetry.shutdown()


def _stub(sql: Sql) -> pb_grpc.SqlServiceAsyncStub:
    return pb_grpc.SqlServiceStub(sql.channels[-1])


def tenant() -> str:
    return f"m-{uuid.uuid4().hex[:10]}"


async def test_row_level_security_isolates_tenants_in_the_database(service, pg_url):
    sql, _, _ = service
    stub = _stub(sql)
    owner = tenant()
    await stub.TeachSql(
        pb.TeachSqlRequest(tenant_id=owner, question=HEALTHCARE, sql=HEALTHCARE_SQL)
    )
    asked = await stub.AskQuestion(pb.AskQuestionRequest(tenant_id=owner, question=HEALTHCARE))
    await stub.SubmitFeedback(
        pb.SubmitFeedbackRequest(
            tenant_id=owner, answer_id=asked.answer_id, rating=pb.FEEDBACK_RATING_WRONG
        )
    )
    app = app_conninfo(pg_url)
    async with await psycopg.AsyncConnection.connect(app, autocommit=True) as conn:
        cur = await conn.execute("SELECT current_user, count(*) FROM sql_confirmed_pairs")
        assert await cur.fetchone() == (APP_ROLE, 0)  # no tenant set: no rows
        async with conn.transaction():
            await conn.execute("SELECT set_config('tandem.tenant_id', %s, true)", (tenant(),))
            cur = await conn.execute("SELECT count(*) FROM sql_confirmed_pairs")
            assert await cur.fetchone() == (0,)  # another tenant: none of the owner's rows
            cur = await conn.execute("SELECT count(*) FROM sql_answers")
            assert await cur.fetchone() == (0,)
            cur = await conn.execute("SELECT count(*) FROM sql_feedback")
            assert await cur.fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            async with conn.transaction():
                await conn.execute("SELECT set_config('tandem.tenant_id', 'intruder', true)")
                await conn.execute(
                    "INSERT INTO sql_answers (tenant_id, answer_id, database, question) "
                    "VALUES (%s, %s, 'warehouse', 'q')",
                    (owner, str(uuid.uuid4())),
                )
        async with conn.transaction():
            await conn.execute("SELECT set_config('tandem.tenant_id', %s, true)", (owner,))
            cur = await conn.execute("SELECT count(*) FROM sql_confirmed_pairs")
            assert await cur.fetchone() == (1,)
            cur = await conn.execute("SELECT count(*) FROM sql_feedback")
            assert await cur.fetchone() == (1,)


async def test_the_real_model_reuses_value_swaps_and_paraphrases_but_not_other_questions(
    service,
):
    sql, _, _ = service
    stub = _stub(sql)
    who = tenant()
    taught = await stub.TeachSql(
        pb.TeachSqlRequest(tenant_id=who, question=HEALTHCARE, sql=HEALTHCARE_SQL)
    )
    swapped = await stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id=who, question="How many companies are in the Retail industry?"
        )
    )
    assert swapped.confirmed_pair.pair_id == taught.pair.pair_id
    direct = await stub.ExecuteSql(
        pb.ExecuteSqlRequest(
            tenant_id=who, sql="SELECT count(*) FROM companies WHERE industry = 'Retail'"
        )
    )
    assert swapped.result.rows == direct.result.rows
    paraphrase = await stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id=who, question="How many companies do we have in the Healthcare industry?"
        )
    )
    assert paraphrase.confirmed_pair.pair_id == taught.pair.pair_id
    # a reworded hit: the stored vector compared with the question's (not the same template)
    assert MemorySettings().paraphrase_similarity <= paraphrase.confirmed_pair.similarity < 0.9999
    for other in (
        "How many contacts are there?",
        "How many opportunities are in the Retail industry?",
        "List the companies in the Healthcare industry by name",
    ):
        reply = await stub.AskQuestion(pb.AskQuestionRequest(tenant_id=who, question=other))
        assert not reply.HasField("confirmed_pair"), other


async def test_pairs_past_the_retention_are_neither_listed_nor_reused(service, pg_url):
    sql, _, _ = service
    stub = _stub(sql)
    who = tenant()
    taught = await stub.TeachSql(
        pb.TeachSqlRequest(tenant_id=who, question=HEALTHCARE, sql=HEALTHCARE_SQL)
    )
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE sql_confirmed_pairs SET create_time = now() - interval '400 days' "
            "WHERE pair_id = %s",
            (taught.pair.pair_id,),
        )
    listed = await stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
    assert not listed.pairs
    reply = await stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id=who, question="How many companies are in the Retail industry?"
        )
    )
    assert not reply.HasField("confirmed_pair")


async def test_no_question_statement_literal_or_note_reaches_telemetry(service):
    sql, sink, raw = service
    stub = _stub(sql)
    who = tenant()
    canary = new_canary()
    with captured_logs() as logs:
        taught = await stub.TeachSql(
            pb.TeachSqlRequest(
                tenant_id=who,
                question=f"How many companies are in the {canary} industry?",
                sql=f"SELECT count(*) FROM companies WHERE industry = '{canary}'",
            )
        )
        hit = await stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id=who, question=f"How many companies are in the {canary}x industry?"
            )
        )
        # a reworded hit: the word candidates' stored vectors, adapted and gated statements
        reworded = await stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id=who, question=f"How many companies do we have in the {canary} industry?"
            )
        )
        await stub.SubmitFeedback(
            pb.SubmitFeedbackRequest(
                tenant_id=who,
                answer_id=hit.answer_id,
                rating=pb.FEEDBACK_RATING_WRONG,
                corrected_sql=f"SELECT count(*) FROM companies WHERE industry = '{canary}y'",
                note=f"{canary} is wrong",
            )
        )
    assert hit.confirmed_pair.pair_id == taught.pair.pair_id
    assert reworded.confirmed_pair.pair_id == taught.pair.pair_id
    assert reworded.confirmed_pair.similarity < 0.9999  # not the same template
    spans = sink.spans.get_finished_spans()
    assert_no_canary(canary, spans=spans, metrics=sink.metrics.get_metrics_data(), logs=logs)
    assert_code_never_tries(canary, raw.get_finished_spans())
    lookups = [s for s in spans if s.name == "sql.memory.lookup"]
    attributes = dict(lookups[0].attributes or {})
    assert attributes["sql.memory.hit"] is True
    assert attributes["sql.memory.pair_id"] == taught.pair.pair_id
    assert 0.0 < float(attributes["sql.memory.similarity"]) <= 1.0
    assert {"sql.memory.teach", "sql.memory.reuse"} <= {s.name for s in spans}


HUGE_SQL = "SELECT length(repeat('x', 900000000)) AS n"


async def test_a_statement_building_a_huge_value_cannot_be_taught(service):
    """Issue 46 item 4: the taught statement would have one backend build 900 MB on every
    ask; the gate refuses it at teaching, naming the rule and the function."""
    sql, _, _ = service
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _stub(sql).TeachSql(
            pb.TeachSqlRequest(tenant_id=tenant(), question=HEALTHCARE, sql=HUGE_SQL)
        )
    details = error_details(err.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.reason == "SQL_REJECTED" and details.fields == ["sql"]
    assert details.metadata["rule"] == "SQL_GATE_RULE_VALUE_TOO_LARGE"


async def test_a_confirmed_statement_over_the_limit_is_said_not_answered_around(service, pg_url):
    """A pair stored before the rule (written here straight into the store) whose statement
    builds a huge value: the ask is UNANSWERABLE with reason SQL_RESOURCE_LIMIT, and the
    pipeline is not asked instead (which would answer, or say nothing matches)."""
    sql, _, _ = service
    stub = _stub(sql)
    who = tenant()
    taught = await stub.TeachSql(
        pb.TeachSqlRequest(tenant_id=who, question=HEALTHCARE, sql=HEALTHCARE_SQL)
    )
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE sql_confirmed_pairs SET sql = %s WHERE tenant_id = %s AND pair_id = %s",
            (HUGE_SQL, who, taught.pair.pair_id),
        )
    asked = await stub.AskQuestion(pb.AskQuestionRequest(tenant_id=who, question=HEALTHCARE))
    assert asked.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert asked.refusal_reason == "SQL_RESOURCE_LIMIT"
    assert "repeat" in asked.message and not asked.result.rows
