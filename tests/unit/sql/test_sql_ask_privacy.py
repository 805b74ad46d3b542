"""The ask pipeline keeps a failing generator's error text out of telemetry: the message
of whatever the generator raised may quote the question (some clients put the prompt in
their errors), as may the table names it asks for, and no span, event, log line or metric
label may (principle 6). The whole
service with the real Gemini generator is covered in
tests/integration/sql/test_sql_privacy.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest

from services.sql import AskPipeline, Limits, OfflineGenerator, SqlGate, StatementRunner
from services.sql.ask._pipeline import Proposal, TableChoice, Understanding
from services.sql.catalog._catalog import Catalog
from tests.privacy import (
    assert_code_never_tries,
    assert_no_canary,
    captured_logs,
    new_canary,
    raw_spans,
)


class _Down:
    """A plain fake of our generator protocol whose backend refuses, quoting the question."""

    async def understand(self, question: str, schema: Any) -> Understanding:
        raise ConnectionError(f"model endpoint refused {question}")

    async def identify_tables(self, question: str, *args: Any) -> TableChoice:
        raise ConnectionError(f"model endpoint refused {question}")

    async def generate(self, question: str, *args: Any) -> Proposal:
        raise ConnectionError(f"model endpoint refused {question}")

    repair = generate


class _Echoing(_Down):
    """Understands, then names the tables it wants after the question's words."""

    async def understand(self, question: str, schema: Any) -> Understanding:
        return Understanding(interpretation="echo")

    async def identify_tables(self, question: str, *args: Any) -> TableChoice:
        return TableChoice(("public.companies", f"public.{question.rsplit(maxsplit=1)[-1]}"))


@dataclass(frozen=True)
class _Target:
    """The part of a target the pipeline reads before any statement runs."""

    name: str = "warehouse"


@pytest.mark.parametrize("generator", [_Down(), _Echoing()], ids=["down", "echoing"])
async def test_a_generator_error_quoting_the_question_reaches_no_telemetry(
    catalog: Catalog, telemetry_sink: Any, generator: Any
) -> None:
    sink = telemetry_sink("sql")
    raw = raw_spans(sink.telemetry.tracer_provider)
    pipe = AskPipeline(
        generator,
        gate=SqlGate(),
        runner=StatementRunner(),
        fallback=OfflineGenerator(),
        today=lambda: date(2025, 6, 30),
        tracer=sink.telemetry.tracer("tandem.sql"),
        meter=sink.telemetry.meter("tandem.sql"),
    )
    canary = new_canary()
    with captured_logs() as logs:
        # The offline generator takes over and refuses: nothing needs a database.
        result = await pipe.ask(
            f"What will the weather be like tomorrow for {canary}",
            _Target(),  # type: ignore[arg-type]
            catalog,
            Limits(),
        )
    assert result.answer is None and result.degraded_llm
    assert any("deterministic provider takes over" in line for line in logs)
    spans = sink.spans.get_finished_spans()
    assert {"sql.ask", "sql.understand"} <= {s.name for s in spans}
    if isinstance(generator, _Echoing):  # catalog-known names only
        (tables,) = [s for s in spans if s.name == "sql.identify_tables"]
        assert dict(tables.attributes or {})["sql.tables"] == ("public.companies",)
    assert_no_canary(canary, spans=spans, metrics=sink.metrics.get_metrics_data(), logs=logs)
    assert_code_never_tries(canary, raw.get_finished_spans())
