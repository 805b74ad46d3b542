"""The ask pipeline on the real warehouse: bounded repair with the error as the signal,
fallback to the deterministic provider, and spans that never carry the question."""

from __future__ import annotations

from datetime import date

import pytest

from services.common import DeadlineExceeded, deadline_scope
from services.sql import (
    AskOutcome,
    AskPipeline,
    AttemptOutcome,
    Failure,
    GateRule,
    Limits,
    OfflineGenerator,
    Proposal,
    SqlGate,
    StatementRunner,
    TableChoice,
    Understanding,
)

pytestmark = pytest.mark.integration

ANCHOR = date(2025, 6, 30)


class Scripted:
    """A generator that proposes the given statements in order and records its calls."""

    def __init__(self, *statements: str, fail: bool = False) -> None:
        self.statements = list(statements)
        self.fail = fail
        self.calls: list[str] = []
        self.failures: list[Failure] = []

    async def understand(self, question, schema):
        self.calls.append("understand")
        if self.fail:
            raise ConnectionError("model endpoint down")
        return Understanding(interpretation="scripted")

    async def identify_tables(self, question, understanding, schema):
        self.calls.append("identify_tables")
        return TableChoice(("public.opportunities",))

    async def generate(self, question, understanding, schema):
        self.calls.append("generate")
        assert schema.today == ANCHOR
        return Proposal(sql=self.statements.pop(0))

    async def repair(self, question, understanding, schema, previous, failure):
        self.calls.append("repair")
        self.failures.append(failure)
        return Proposal(sql=self.statements.pop(0))


def pipeline(generator, **kwargs):
    return AskPipeline(
        generator,
        gate=SqlGate(),
        runner=StatementRunner(),
        fallback=OfflineGenerator(),
        today=lambda: ANCHOR,
        **kwargs,
    )


async def ask(pipe, target, question="How many deals did we win?"):
    return await pipe.ask(question, target, await target.get_catalog(), Limits(max_rows=10))


async def test_database_error_is_repaired_and_no_third_attempt_is_made(reader_target):
    generator = Scripted(
        "SELECT count(*) FROM opportunities WHERE stag = 'Closed Won'",
        "SELECT count(*) FROM opportunities WHERE stage = 'Closed Won'",
        "SELECT 'never used'",
    )
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.ANSWERED
    assert [a.outcome for a in result.attempts] == [
        AttemptOutcome.DATABASE_ERROR,
        AttemptOutcome.SUCCEEDED,
    ]
    assert result.attempts[0].sqlstate == "42703"
    assert generator.calls == ["understand", "identify_tables", "generate", "repair"]
    assert generator.failures[0].sqlstate == "42703"
    assert "stag" in generator.failures[0].message  # the error is the repair signal
    assert result.repairs == 1 and generator.statements == ["SELECT 'never used'"]
    assert result.answer is not None and result.answer.result.rows[0].values[0].int_value > 0


async def test_gate_rejection_is_repaired_before_anything_runs(reader_target):
    generator = Scripted(
        "DELETE FROM opportunities",
        "SELECT count(*) FROM opportunities",
    )
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.ANSWERED
    first = result.attempts[0]
    assert first.outcome is AttemptOutcome.GATE_REJECTED
    assert first.violations[0].rule is GateRule.QUERY_ROOT
    assert generator.failures[0].violations[0].rule is GateRule.QUERY_ROOT


async def test_at_most_two_repairs(reader_target):
    generator = Scripted("SELECT 1 FROM secrets", "SELECT pg_sleep(1)", "SELECT x FROM nowhere",
                         "SELECT 'a fourth attempt'")  # fmt: skip
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.ATTEMPTS_EXHAUSTED
    assert len(result.attempts) == 3 and result.repairs == 2
    assert [a.violations[0].rule for a in result.attempts] == [
        GateRule.UNKNOWN_TABLE, GateRule.FUNCTION_NOT_ALLOWED, GateRule.UNKNOWN_TABLE,
    ]  # fmt: skip
    assert generator.statements == ["SELECT 'a fourth attempt'"]
    assert result.answer is None


async def test_max_repairs_is_configurable_down_to_zero(reader_target):
    generator = Scripted("SELECT 1 FROM secrets", "SELECT 1")
    result = await ask(pipeline(generator, max_repairs=0), reader_target)
    assert result.outcome is AskOutcome.ATTEMPTS_EXHAUSTED and len(result.attempts) == 1


async def test_a_failing_generator_falls_back_to_the_offline_one_and_says_so(reader_target):
    result = await ask(pipeline(Scripted(fail=True)), reader_target)
    assert result.outcome is AskOutcome.ANSWERED
    assert result.degraded_llm
    assert result.answer is not None and result.attempts[-1].sql.startswith("SELECT COUNT(*)")
    assert {c.model_name for c in result.calls} == {"deterministic"}


async def test_offline_answer_end_to_end_and_unanswerable_is_not_an_error(reader_target):
    offline = pipeline(OfflineGenerator())
    answered = await ask(offline, reader_target, "How many deals did we win last quarter?")
    assert answered.outcome is AskOutcome.ANSWERED and not answered.degraded_llm
    assert "2025-01-01" in answered.answer.verdict.normalized_sql
    assert set(answered.timings) == {"understand", "generate", "gate", "execute", "total"}
    unanswerable = await ask(offline, reader_target, "What will the weather be like tomorrow?")
    assert unanswerable.outcome is AskOutcome.UNANSWERABLE
    assert unanswerable.attempts == () and unanswerable.message


async def test_deadline_before_any_attempt(reader_target):
    with deadline_scope(0), pytest.raises(DeadlineExceeded):
        await ask(pipeline(OfflineGenerator()), reader_target)


async def test_spans_and_logs_carry_no_question_sql_or_values(
    reader_target, telemetry_sink, caplog
):
    sink = telemetry_sink("sql")
    tracer = sink.telemetry.tracer("tandem.sql")
    pipe = AskPipeline(
        Scripted("SELECT name FROM companies WHERE name = 'Zebulon Secret Corp'"),
        gate=SqlGate(),
        runner=StatementRunner(tracer=tracer),
        today=lambda: ANCHOR,
        tracer=tracer,
    )
    with caplog.at_level("DEBUG"):
        await ask(pipe, reader_target, "Which company is called Zebulon Secret Corp?")
    spans = sink.spans.get_finished_spans()
    assert {s.name for s in spans} >= {"sql.ask", "sql.execute"}
    for span in spans:
        for value in span.attributes.values():
            assert "Zebulon" not in str(value) and "SELECT" not in str(value)
    for record in caplog.records:
        assert "Zebulon" not in record.getMessage()
        assert "Zebulon" not in str(getattr(record, "fields", ""))


async def test_attempt_messages_drop_quoted_values_but_repair_sees_them(reader_target):
    generator = Scripted(
        "SELECT count(*) FROM opportunities WHERE score = CAST('lots' AS integer)",
        "SELECT count(*) FROM opportunities",
    )
    result = await ask(pipeline(generator), reader_target)
    first = result.attempts[0]
    assert first.sqlstate == "22P02" and "lots" not in first.message
    assert "lots" in generator.failures[0].message
