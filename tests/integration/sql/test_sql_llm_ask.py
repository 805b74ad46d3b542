"""A model behind the generator seam on the real warehouse (Gemini, and a local
OpenAI-compatible server wired from the environment): a database error is repaired."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest

from services.common.llm import GeminiProvider, LlmSettings
from services.sql import (
    AskOutcome,
    AskPipeline,
    AttemptOutcome,
    Limits,
    OfflineGenerator,
    SqlGate,
    StatementRunner,
    Target,
)
from services.sql.ask._llm_adapter import LlmSqlGenerator, generator_from_env
from services.sql.ask._pipeline import GeneratorRole
from tests.fakes import openai as local
from tests.fakes.gemini import FakeGemini, Reply

pytestmark = pytest.mark.integration


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


async def test_bad_column_is_repaired_from_the_database_error(
    reader_target: Target, fake_gemini: FakeGemini
) -> None:
    fake_gemini.script("understand_sql", Reply.json({"restatement": "Count won deals."}))
    fake_gemini.script("identify_tables", Reply.json({"tables": ["opportunities"]}))
    fake_gemini.script(
        "generate_sql",
        Reply.json({"sql": "SELECT count(*) FROM opportunities WHERE stag = 'Closed Won'"}),
    )
    fake_gemini.script(
        "repair_sql",
        Reply.json({"sql": "SELECT count(*) FROM opportunities WHERE stage = 'Closed Won'"}),
    )
    settings = LlmSettings(api_key="test-key", base_url=fake_gemini.base_url, timeout_s=5.0)
    generator = LlmSqlGenerator(GeminiProvider(settings))
    pipe = AskPipeline(
        generator,
        gate=SqlGate(),
        runner=StatementRunner(),
        fallback=OfflineGenerator(),
        today=lambda: date(2025, 6, 30),
    )
    try:
        result = await pipe.ask(
            "How many deals did we win?",
            reader_target,
            await reader_target.get_catalog(),
            Limits(max_rows=10),
        )
    finally:
        await generator.aclose()

    assert result.outcome is AskOutcome.ANSWERED
    assert not result.degraded_llm
    assert [a.outcome for a in result.attempts] == [
        AttemptOutcome.DATABASE_ERROR,
        AttemptOutcome.SUCCEEDED,
    ]
    assert result.attempts[0].sqlstate == "42703"
    assert result.answer is not None and len(result.answer.result.rows) == 1
    (repair,) = fake_gemini.requests_for("repair_sql")
    assert "stag" in str(repair.body) and "does not exist" in str(repair.body)
    assert fake_gemini.pending() == 0
    assert [c.role for c in result.calls] == [
        GeneratorRole.UNDERSTAND,
        GeneratorRole.IDENTIFY_TABLES,
        GeneratorRole.GENERATE_SQL,
        GeneratorRole.REPAIR_SQL,
    ]


async def test_a_local_model_writes_and_repairs_the_statement(reader_target: Target) -> None:
    with local.FakeOpenAI() as fake:
        fake.script("understand_sql", local.Reply.json({"restatement": "Count won deals."}))
        fake.script("identify_tables", local.Reply.json({"tables": ["opportunities"]}))
        fake.script(
            "generate_sql",
            local.Reply.json(
                {"sql": "SELECT count(*) FROM opportunities WHERE stag = 'Closed Won'"}
            ),
        )
        fake.script(
            "repair_sql",
            # A local model that ignores response_format and talks around its JSON.
            local.Reply(
                text="Here is the fix:\n```json\n"
                '{"sql": "SELECT count(*) FROM opportunities WHERE stage = \'Closed Won\'"}'
                "\n```"
            ),
        )
        generator = generator_from_env(
            {
                "LLM_PROVIDER": "openai",
                "OPENAI_BASE_URL": fake.base_url,
                "LLM_STRONG_MODEL": "qwen2.5-coder:32b",
                "LLM_FAST_MODEL": "qwen2.5:7b",
                "LLM_TIMEOUT_S": "5",
            }
        )
        assert generator is not None
        pipe = AskPipeline(
            generator,
            gate=SqlGate(),
            runner=StatementRunner(),
            fallback=OfflineGenerator(),
            today=lambda: date(2025, 6, 30),
        )
        try:
            result = await pipe.ask(
                "How many deals did we win?",
                reader_target,
                await reader_target.get_catalog(),
                Limits(max_rows=10),
            )
        finally:
            await generator.aclose()
        requests = fake.requests

    assert result.outcome is AskOutcome.ANSWERED and not result.degraded_llm
    assert [a.outcome for a in result.attempts] == [
        AttemptOutcome.DATABASE_ERROR,
        AttemptOutcome.SUCCEEDED,
    ]
    assert result.answer is not None and len(result.answer.result.rows) == 1
    assert [(r.role, r.model) for r in requests] == [
        ("understand_sql", "qwen2.5:7b"),
        ("identify_tables", "qwen2.5:7b"),
        ("generate_sql", "qwen2.5-coder:32b"),
        ("repair_sql", "qwen2.5-coder:32b"),
    ]
    assert "does not exist" in requests[-1].turns[0][1]
    assert [c.model_name for c in result.calls] == [r.model for r in requests]
