"""The ask pipeline on the real warehouse: bounded repair with the error as the signal,
fallback to the deterministic provider, and spans that never carry the question. The
model is the real Gemini generator against the scripted local endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import date

import pytest

from services.common import DeadlineExceeded, deadline_scope
from services.sql import (
    AskOutcome,
    AskPipeline,
    AttemptOutcome,
    GateRule,
    Limits,
    OfflineGenerator,
    SqlGate,
    StatementRunner,
)
from services.sql.ask._llm_adapter import LlmSqlGenerator
from tests.fakes.gemini import FakeGemini, Reply
from tests.fakes.gemini_sql import gemini_sql_generator, script_statements

pytestmark = pytest.mark.integration

ANCHOR = date(2025, 6, 30)
ROLES = ["understand_sql", "identify_tables", "generate_sql"]


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini() as endpoint:
        yield endpoint


@pytest.fixture
async def model(fake: FakeGemini) -> AsyncIterator[Callable[..., LlmSqlGenerator]]:
    """``model(*statements)``: the real Gemini generator, the endpoint scripted to write
    the first statement and repair with the rest; ``model(fail=True)``: the endpoint
    answers 503."""
    made: list[LlmSqlGenerator] = []

    def make(*statements: str, fail: bool = False) -> LlmSqlGenerator:
        if fail:
            fake.script("*", Reply.error(503))
        else:
            script_statements(fake, *statements)
        made.append(gemini_sql_generator(fake))
        return made[-1]

    yield make
    for generator in made:
        await generator.aclose()


def _repair_prompts(fake: FakeGemini) -> list[str]:
    return [str(r.body) for r in fake.requests_for("repair_sql")]


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


async def test_database_error_is_repaired_and_no_third_attempt_is_made(reader_target, fake, model):
    generator = model(
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
    assert [r.role for r in fake.requests] == [*ROLES, "repair_sql"]
    (repair,) = _repair_prompts(fake)
    assert "SQLSTATE 42703" in repair and "stag" in repair  # the error is the repair signal
    assert result.repairs == 1 and fake.pending() == 1  # 'never used' was never asked for
    assert result.answer is not None and result.answer.result.rows[0].values[0].int_value > 0


async def test_gate_rejection_is_repaired_before_anything_runs(reader_target, fake, model):
    generator = model(
        "DELETE FROM opportunities",
        "SELECT count(*) FROM opportunities",
    )
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.ANSWERED
    first = result.attempts[0]
    assert first.outcome is AttemptOutcome.GATE_REJECTED
    assert first.violations[0].rule is GateRule.QUERY_ROOT
    (repair,) = _repair_prompts(fake)
    assert first.violations[0].message in repair


async def test_at_most_two_repairs(reader_target, fake, model):
    generator = model("SELECT 1 FROM secrets", "SELECT pg_sleep(1)", "SELECT x FROM nowhere",
                         "SELECT 'a fourth attempt'")  # fmt: skip
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.ATTEMPTS_EXHAUSTED
    assert len(result.attempts) == 3 and result.repairs == 2
    assert [a.violations[0].rule for a in result.attempts] == [
        GateRule.UNKNOWN_TABLE, GateRule.FUNCTION_NOT_ALLOWED, GateRule.UNKNOWN_TABLE,
    ]  # fmt: skip
    assert len(_repair_prompts(fake)) == 2 and fake.pending() == 1  # no fourth attempt
    assert result.answer is None


async def test_max_repairs_is_configurable_down_to_zero(reader_target, model):
    generator = model("SELECT 1 FROM secrets", "SELECT 1")
    result = await ask(pipeline(generator, max_repairs=0), reader_target)
    assert result.outcome is AskOutcome.ATTEMPTS_EXHAUSTED and len(result.attempts) == 1


async def test_a_failing_generator_falls_back_to_the_offline_one_and_says_so(
    reader_target, fake, model
):
    result = await ask(pipeline(model(fail=True)), reader_target)
    assert [r.role for r in fake.requests] == ["understand_sql"]  # the model was asked
    assert result.outcome is AskOutcome.ANSWERED
    assert result.degraded_llm
    assert result.answer is not None and result.attempts[-1].sql.startswith("SELECT COUNT(*)")
    assert {c.model_name for c in result.calls} == {"deterministic"}


async def test_offline_answer_end_to_end_and_unanswerable_is_not_an_error(reader_target):
    offline = pipeline(OfflineGenerator())
    answered = await ask(offline, reader_target, "How many deals did we win last quarter?")
    assert answered.outcome is AskOutcome.ANSWERED and not answered.degraded_llm
    assert "2025-01-01" in answered.answer.verdict.normalized_sql
    assert set(answered.timings) == {
        "understand",
        "generate",
        "gate",
        "execute",
        "verify",
        "total",
    }
    unanswerable = await ask(offline, reader_target, "What will the weather be like tomorrow?")
    assert unanswerable.outcome is AskOutcome.UNANSWERABLE
    assert unanswerable.attempts == () and unanswerable.message


async def test_deadline_before_any_attempt(reader_target):
    with deadline_scope(0), pytest.raises(DeadlineExceeded):
        await ask(pipeline(OfflineGenerator()), reader_target)


async def test_spans_and_logs_carry_no_question_sql_or_values(
    reader_target, telemetry_sink, caplog, model
):
    sink = telemetry_sink("sql")
    tracer = sink.telemetry.tracer("tandem.sql")
    pipe = AskPipeline(
        model("SELECT name FROM companies WHERE name = 'Zebulon Secret Corp'"),
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


async def test_attempt_messages_drop_quoted_values_but_repair_sees_them(reader_target, fake, model):
    generator = model(
        "SELECT count(*) FROM opportunities WHERE score = CAST('lots' AS integer)",
        "SELECT count(*) FROM opportunities",
    )
    result = await ask(pipeline(generator), reader_target)
    first = result.attempts[0]
    assert first.sqlstate == "22P02" and "lots" not in first.message
    (repair,) = _repair_prompts(fake)
    assert 'SQLSTATE 22P02: invalid input syntax for type integer: "lots"' in repair
