"""The real Gemini-backed SQL generator pointed at the scripted local endpoint: for tests
above the unit layer that need a model to write given statements, fail, or stall."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import trace

from services.common.llm import GeminiProvider, LlmSettings
from services.sql.ask._llm_adapter import LlmSqlGenerator
from tests.fakes.gemini import FakeGemini, Reply


def gemini_sql_generator(
    fake: FakeGemini, *, tracer: trace.Tracer | None = None, **settings: object
) -> LlmSqlGenerator:
    """``LlmSqlGenerator(GeminiProvider)`` against ``fake``: no retries, so a scripted
    failure fails the call at once; ``tracer`` as the SQL service passes it."""
    values: dict[str, object] = {
        "api_key": "test-key",
        "base_url": fake.base_url,
        "timeout_s": 10.0,
        "max_retries": 0,
        "backoff_initial_s": 0.01,
    }
    values.update(settings)
    provider = GeminiProvider(LlmSettings(**values), tracer=tracer)  # type: ignore[arg-type]
    return LlmSqlGenerator(provider)


def script_statements(
    fake: FakeGemini,
    *statements: str,
    tables: Sequence[str] = ("opportunities",),
    restatement: str = "scripted",
) -> None:
    """One question's replies: a restatement, ``tables``, the first statement as the
    generated SQL and the rest as repairs, in order."""
    fake.script("understand_sql", Reply.json({"restatement": restatement}))
    fake.script("identify_tables", Reply.json({"tables": list(tables)}))
    fake.script("generate_sql", Reply.json({"sql": statements[0]}))
    fake.script("repair_sql", *(Reply.json({"sql": s}) for s in statements[1:]))
