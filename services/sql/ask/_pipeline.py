"""Text-to-SQL with bounded repair: the seam for SQL generators, and the pipeline.

A generator proposes; code enforces (principle 4). The pipeline runs

    understand -> identify tables -> generate -> gate -> execute
        -> on a gate rejection, a database error or an unusable proposal:
           repair with that failure as the signal -> gate -> execute  (at most 2 repairs)

and accepts the first success. Every proposal, first or repaired, goes through the same
gate and the same read-only execution: no repair can skip a layer.

The seam is :class:`SqlGenerator`. Any implementation plugs in: the offline one in
this package (``OfflineGenerator``), or an adapter over the shared LLM layer's roles
(understand_sql, identify_tables, generate_sql, repair_sql). An adapter is responsible
for fencing the question as data in its prompts and for parsing model output into a
:class:`Proposal`; it never needs to validate SQL itself.
"""

from __future__ import annotations

import enum
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol, TypeVar, runtime_checkable

from opentelemetry import metrics, trace

from services.common import DeadlineExceeded, remaining
from services.common.spans import (
    COUNT,
    DEGRADED,
    DEGRADED_REASON,
    GATE_RULES,
    LLM_COST_USD,
    LLM_DEGRADED,
    LLM_INPUT_TOKENS,
    LLM_MODEL,
    LLM_OUTPUT_TOKENS,
    LLM_ROLE,
    LLM_TIER,
    SQL_FINGERPRINT,
    TABLES,
    node_span,
)
from services.common.spans import Metrics as TandemMetrics
from services.sql.catalog import Catalog, TableInfo, render
from services.sql.definitions import GlossaryEntry
from services.sql.gate import (
    RESOURCE_LIMIT_REASON,
    FailureKind,
    Limits,
    ResultSet,
    SqlGate,
    StatementError,
    StatementRunner,
    Verdict,
    Violation,
)
from services.sql.intents import Intent, IntentError, compile_intent
from services.sql.targets import Target
from services.sql.verify import CheckResult, StatementChecker, failure, notes

_log = logging.getLogger("tandem.sql.ask")
_T = TypeVar("_T")


# --- what a generator sees and returns ----------------------------------------------


@dataclass(frozen=True)
class PairUse:
    """Which confirmed pair an answer reused; values match ``ConfirmedPairUse``."""

    pair_id: str
    similarity: float
    substitutions: int
    question: str
    mode: int = 1  # CONFIRMED_PAIR_MODE_ADAPTED
    # (before, after) of each value replaced: the answer says what it changed
    replaced: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SchemaView:
    """The part of a database a generator may use: the typed catalog, the tables in
    scope for this step, their rendered (capped) text, and the reference date for
    relative time expressions ("last quarter")."""

    database: str
    catalog: Catalog
    tables: tuple[TableInfo, ...]
    text: str
    today: date
    # Business definitions: the database's glossary, then the request's own entries.
    glossary: tuple[GlossaryEntry, ...] = ()
    # The request's free-text instructions (data, never commands), as sent.
    instructions: str = ""
    # Confirmed (question, SQL) pairs nearest to the question, for generators that take
    # examples (the LLM adapter fences them as few-shot examples; rules ignore them).
    examples: tuple[tuple[str, str], ...] = ()


class ModelTier(enum.Enum):
    """Values match ``tandem.v1.ModelTier``."""

    STRONG = 1
    FAST = 2
    DETERMINISTIC = 3


class GeneratorRole(enum.Enum):
    """The four generator roles (identify_tables is reported as LLM_ROLE_UNDERSTAND)."""

    UNDERSTAND = "understand"
    IDENTIFY_TABLES = "identify_tables"
    GENERATE_SQL = "generate_sql"
    REPAIR_SQL = "repair_sql"


@dataclass(frozen=True)
class ModelCall:
    """One model call, for usage accounting (never the prompt or the output)."""

    role: GeneratorRole
    tier: ModelTier
    model_name: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0


@dataclass(frozen=True)
class Understanding:
    """The question restated; whether it maps to this database at all; optionally a
    structured reading of it (a model that answers with an intent has one)."""

    interpretation: str
    answerable: bool = True
    reason: str = ""
    intent: Intent | None = None
    calls: tuple[ModelCall, ...] = ()
    # Why an unanswerable question was declined, as an ErrorReason value name
    # (LANGUAGE_UNSUPPORTED); empty when it simply does not map to the database.
    refusal: str = ""


@dataclass(frozen=True)
class TableChoice:
    """The tables (schema-qualified) the statement will need."""

    tables: tuple[str, ...]
    calls: tuple[ModelCall, ...] = ()


@dataclass(frozen=True)
class Proposal:
    """One candidate answer: a SQL statement, or an intent to compile, or neither (the
    generator had nothing usable; ``explanation`` may say why)."""

    sql: str | None = None
    intent: Intent | None = None
    explanation: str = ""
    calls: tuple[ModelCall, ...] = ()
    # Definitions (glossary terms or instruction sentences) the proposal applied, and
    # those it could not use: the response reports both.
    definitions_applied: tuple[str, ...] = ()
    definitions_ignored: tuple[str, ...] = ()


class AttemptOutcome(enum.Enum):
    """Values match ``tandem.v1.SqlAttemptOutcome``."""

    SUCCEEDED = 1
    GATE_REJECTED = 2
    DATABASE_ERROR = 3
    TIMED_OUT = 4
    GENERATION_FAILED = 5
    CHECK_FAILED = 6  # it ran, and a verification check refused its answer


@dataclass(frozen=True)
class Failure:
    """The repair signal: how the previous attempt failed, in the generator's terms."""

    attempt: int
    outcome: AttemptOutcome
    sql: str
    violations: tuple[Violation, ...] = ()
    sqlstate: str = ""
    message: str = ""


class GeneratorUnavailable(Exception):
    """The generator's backend (an LLM) cannot answer now; the fallback takes over."""


@runtime_checkable
class SqlGenerator(Protocol):
    """Turns a question into a proposal, and a failed proposal into a better one.

    Implementations hold their own collaborators (model client, clock); they raise
    :class:`GeneratorUnavailable` when their backend is down.
    """

    async def understand(self, question: str, schema: SchemaView) -> Understanding:
        """Restate the question; say whether this database can answer it at all."""
        ...

    async def identify_tables(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> TableChoice:
        """Name the tables the answer needs (schema-qualified names from the catalog)."""
        ...

    async def generate(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> Proposal:
        """Propose one read-only SELECT (explicit columns; a LIMIT unless a count/total)."""
        ...

    async def repair(
        self,
        question: str,
        understanding: Understanding,
        schema: SchemaView,
        previous: Proposal,
        failure: Failure,
    ) -> Proposal:
        """Propose a corrected statement given why ``previous`` failed."""
        ...


# --- the pipeline ---------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One generate-or-repair attempt and how it ended."""

    number: int
    outcome: AttemptOutcome
    sql: str
    violations: tuple[Violation, ...] = ()
    sqlstate: str = ""
    message: str = ""
    duration_s: float = 0.0
    # The database's own message, for the repair signal only (it may quote a literal).
    detail: str = ""
    # The verification checks of a statement that ran (empty when none did).
    checks: tuple[CheckResult, ...] = ()


@dataclass(frozen=True)
class Answered:
    """The accepted attempt's statement and rows."""

    verdict: Verdict
    result: ResultSet
    explanation: str


class AskOutcome(enum.Enum):
    """Values match ``tandem.v1.SqlAskOutcome``."""

    ANSWERED = 1
    UNANSWERABLE = 2
    ATTEMPTS_EXHAUSTED = 3


@dataclass(frozen=True)
class AskResult:
    """Everything AskQuestion reports."""

    outcome: AskOutcome
    database: str
    interpretation: str = ""
    intent: Intent | None = None
    answer: Answered | None = None
    attempts: tuple[Attempt, ...] = ()
    message: str = ""
    degraded_llm: bool = False
    calls: tuple[ModelCall, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    # From the accepted proposal (else the last one): which business definitions shaped
    # the answer and which the generator could not use.
    definitions_applied: tuple[str, ...] = ()
    definitions_ignored: tuple[str, ...] = ()
    # The answer memory's handle for feedback (empty when the memory is off or down),
    # and the confirmed pair the answer reused, if any.
    answer_id: str = ""
    reused: PairUse | None = None
    # Why the question was declined (SQL_READ_ONLY, LANGUAGE_UNSUPPORTED,
    # SQL_RESOURCE_LIMIT); empty when not.
    refusal: str = ""
    # The verification checks of the answered statement, or of the last one that ran.
    checks: tuple[CheckResult, ...] = ()

    @property
    def repairs(self) -> int:
        return max(len(self.attempts) - 1, 0)


class AskPipeline:
    """Runs one question through a generator, the gate and execution, repairing at most
    ``max_repairs`` times. ``fallback`` (the offline generator) takes over for the
    rest of the question when ``primary`` fails, and the answer is marked degraded."""

    def __init__(
        self,
        primary: SqlGenerator,
        *,
        gate: SqlGate,
        runner: StatementRunner,
        fallback: SqlGenerator | None = None,
        checker: StatementChecker | None = None,
        max_repairs: int = 2,
        catalog_max_chars: int = 8000,
        today: Callable[[], date] = date.today,
        tracer: trace.Tracer | None = None,
        meter: metrics.Meter | None = None,
    ) -> None:
        if not 0 <= max_repairs <= 2:
            raise ValueError("max_repairs must be between 0 and 2")
        self._primary = primary
        self._fallback = fallback
        self._gate = gate
        self._runner = runner
        self._checker = checker
        self._max_repairs = max_repairs
        self._catalog_max_chars = catalog_max_chars
        self._today = today
        self._tracer = tracer or trace.NoOpTracer()
        meter = meter or metrics.NoOpMeter("tandem.sql")
        self._outcomes = meter.create_counter(
            "tandem.sql.ask.outcomes", description="questions by outcome"
        )
        self._attempts = meter.create_counter(
            "tandem.sql.ask.attempts", description="generate/repair attempts by outcome"
        )
        self._checks_failed = meter.create_counter(
            "tandem.sql.verify.failed", description="executed statements a check refused, by check"
        )
        self._metrics = TandemMetrics(meter)

    async def ask(
        self,
        question: str,
        target: Target,
        catalog: Catalog,
        limits: Limits,
        *,
        instructions: str = "",
        glossary: Sequence[GlossaryEntry] = (),
        examples: Sequence[tuple[str, str]] = (),
    ) -> AskResult:
        """Answer ``question``; ``glossary``, ``instructions`` and confirmed ``examples``
        reach the generator in its :class:`SchemaView` (spans carry their sizes only,
        never their text)."""
        with self._tracer.start_as_current_span("sql.ask") as span:
            span.set_attribute("db.name", target.name)
            span.set_attribute("question.length", len(question))
            span.set_attribute("sql.instructions.length", len(instructions))
            span.set_attribute("sql.glossary.entries", len(glossary))
            run = _Run(
                self,
                question,
                target,
                catalog,
                limits,
                instructions=instructions,
                glossary=tuple(glossary),
                examples=tuple(examples),
            )
            result = await run.go()
            span.set_attribute("sql.ask.outcome", result.outcome.name)
            span.set_attribute("sql.ask.attempts", len(result.attempts))
            span.set_attribute("sql.ask.repairs", result.repairs)
            span.set_attribute("sql.ask.degraded", result.degraded_llm)
            span.set_attribute(DEGRADED, result.degraded_llm)
            if result.degraded_llm:
                span.set_attribute(DEGRADED_REASON, LLM_FALLBACK)
                self._metrics.degraded("sql", LLM_FALLBACK)
            if result.answer is not None:
                span.set_attribute(SQL_FINGERPRINT, result.answer.verdict.fingerprint)
                span.set_attribute("sql.row_count", len(result.answer.result.rows))
            self._outcomes.add(1, {"database": target.name, "outcome": result.outcome.name})
            for attempt in result.attempts:
                self._attempts.add(1, {"outcome": attempt.outcome.name})
            return result


class _Run:
    """The state of one question's trip through the pipeline."""

    def __init__(
        self,
        pipeline: AskPipeline,
        question: str,
        target: Target,
        catalog: Catalog,
        limits: Limits,
        *,
        instructions: str = "",
        glossary: tuple[GlossaryEntry, ...] = (),
        examples: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.p = pipeline
        self.examples = examples
        self.question = question
        self.target = target
        self.catalog = catalog
        self.limits = limits
        self.instructions = instructions
        self.glossary = glossary
        self.generator = pipeline._primary
        self.degraded = False
        self.calls: list[ModelCall] = []
        self.timings: dict[str, float] = {"understand": 0.0, "generate": 0.0, "gate": 0.0,
                                          "execute": 0.0, "verify": 0.0}  # fmt: skip
        self.started = time.perf_counter()

    async def _call(self, step: Callable[[SqlGenerator], Awaitable[_T]]) -> _T:
        """Run a generator step; on the primary's failure switch to the fallback."""
        try:
            return await step(self.generator)
        except Exception as exc:
            fallback = self.p._fallback
            if fallback is None or self.generator is fallback:
                raise
            _log.warning(
                "SQL generator failed; the deterministic provider takes over",
                extra={"fields": {"error.type": type(exc).__name__}},
            )
            self.generator = fallback
            self.degraded = True
            return await step(fallback)

    def _view(self, tables: Sequence[TableInfo] | None = None) -> SchemaView:
        rendered = render(
            self.catalog,
            max_chars=self.p._catalog_max_chars,
            question=self.question,
            tables=tables,
        )
        return SchemaView(
            database=self.target.name,
            catalog=self.catalog,
            tables=rendered.tables,
            text=rendered.text,
            today=self.p._today(),
            glossary=self.glossary,
            instructions=self.instructions,
            examples=self.examples,
        )

    def _result(self, outcome: AskOutcome, **kwargs: object) -> AskResult:
        self.timings["total"] = time.perf_counter() - self.started
        return AskResult(
            outcome=outcome,
            database=self.target.name,
            degraded_llm=self.degraded,
            calls=tuple(self.calls),
            timings=dict(self.timings),
            **kwargs,  # type: ignore[arg-type]
        )

    def _observe(self, span: trace.Span, calls: Sequence[ModelCall]) -> None:
        """Model usage on the node's span and in the metrics (never prompts or outputs)."""
        if not calls:
            return
        span.set_attributes(
            {
                LLM_ROLE: calls[-1].role.value,
                LLM_MODEL: calls[-1].model_name,
                LLM_TIER: calls[-1].tier.name.lower(),
                LLM_INPUT_TOKENS: sum(c.input_tokens for c in calls),
                LLM_OUTPUT_TOKENS: sum(c.output_tokens for c in calls),
                LLM_COST_USD: sum(c.cost_usd for c in calls),
                LLM_DEGRADED: self.degraded,
            }
        )
        for call in calls:
            self.p._metrics.llm_call(
                role=call.role.value,
                tier=call.tier.name.lower(),
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                cost_usd=call.cost_usd,
                degraded=self.degraded,
            )

    async def go(self) -> AskResult:
        step_started = time.perf_counter()
        full = self._view()
        with node_span(self.p._tracer, "sql.understand") as span:
            understanding: Understanding = await self._call(
                lambda g: g.understand(self.question, full)
            )
            self._observe(span, understanding.calls)
            span.set_attribute("sql.answerable", understanding.answerable)
            if understanding.refusal:
                span.set_attribute("sql.refusal", understanding.refusal)
            if understanding.intent is not None and understanding.intent.kind is not None:
                span.set_attribute("sql.intent", understanding.intent.kind.name)
        self.calls += understanding.calls
        if not understanding.answerable:
            self.timings["understand"] = time.perf_counter() - step_started
            return self._result(
                AskOutcome.UNANSWERABLE,
                interpretation=understanding.interpretation,
                message=understanding.reason or "the question does not map to this database",
                refusal=understanding.refusal,
            )
        with node_span(self.p._tracer, "sql.identify_tables") as span:
            choice: TableChoice = await self._call(
                lambda g: g.identify_tables(self.question, understanding, full)
            )
            self._observe(span, choice.calls)
            # Catalog-known names only: a proposed name can echo the question.
            chosen = [t for t in (self.catalog.table(n) for n in choice.tables) if t is not None]
            span.set_attributes({TABLES: [t.qualified for t in chosen], COUNT: len(chosen)})
        self.calls += choice.calls
        narrowed = _with_neighbours(self.catalog, chosen) if chosen else None
        schema = self._view(narrowed)
        self.timings["understand"] = time.perf_counter() - step_started

        attempts: list[Attempt] = []
        proposal: Proposal | None = None
        failure: Failure | None = None
        for number in range(1, self.p._max_repairs + 2):
            left = remaining()
            if left is not None and left <= 0:
                if not attempts:
                    raise DeadlineExceeded("deadline exceeded before any attempt finished")
                break
            began = time.perf_counter()
            node = "sql.generate" if failure is None else "sql.repair"
            with node_span(self.p._tracer, node, {"sql.attempt": number}) as span:
                if failure is not None:
                    span.set_attribute("sql.repair.failed", failure.outcome.name)
                    if failure.violations:
                        span.set_attribute(GATE_RULES, [v.rule.name for v in failure.violations])
                    if failure.sqlstate:
                        span.set_attribute("db.sqlstate", failure.sqlstate)
                    self.p._metrics.repair(failure.outcome.name)
                current = proposal = await self._call(
                    self._step(understanding, schema, proposal, failure)
                )
                self._observe(span, current.calls)
                span.set_attribute(
                    "sql.proposal",
                    "sql" if current.sql else "intent" if current.intent else "none",
                )
            self.calls += current.calls
            self.timings["generate"] += time.perf_counter() - began
            try:
                attempt, answered = await self._attempt(number, current, began)
            except StatementError as exc:
                if exc.kind is FailureKind.DEADLINE and attempts:
                    break
                if exc.kind is FailureKind.RESOURCE:
                    # Said as what it is, and not tried again: another attempt would cost
                    # the database the same.
                    return self._result(
                        AskOutcome.UNANSWERABLE,
                        interpretation=understanding.interpretation,
                        intent=current.intent,
                        attempts=tuple(attempts),
                        message=exc.to_tandem().message,
                        refusal=RESOURCE_LIMIT_REASON,
                    )
                raise exc.to_tandem() from exc
            attempts.append(attempt)
            if answered is not None:
                return self._result(
                    AskOutcome.ANSWERED,
                    interpretation=understanding.interpretation,
                    intent=current.intent,
                    answer=answered,
                    attempts=tuple(attempts),
                    definitions_applied=current.definitions_applied,
                    definitions_ignored=current.definitions_ignored,
                    checks=attempt.checks,
                )
            refused = _refused_by_check(attempts)
            if refused is not None:
                # a generator that cannot repair what a check refused (the offline one
                # reads a question one way): the check's reason is the answer
                return self._result(
                    AskOutcome.UNANSWERABLE,
                    interpretation=understanding.interpretation,
                    intent=current.intent,
                    attempts=tuple(attempts),
                    definitions_applied=current.definitions_applied,
                    definitions_ignored=current.definitions_ignored,
                    checks=refused.checks,
                    message=refused.message,
                )
            failure = Failure(
                attempt=number,
                outcome=attempt.outcome,
                sql=attempt.sql,
                violations=attempt.violations,
                sqlstate=attempt.sqlstate,
                message=attempt.detail or attempt.message,
            )
        checked = next((a for a in reversed(attempts) if a.checks), None)
        if checked is not None and checked.outcome is AttemptOutcome.CHECK_FAILED:
            return self._result(
                AskOutcome.UNANSWERABLE,
                interpretation=understanding.interpretation,
                intent=proposal.intent if proposal else understanding.intent,
                attempts=tuple(attempts),
                checks=checked.checks,
                message=checked.message,
            )
        return self._result(
            AskOutcome.ATTEMPTS_EXHAUSTED,
            checks=checked.checks if checked is not None else (),
            interpretation=understanding.interpretation,
            intent=proposal.intent if proposal else understanding.intent,
            attempts=tuple(attempts),
            definitions_applied=proposal.definitions_applied if proposal else (),
            definitions_ignored=proposal.definitions_ignored if proposal else (),
            message=(
                "no attempt produced a statement that passed the gate and ran"
                if len(attempts) > self.p._max_repairs
                else "the deadline passed before another attempt could run"
            ),
        )

    def _step(
        self,
        understanding: Understanding,
        schema: SchemaView,
        previous: Proposal | None,
        failure: Failure | None,
    ) -> Callable[[SqlGenerator], Awaitable[Proposal]]:
        """The next generator call: a first generation, or a repair of ``previous``."""

        def call(generator: SqlGenerator) -> Awaitable[Proposal]:
            if previous is None or failure is None:
                return generator.generate(self.question, understanding, schema)
            return generator.repair(self.question, understanding, schema, previous, failure)

        return call

    async def _attempt(
        self, number: int, proposal: Proposal, began: float
    ) -> tuple[Attempt, Answered | None]:
        def done(outcome: AttemptOutcome, sql: str, **kwargs: object) -> Attempt:
            return Attempt(
                number,
                outcome,
                sql,
                duration_s=time.perf_counter() - began,
                **kwargs,  # type: ignore[arg-type]
            )

        text = proposal.sql or ""
        explanation = proposal.explanation
        if proposal.intent is not None and not text:
            try:
                compiled = compile_intent(
                    proposal.intent, self.catalog, row_cap=self.limits.max_rows
                )
            except IntentError as exc:
                return done(AttemptOutcome.GENERATION_FAILED, "", message=str(exc)), None
            text = compiled.sql
            explanation = explanation or compiled.explanation
        if not text.strip():
            message = proposal.explanation or "the generator produced no statement"
            return done(AttemptOutcome.GENERATION_FAILED, "", message=message[:200]), None
        gate_started = time.perf_counter()
        with node_span(self.p._tracer, "sql.gate") as span:
            verdict = self.p._gate.check(text, self.catalog)
            record_verdict(span, verdict, self.p._metrics)
        self.timings["gate"] += time.perf_counter() - gate_started
        if not verdict.valid:
            message = "; ".join(v.message for v in verdict.violations)[:200]
            return (
                done(
                    AttemptOutcome.GATE_REJECTED,
                    text,
                    violations=verdict.violations,
                    message=message,
                ),
                None,
            )
        exec_started = time.perf_counter()
        try:
            result = await self.p._runner.run(
                self.target.pool, verdict, self.limits, database=self.target.name
            )
        except StatementError as exc:
            self.timings["execute"] += time.perf_counter() - exec_started
            if exc.kind in (FailureKind.DEADLINE, FailureKind.UNAVAILABLE, FailureKind.RESOURCE):
                raise
            outcome = (
                AttemptOutcome.TIMED_OUT
                if exc.kind is FailureKind.TIMEOUT
                else AttemptOutcome.DATABASE_ERROR
            )
            sql_text = verdict.normalized_sql
            return (
                done(
                    outcome,
                    sql_text,
                    sqlstate=exc.sqlstate,
                    message=sanitize(exc.sqlstate, exc.message),
                    detail=exc.message,
                ),
                None,
            )
        self.timings["execute"] += time.perf_counter() - exec_started
        checks: tuple[CheckResult, ...] = ()
        checker = self.p._checker
        if checker is not None:
            verify_started = time.perf_counter()
            checks = await checker.check(verdict, result, self.target, self.catalog, self.limits)
            self.timings["verify"] += time.perf_counter() - verify_started
            failed = failure(checks)
            if failed is not None:
                self.p._checks_failed.add(1, {"check": failed.name})
            if checker.refuses(checks) is not None and failed is not None:
                return (
                    done(
                        AttemptOutcome.CHECK_FAILED,
                        verdict.normalized_sql,
                        message=failed.reason[:300],
                        checks=checks,
                    ),
                    None,
                )
        attempt = done(AttemptOutcome.SUCCEEDED, verdict.normalized_sql, checks=checks)
        said = notes(checks)
        return attempt, Answered(verdict, result, f"{explanation} {said}".strip())


_QUOTED = re.compile(r'"[^"]*"')
# The degradation reason when the offline generator answered for a failed model.
LLM_FALLBACK = "LLM_FALLBACK"


def _refused_by_check(attempts: Sequence[Attempt]) -> Attempt | None:
    """The attempt a check refused, when the repair after it produced no statement."""
    if len(attempts) < 2:
        return None
    before, last = attempts[-2], attempts[-1]
    if (
        before.outcome is AttemptOutcome.CHECK_FAILED
        and last.outcome is AttemptOutcome.GENERATION_FAILED
    ):
        return before
    return None


def record_verdict(span: trace.Span, verdict: Verdict, metrics: TandemMetrics) -> None:
    """A gate verdict on its span (validity, rule names, known tables, fingerprint — never
    the statement) and a rejection counted by its first rule."""
    span.set_attribute("sql.gate.valid", verdict.valid)
    span.set_attribute(GATE_RULES, [v.rule.name for v in verdict.violations])
    span.set_attribute(TABLES, list(verdict.tables_used))
    if verdict.fingerprint:
        span.set_attribute(SQL_FINGERPRINT, verdict.fingerprint)
    if verdict.violations:
        metrics.gate_rejection(verdict.violations[0].rule.name)


def sanitize(sqlstate: str, message: str) -> str:
    """A database message fit for a response: data exceptions (class 22) quote the
    offending value, so quoted text is dropped there; elsewhere quotes hold identifiers."""
    if sqlstate.startswith("22"):
        return _QUOTED.sub('"…"', message)
    return message


def _with_neighbours(catalog: Catalog, tables: Sequence[TableInfo]) -> list[TableInfo]:
    """The chosen tables plus their foreign-key neighbours, in catalog order."""
    names = {t.qualified for t in tables}
    for table in tables:
        names.update(t.qualified for t in catalog.neighbours(table))
    return [t for t in catalog.tables if t.qualified in names]
