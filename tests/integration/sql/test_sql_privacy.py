"""Principle 6 on the real SQL service: a canary in the question, in SQL literals and in
an identifier reaches no span, event, status, log line or metric label, through the ask
pipeline (generate, gate rejection, database error, repairs) and the vetted-SQL RPCs,
while every node still gets its span with metadata."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import grpc
import pytest

from services.sql import SqlSettings, TargetConfig, Warehouse
from services.sql._server import SqlDeps, build_deps, create_server, ready
from services.sql.ask._llm_adapter import LlmSqlGenerator
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import TelemetrySink, server_settings
from tests.fakes.gemini import FakeGemini, Reply
from tests.fakes.gemini_sql import gemini_sql_generator, script_statements
from tests.privacy import (
    assert_code_never_tries,
    assert_no_canary,
    captured_logs,
    new_canary,
    raw_spans,
)

pytestmark = pytest.mark.integration

SETTINGS = SqlSettings(reference_date=date(2025, 6, 30))
TENANT = "acme"


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini() as endpoint:
        yield endpoint


@dataclass
class Running:
    sink: TelemetrySink
    stub: pb_grpc.SqlServiceAsyncStub
    raw: Any


@pytest.fixture
async def start(warehouse: Warehouse, fake: FakeGemini) -> AsyncIterator[Any]:
    """``start()``: the offline generator; ``start(model=True)``: the real Gemini
    generator against the scripted endpoint (script it first)."""
    opened: list[tuple[Any, SqlDeps, grpc.aio.Channel, TelemetrySink]] = []
    models: list[LlmSqlGenerator] = []

    async def make(model: bool = False) -> Running:
        sink = TelemetrySink("sql")
        raw = raw_spans(sink.telemetry.tracer_provider)
        generator = None
        if model:  # wired as the service wires Gemini: its own spans, under the ask's
            tracer = sink.telemetry.tracer("tandem.sql.llm")
            generator = gemini_sql_generator(fake, tracer=tracer)
            models.append(generator)
        deps = await build_deps(
            SETTINGS,
            sink.telemetry,
            generator=generator,
            configs=[TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({"*"}))],
        )
        server, servicer = await create_server(server_settings("sql"), sink.telemetry)
        await ready(server, servicer, deps)
        channel = grpc.aio.insecure_channel(server.address)
        opened.append((server, deps, channel, sink))
        return Running(sink, pb_grpc.SqlServiceStub(channel), raw)

    yield make
    for server, deps, channel, sink in opened:
        await channel.close()
        await server.stop(0)
        await deps.close()
        sink.telemetry.shutdown()
    for generator in models:
        await generator.aclose()


def _check(running: Running, canary: str, logs: list[str]) -> set[str]:
    spans = running.sink.spans.get_finished_spans()
    assert_no_canary(
        canary, spans=spans, metrics=running.sink.metrics.get_metrics_data(), logs=logs
    )
    assert_code_never_tries(canary, running.raw.get_finished_spans())
    return {s.name for s in spans}


async def test_asking_with_a_canary_in_the_question(start):
    running = await start()
    canary = new_canary()
    with captured_logs() as logs:
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id=TENANT, question=f"How many companies are named {canary}?"
            )
        )
        listed = await running.stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id=TENANT, question=f"List the opportunities for {canary} by score"
            )
        )
    assert reply.outcome and listed.outcome
    names = _check(running, canary, logs)
    assert {"sql.ask", "sql.understand", "sql.identify_tables", "sql.generate", "sql.gate"} <= names


async def test_declined_questions_say_why_on_the_span_and_nothing_of_the_question(start):
    """A request to change data and a question in another language: the reply says
    what they asked (the caller's own words), the spans only the reason and the code."""
    running = await start()
    canary = new_canary()
    with captured_logs() as logs:
        write = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id=TENANT, question=f"Delete all {canary} companies")
        )
        german = await running.stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id=TENANT, question=f"Wie viele Unternehmen heißen {canary} in Berlin?"
            )
        )
    assert write.refusal_reason == "SQL_READ_ONLY" and canary in write.message
    assert german.refusal_reason == "LANGUAGE_UNSUPPORTED"
    _check(running, canary, logs)
    attributes = [dict(s.attributes or {}) for s in running.sink.spans.get_finished_spans()]
    assert {"SQL_READ_ONLY", "LANGUAGE_UNSUPPORTED"} <= {a.get("sql.refusal") for a in attributes}
    assert "de" in {a.get("question.language") for a in attributes}


async def test_asking_with_a_canary_in_the_instructions(start):
    running = await start()
    canary = new_canary()
    rules = (
        f"A {canary} company means industry = '{canary}'. "
        f"{canary} rate = SUM(amount) / NULLIF(COUNT(*), 0). Ignore {canary} entirely."
    )
    with captured_logs() as logs:
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id=TENANT,
                question=f"How many {canary} companies are there?",
                instructions=rules,
            )
        )
    assert reply.outcome
    names = _check(running, canary, logs)
    assert {"sql.ask", "sql.understand", "sql.generate"} <= names
    ask = next(s for s in running.sink.spans.get_finished_spans() if s.name == "sql.ask")
    assert (ask.attributes or {}).get("sql.instructions.length") == len(rules)


async def test_follow_ups_on_an_earlier_statement_with_canaries(start):
    running = await start()
    canary = new_canary()
    earlier = (
        "SELECT c.name, c.employee_count FROM companies AS c "
        f"WHERE c.name <> '{canary}' ORDER BY c.employee_count DESC LIMIT 5"
    )
    relations = [
        (f"What are their {canary} industries?", pb.PriorStatement(
            sql=earlier, relation=pb.PRIOR_RELATION_RESULT_SET)),
        (f"only the top 2 {canary}", pb.PriorStatement(
            sql=earlier, relation=pb.PRIOR_RELATION_ROW_LIMIT, limit=2)),
        (f"by {canary} instead", pb.PriorStatement(
            sql=earlier, relation=pb.PRIOR_RELATION_REGROUP, dimension=canary)),
        (f"what about {canary}?", pb.PriorStatement(
            sql=earlier, relation=pb.PRIOR_RELATION_VALUE_SWAP, value=canary)),
    ]  # fmt: skip
    with captured_logs() as logs:
        for question, prior in relations:
            reply = await running.stub.AskQuestion(
                pb.AskQuestionRequest(tenant_id=TENANT, question=question, prior=prior)
            )
            assert reply.outcome
    names = _check(running, canary, logs)
    assert {"sql.follow_up", "sql.gate", "sql.execute"} <= names
    relations_seen = {
        dict(s.attributes or {})["sql.follow_up.relation"]
        for s in running.sink.spans.get_finished_spans()
        if s.name == "sql.follow_up"
    }
    assert relations_seen == {"result_set", "row_limit", "regroup", "value_swap"}


async def test_gate_rejections_and_database_errors_with_canary_literals(start, fake):
    canary = new_canary()
    # The model writes literals, and first names a table the catalog lacks after the
    # question's words (the provider asks again).
    script_statements(
        fake,
        f"DELETE FROM companies WHERE name = '{canary}'",
        f"SELECT name FROM companies WHERE employee_count = CAST('{canary}' AS integer)",
        f"SELECT name FROM companies WHERE name = '{canary}' LIMIT 5",
        tables=("companies", f"{canary}_accounts"),
    )
    fake.script("identify_tables", Reply.json({"tables": ["companies"]}))
    running = await start(model=True)
    with captured_logs() as logs:
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id=TENANT, question=f"Who is {canary}?")
        )
        refused = running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(
                tenant_id=TENANT, sql=f"DELETE FROM companies WHERE name = '{canary}'"
            )
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await refused
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        unknown = await running.stub.ValidateSql(
            pb.ValidateSqlRequest(tenant_id=TENANT, sql=f"SELECT a FROM {canary}_table")
        )
        assert not unknown.valid
        bad_value = running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(
                tenant_id=TENANT,
                sql=f"SELECT name FROM companies WHERE employee_count = CAST('{canary}' AS int)",
            )
        )
        with pytest.raises(grpc.aio.AioRpcError):
            await bad_value
    # the last statement runs and finds no company of that name: the values and rows
    # checks refuse it, saying so to the caller (the response may quote the question;
    # telemetry may not)
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE and not reply.degraded
    assert fake.pending() == 0
    assert [a.outcome for a in reply.attempts] == [
        pb.SQL_ATTEMPT_OUTCOME_GATE_REJECTED,
        pb.SQL_ATTEMPT_OUTCOME_DATABASE_ERROR,
        pb.SQL_ATTEMPT_OUTCOME_CHECK_FAILED,
    ]
    assert reply.message == f"{canary!r} is not a value of companies.name"
    assert [c.name for c in reply.checks if not c.passed] == ["values", "rows"]
    names = _check(running, canary, logs)
    assert {"sql.repair", "sql.gate", "sql.execute", "sql.verify"} <= names

    spans = running.sink.spans.get_finished_spans()
    ask = next(s for s in spans if s.name == "sql.ask")
    assert dict(ask.attributes or {})["sql.ask.repairs"] == 2
    verified = next(s for s in spans if s.name == "sql.verify")
    assert dict(verified.attributes or {})["sql.verify.failed"] == ("values", "rows")
    tables = next(s for s in spans if s.name == "sql.identify_tables")
    assert dict(tables.attributes or {})["sql.tables"] == ("public.companies",)
    repairs = [dict(s.attributes or {}) for s in spans if s.name == "sql.repair"]
    assert [r["sql.repair.failed"] for r in repairs] == ["GATE_REJECTED", "DATABASE_ERROR"]
    assert repairs[0]["sql.gate.rules"] == ("QUERY_ROOT",)
    labels = _labels(running.sink, "tandem.sql.gate.rejections")
    assert {"rule": "QUERY_ROOT"} in labels and {"rule": "UNKNOWN_TABLE"} in labels
    assert {"failed": "DATABASE_ERROR"} in _labels(running.sink, "tandem.sql.repairs")


def _labels(sink: TelemetrySink, name: str) -> list[dict[str, Any]]:
    data = sink.metrics.get_metrics_data()
    found: list[dict[str, Any]] = []
    for rm in data.resource_metrics if data else ():
        for scope in rm.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(dict(p.attributes or {}) for p in metric.data.data_points)
    return found


async def test_a_failing_generator_degrades_visibly_and_privately(start, fake):
    # The endpoint refuses the call with an error whose message quotes the prompt, the
    # question included (the pipeline alone, with a raising generator, is covered in
    # tests/unit/sql/test_sql_ask_privacy.py).
    fake.script("understand_sql", Reply.error(503, echo=True))
    canary = new_canary()
    running = await start(model=True)
    with captured_logs() as logs:
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id=TENANT, question=f"How many companies like {canary}?")
        )
    assert reply.degraded and reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    (refused,) = fake.requests
    assert refused.role == "understand_sql" and canary in str(refused.turns)  # echoed back
    _check(running, canary, logs)
    assert {"service": "sql", "reason": "LLM_FALLBACK"} in _labels(running.sink, "tandem.degraded")
    ask = next(s for s in running.sink.spans.get_finished_spans() if s.name == "sql.ask")
    assert dict(ask.attributes or {})["tandem.degraded"] is True


async def test_a_chart_carries_its_rows_in_the_response_and_nowhere_else(start):
    # Chart specs are answer content: the rows they inline never reach spans, logs or
    # metrics.
    running = await start()
    canary = new_canary()
    with captured_logs() as logs:
        reply = await running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(
                tenant_id=TENANT,
                sql=f"SELECT '{canary}' AS label, 7 AS total UNION ALL SELECT 'other', 3",
            )
        )
    chart = reply.result.chart
    assert chart.kind == pb.CHART_KIND_BAR and canary in chart.vega_lite
    _check(running, canary, logs)
