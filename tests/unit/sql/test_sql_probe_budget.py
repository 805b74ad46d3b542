"""The data checks' probes get time from the statement they check: a runner of our own
interface records the limits each probe runs under, and answers as the database would
(or times out, as a database too busy to answer would). The real database is in
tests/integration/sql/test_sql_checks.py (a statement slow for its data)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.sql.catalog import Catalog, ColumnInfo, TableInfo
from services.sql.gate import (
    FailureKind,
    Limits,
    ResultSet,
    SqlGate,
    StatementError,
    StatementRunner,
    Verdict,
)
from services.sql.verify import StatementChecker
from tandem.v1 import common_pb2
from tandem.v1 import sql_service_pb2 as pb

CATALOG = Catalog(
    "docs",
    (
        TableInfo(
            "public",
            "documents",
            columns=(
                ColumnInfo("document_id", "integer", True),
                ColumnInfo("document_name", "text", True),
                ColumnInfo("page_count", "integer", True),
            ),
            primary_key=("document_id",),
        ),
    ),
)
# One literal the catalog cannot decide (a probe of one expression), and two conditions
# (an empty result is relaxed by a probe of two).
STATEMENT = "SELECT document_id FROM documents WHERE document_name = 'Annual' AND page_count > 3"


@dataclass
class _Target:
    name: str = "docs"
    pool: object = None


class _Recording(StatementRunner):
    """Records each probe's limits and how many expressions it asks; every expression is
    true (a value held, rows through), or the probe times out when ``times_out``."""

    def __init__(self, *, times_out: bool = False) -> None:
        super().__init__()
        self.probes: list[tuple[int, float]] = []
        self.times_out = times_out

    async def run(self, pool: Any, verdict: Verdict, limits: Limits, **kwargs: Any) -> ResultSet:
        asked = verdict.normalized_sql.count(" AS p")
        self.probes.append((asked, limits.statement_timeout_s))
        if self.times_out:
            raise StatementError(FailureKind.TIMEOUT, "57014", "canceling statement due to timeout")
        row = pb.SqlRow(values=[common_pb2.SqlValue(bool_value=True) for _ in range(asked)])
        return _result(0.001, (row,))


def _result(duration_s: float, rows: tuple[pb.SqlRow, ...] = ()) -> ResultSet:
    return ResultSet((), rows, False, pb.TRUNCATION_REASON_UNSPECIFIED, "", duration_s)


async def _probe_budgets(
    duration_s: float, *, empty: bool = True, timeout_s: float = 30.0
) -> list[tuple[int, float]]:
    gate, runner = SqlGate(), _Recording()
    verdict = gate.check(STATEMENT, CATALOG)
    assert verdict.valid
    rows = () if empty else (pb.SqlRow(values=[common_pb2.SqlValue(int_value=1)]),)
    await StatementChecker(gate, runner).check(
        verdict,
        _result(duration_s, rows),
        _Target(),  # type: ignore[arg-type]
        CATALOG,
        Limits(statement_timeout_s=timeout_s),
    )
    return runner.probes


async def test_a_probe_gets_time_per_expression_in_proportion_to_the_statement() -> None:
    # the statement took 1 s: the value probe (one expression) and the relaxations of
    # its empty result (two) get three times that per expression
    assert await _probe_budgets(1.0) == [(1, 3.0), (2, 6.0)]
    # twice as slow a statement (its data, or the machine's load): twice the time
    assert await _probe_budgets(2.0) == [(1, 6.0), (2, 12.0)]


async def test_a_quick_statement_gets_the_floor() -> None:
    # a few milliseconds' statement: a busy moment can still delay its probe
    assert await _probe_budgets(0.004, empty=False) == [(1, 2.0)]


async def test_a_probe_never_gets_more_than_the_statement_was_allowed() -> None:
    assert await _probe_budgets(1.0, timeout_s=5.0) == [(1, 3.0), (2, 5.0)]
    # a limit below the floor holds too
    assert await _probe_budgets(0.004, timeout_s=1.0) == [(1, 1.0), (2, 1.0)]


async def test_a_probe_past_its_budget_is_said_in_the_checks_and_the_span() -> None:
    """Never silently: the checks it could not decide pass, saying so, and the span names
    them (without the statement's text)."""
    gate, runner = SqlGate(), _Recording(times_out=True)
    spans, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    checker = StatementChecker(gate, runner, tracer=provider.get_tracer("test"))
    checks = await checker.check(
        gate.check(STATEMENT, CATALOG),
        _result(0.5),
        _Target(),  # type: ignore[arg-type]
        CATALOG,
        Limits(),
    )
    undecided = {c.name: c.reason for c in checks if "could not be checked" in c.reason}
    assert set(undecided) == {"values", "rows"}
    assert all(c.passed for c in checks)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "sql.verify"]
    assert span.attributes is not None
    assert list(span.attributes["sql.verify.unchecked"]) == ["values", "rows"]  # type: ignore[arg-type]
    assert "Annual" not in str(dict(span.attributes))
