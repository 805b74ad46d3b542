"""The router: plan → execute in parallel waves → replan keeping finished work →
cited synthesis behind the guardrails.

``Router.ask`` is the whole request. Per-request state lives in ``_Run`` so the router
itself holds only collaborators (engines, the LLM provider, telemetry) and a gauge of
steps in flight. This module is execution, which gathers the evidence; writing the answer
from it is ``services.router._synthesis``, handed the finished run by ``_Run.synthesis``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

import grpc
from opentelemetry import metrics, trace

from services.common import (
    LANGUAGE_UNSUPPORTED,
    READ_ONLY_REASON,
    InvalidArgument,
    Language,
    Metrics,
    PermissionDenied,
    detect_language,
    english_only_message,
    read_only_message,
    remaining,
    write_request,
)
from services.common.llm import (
    GradeRequest,
    LlmError,
    LlmProvider,
    LlmResult,
    Passage,
    Plan,
    PlanRequest,
    PlanStep,
    ReplanRequest,
    RewriteRequest,
    Role,
    RouteRequest,
    StepOutcome,
    StepScope,
    ToolName,
)
from services.router import _guard
from services.router._clients import SearchTool, SqlTool, ToolError
from services.router._followups import FollowUps
from services.router._plan import (
    TOOLS,
    PlanInvalid,
    answered_route,
    assign_waves,
    bind,
    rename,
    scope_members,
    validate,
)
from services.router._settings import RouterSettings
from services.router._synthesis import Synthesis
from services.router._types import (
    FAILED_STATUSES,
    AskInput,
    Cell,
    Degradation,
    DeltaEvent,
    Event,
    GuardrailReport,
    Hit,
    Klass,
    Mode,
    Outcome,
    PlanEvent,
    PlanView,
    Route,
    RouterAnswer,
    ScopedMember,
    SearchOutcome,
    Status,
    StepFinishedEvent,
    StepRun,
    StepStartedEvent,
)
from services.router.offline import DETERMINISTIC_MODEL, NO_ANSWER, DeterministicProvider

_log = logging.getLogger("tandem.router")
T = TypeVar("T")
Emit = Callable[[Event], None]

_ROLE_NAMES = {
    Role.ROUTE: "CLASSIFY",
    Role.PLAN: "PLAN",
    Role.REPLAN: "PLAN",
    Role.GRADE: "GRADE",
    Role.REWRITE: "REWRITE",
    Role.SYNTHESIZE: "SYNTHESIZE",
}
# Fencing and the restated rules live in the LLM layer's prompts (LLM_GUARD_*).
PROMPT_GUARDS = ("FENCING", "RULE_RESTATEMENT")
_LAYER_FLAGS = (
    ("INJECTION_SCAN", "injection_scan"),
    ("OUTPUT_CHECK", "output_check"),
    ("CITATION_CHECK", "citation_check"),
)


# The grade at which retrieved evidence is strong enough to stop searching; below it the
# agentic loop rewrites the query and searches again (within ROUTER_MAX_REWRITES).
STRONG_EVIDENCE = 0.65
# Reciprocal-rank fusion's constant for the loop's searches (the usual 60).
_FUSION_K = 60


class _ToolCapReached(Exception):
    """The request's tool-call cap is spent."""


def _noop(_event: Event) -> None:
    return None


class Router:
    """Answers questions over both engines; collaborators arrive through the constructor."""

    def __init__(
        self,
        settings: RouterSettings,
        *,
        search: SearchTool,
        sql: SqlTool,
        llm: LlmProvider,
        offline: LlmProvider | None = None,
        tracer: trace.Tracer | None = None,
        meter: metrics.Meter | None = None,
        observe: Metrics | None = None,
        prompt_guards: tuple[str, ...] = PROMPT_GUARDS,
    ) -> None:
        self.settings = settings
        self.prompt_guards = prompt_guards
        self.search = search
        self.sql = sql
        self.llm = llm
        # RETRIEVE mode and the last-resort fallbacks use the rules, never a model.
        self.rules = offline or DeterministicProvider()
        # The rules read English; a configured model reads any language it is asked in.
        self.reads_any_language = llm.name != DETERMINISTIC_MODEL
        self.tracer = tracer or trace.get_tracer("tandem.router")
        self.follow_ups = FollowUps(llm, self.tracer)
        meter = meter or metrics.get_meter("tandem.router")
        self._answers = meter.create_counter("tandem.router.answers", description="answers")
        self._step_duration = meter.create_histogram(
            "tandem.router.step.duration", unit="s", description="plan step duration"
        )
        self._observe = observe or Metrics()
        self.active_steps = 0

    async def precheck(self, request: AskInput) -> None:
        """Refuse a named database that is unknown or closed to the tenant, before any work.

        An unreachable SQL service is not the caller's fault: its steps degrade instead.
        """
        if not request.options.database:
            return
        try:
            await self.sql.check_database(request.tenant_id, request.options.database)
        except ToolError as exc:
            _raise_for_database(exc, request.options.database)

    async def ask(
        self,
        request: AskInput,
        *,
        request_id: str,
        emit: Emit | None = None,
        checked: bool = False,
    ) -> RouterAnswer:
        """The whole request; ``emit`` receives stream events synchronously as they happen."""
        if not checked:
            await self.precheck(request)
        run = _Run(self, request, request_id, emit or _noop)
        with self.tracer.start_as_current_span("router.ask") as span:
            span.set_attribute("router.mode", request.mode.value)
            span.set_attribute("router.question_chars", len(request.question))
            answer = await run.execute()
            span.set_attribute("router.route", answer.route.value)
            span.set_attribute("router.outcome", answer.outcome.value)
            span.set_attribute("router.steps", len(answer.trajectory))
            span.set_attribute("router.replans", answer.replans)
            span.set_attribute("router.tool_calls", answer.tool_calls)
            span.set_attribute("router.quarantined", answer.guardrails.passages_quarantined)
            if answer.refusal_reason:
                span.set_attribute("router.refusal", answer.refusal_reason)
        for degradation in answer.degradations:
            self._observe.degraded("router", degradation.reason)
        self._answers.add(
            1,
            {"mode": answer.mode.value, "route": answer.route.value, "outcome": answer.outcome},
        )
        _log.info(
            "answered",
            extra={
                "fields": {
                    "request_id": request_id,
                    "mode": answer.mode.value,
                    "route": answer.route.value,
                    "outcome": answer.outcome.value,
                    "steps": len(answer.trajectory),
                    "replans": answer.replans,
                    "tool_calls": answer.tool_calls,
                    "citations": len(answer.citations),
                    "answer_chars": len(answer.text),
                    "refusal": answer.refusal_reason,
                }
            },
        )
        return answer


class _Run:
    """One request's state: the steps across plan revisions, counters, the report."""

    def __init__(self, router: Router, request: AskInput, request_id: str, emit: Emit) -> None:
        self.router = router
        self.settings = router.settings
        self.request = request
        self.request_id = request_id
        self.emit = emit
        self.started = time.monotonic()
        left = remaining()
        self.deadline = self.started + (left if left is not None else 30.0)
        self.exec_deadline = self.deadline - min(
            self.settings.synthesis_reserve_s, max(0.0, (self.deadline - self.started) * 0.25)
        )
        self.runs: dict[str, StepRun] = {}
        self.current: list[StepRun] = []
        self.revision = -1
        self.replans = 0
        self.tool_calls = 0
        self.deadline_hit = False
        self.cap_hit = False
        self.replan_limit_hit = False
        # SQL steps that stand in for a search that found nothing: where the tenant has
        # no database they are no attempt (no replan spent, nothing to report)
        self.fallbacks: set[str] = set()
        self.fatal: Exception | None = None
        # The language of a question that the engine meant to answer it could not read
        # (the SQL service declined it, or the rules found nothing for it offline): the
        # answer then names the language rather than failing step after step.
        self.unread: Language | None = None
        self._language: Language | None = None
        # Whether the rules answered in the model's place (it failed) during this run.
        self.stood_in = False
        self.degradations: list[Degradation] = []
        self.timings: dict[str, float] = {}
        self.usage: dict[tuple[str, str, str], list[float]] = {}
        self.findings: dict[str, tuple[_guard.Finding, ...]] = {}
        guards = self.settings.guardrails
        self.report = GuardrailReport(
            enabled_layers=[
                *router.prompt_guards,
                *(name for name, flag in _LAYER_FLAGS if getattr(guards, flag)),
            ]
        )
        self.klass = Klass.UNSPECIFIED

    # ---- bookkeeping ---------------------------------------------------------------

    def exec_left(self) -> float:
        return self.exec_deadline - time.monotonic()

    def degrade(self, reason: str, component: str, message: str, step_id: str = "") -> None:
        if any(d.reason == reason and d.step_id == step_id for d in self.degradations):
            return
        self.degradations.append(Degradation(reason, component, message, step_id))

    async def llm(self, role: Role, call: Awaitable[LlmResult[T]]) -> LlmResult[T]:
        started = time.monotonic()
        result = await call
        usage = result.usage
        tier = "DETERMINISTIC" if usage.model == "deterministic" else usage.tier.value.upper()
        key = (_ROLE_NAMES.get(role, "PLAN"), tier, usage.model)
        entry = self.usage.setdefault(key, [0, 0, 0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += usage.input_tokens
        entry[2] += usage.output_tokens
        entry[3] += usage.cost_usd or 0.0
        entry[4] += time.monotonic() - started
        if result.degraded:
            self.stood_in = True
            self.degrade("LLM_UNAVAILABLE", "llm", f"the model failed for {role.value}")
        return result

    async def bounded(self, call: Awaitable[T], *, unbounded: bool = False) -> T:
        """``call`` within what is left of the execution budget (model calls can be slow)."""
        if unbounded:
            return await call
        async with asyncio.timeout(max(self.exec_left(), 0.0)):
            return await call

    def take_tool_call(self) -> None:
        if self.tool_calls >= self.request.options.max_tool_calls:
            self.cap_hit = True
            raise _ToolCapReached
        self.tool_calls += 1

    def timed(self, stage: str, started: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + time.monotonic() - started

    # ---- the request ---------------------------------------------------------------

    async def execute(self) -> RouterAnswer:
        declined = self.declined()
        if declined is not None:
            return declined
        mode = self.request.mode
        question = self.request.question
        if mode is Mode.SQL or (mode is Mode.AUTO and self.request.builds_on is not None):
            # A follow-up to a SQL answer stays on the SQL route (resolution already let
            # one that names document content go).
            route = Route.SQL
            steps: Sequence[PlanStep] = (PlanStep("s1", ToolName.SQL_QUESTION, question),)
        elif mode in (Mode.RETRIEVE, Mode.AGENTIC):
            route = Route.RETRIEVE if mode is Mode.RETRIEVE else Route.AGENTIC
            steps = (PlanStep("s1", ToolName.SEMANTIC_SEARCH, question),)
        else:
            steps = await self.initial_plan()
            if not steps:
                return await self.conversational()
            self.klass = _classify(steps)
            route = _route_for(steps)
        started = time.monotonic()
        await self.execute_plan(steps, allow_replan=mode is Mode.AUTO)
        self.timed("execute", started)
        if self.unread is not None and not any(
            r.status is Status.SUCCEEDED for r in self.runs.values()
        ):
            trace.get_current_span().set_attribute("question.language", self.unread.code)
            return self.refusal(LANGUAGE_UNSUPPORTED, english_only_message(self.unread), route)
        if mode is Mode.AUTO and self.request.builds_on is None:
            route = answered_route(route, self.runs.values())
        return await self.synthesis().synthesize(route)

    def language(self) -> Language:
        """The question's language, told once per request."""
        if self._language is None:
            self._language = detect_language(self.request.question)
        return self._language

    def unread_offline(self) -> Language | None:
        """The question's language when only the rules answer (no model, or it failed
        and they stood in) and they do not read it."""
        if self.router.reads_any_language and not self.stood_in:
            return None
        language = self.language()
        return None if language.english else language

    def declined(self) -> RouterAnswer | None:
        """Questions declined before any plan or engine: a request to change data, on
        every mode (route SQL, where such a request belongs; never a document passage);
        and, with no model configured, a question in a language the rules do not read,
        in AUTO and SQL modes (RETRIEVE and AGENTIC search the documents as asked: they
        may be written in it)."""
        question = self.request.question
        request = write_request(question)
        if request is not None:
            return self.refusal(READ_ONLY_REASON, read_only_message(request), Route.SQL)
        if self.router.reads_any_language or self.request.mode not in (Mode.AUTO, Mode.SQL):
            return None
        language = self.language()
        if language.english:
            return None
        trace.get_current_span().set_attribute("question.language", language.code)
        # AUTO ran no engine, as for a greeting
        route = Route.SQL if self.request.mode is Mode.SQL else Route.AGENTIC
        return self.refusal(LANGUAGE_UNSUPPORTED, english_only_message(language), route)

    def refusal(self, reason: str, text: str, route: Route) -> RouterAnswer:
        """The answer to a declined question: why, and what Tandem can do instead; no
        citation, since nothing was searched or queried for it."""
        self.emit(DeltaEvent(text))
        return self.synthesis().answer(
            text=text,
            citations=(),
            outcome=Outcome.REFUSED,
            route=route,
            confidence=1.0,
            disclaimer="",
            sql_results=(),
            refusal_reason=reason,
        )

    async def initial_plan(self) -> Sequence[PlanStep]:
        started = time.monotonic()
        request = PlanRequest(
            self.request.question, tools=TOOLS, max_steps=self.settings.max_plan_steps
        )
        try:
            for provider in (self.router.llm, self.router.llm, self.router.rules):
                try:
                    plan = (
                        await self.bounded(
                            self.llm(Role.PLAN, provider.plan(request)),
                            unbounded=provider is self.router.rules,
                        )
                    ).output
                except (LlmError, TimeoutError):
                    self.degrade("LLM_UNAVAILABLE", "llm", "the planner failed or timed out")
                    continue
                if not plan.steps:
                    return ()
                try:
                    validate(
                        plan.steps,
                        completed={},
                        max_steps=self.settings.max_plan_steps,
                        tools=TOOLS,
                    )
                except PlanInvalid as exc:
                    _log.warning(
                        "plan rejected",
                        extra={"fields": {"request_id": self.request_id, "rule": str(exc)}},
                    )
                    continue
                return plan.steps
            return (PlanStep("s1", ToolName.SEMANTIC_SEARCH, self.request.question),)
        finally:
            self.timed("plan", started)

    async def conversational(self) -> RouterAnswer:
        decision = (
            await self.llm(Role.ROUTE, self.router.llm.route(RouteRequest(self.request.question)))
        ).output
        text = decision.answer or NO_ANSWER
        self.emit(DeltaEvent(text))
        return self.synthesis().answer(
            text=text,
            citations=(),
            outcome=Outcome.ANSWERED,
            route=Route.AGENTIC,
            confidence=decision.confidence,
            disclaimer="",
            sql_results=(),
        )

    # ---- execution -----------------------------------------------------------------

    def adopt(self, steps: Sequence[PlanStep]) -> None:
        """Make ``steps`` the current revision; completed steps carry over unchanged."""
        self.revision += 1
        done = [r for r in self.runs.values() if r.status is Status.SUCCEEDED]
        offset = max((r.wave for r in done), default=-1) + 1
        waves = assign_waves(steps, offset=offset)
        fresh: list[StepRun] = []
        for step in steps:
            existing = self.runs.get(step.id)
            if existing is not None and existing.status is Status.PENDING:
                existing.step, existing.revision, existing.wave = (
                    step,
                    self.revision,
                    waves[step.id],
                )
                fresh.append(existing)
                continue
            run = StepRun(step=step, revision=self.revision, wave=waves[step.id])
            self.runs[step.id] = run
            fresh.append(run)
        for old in self.current:
            if old.status is Status.PENDING and old not in fresh:
                old.status = Status.SKIPPED
        self.current = [*done, *fresh]
        self.emit(PlanEvent(self.plan_view()))

    def plan_view(self) -> PlanView:
        steps = sorted(self.current, key=lambda r: r.wave)
        return PlanView(max(self.revision, 0), tuple(steps))

    async def execute_plan(self, steps: Sequence[PlanStep], *, allow_replan: bool) -> None:
        self.adopt(steps)
        while True:
            pending = [r for r in self.current if r.status is Status.PENDING]
            if not pending:
                return
            if self.exec_left() <= 0:
                self.deadline_hit = True
                self.stop_pending(Status.CANCELLED, "DEADLINE_EXCEEDED")
                return
            wave = min(r.wave for r in pending)
            batch = [r for r in pending if r.wave == wave]
            ready = []
            for run in batch:
                deps = [self.runs.get(d) for d in run.step.depends_on]
                if all(d is not None and d.status is Status.SUCCEEDED for d in deps):
                    ready.append(run)
                else:
                    run.status, run.failure_reason = Status.SKIPPED, "STEP_FAILED"
            await self.run_wave(ready)
            if self.fatal is not None:
                raise self.fatal
            if self.deadline_hit:
                self.stop_pending(Status.CANCELLED, "DEADLINE_EXCEEDED")
                return
            failed = [r for r in batch if r.status in FAILED_STATUSES or r.status is Status.SKIPPED]
            if not failed:
                continue
            if self.unread is not None:
                # Another plan would be read by the same engines, in the same language.
                self.stop_pending(Status.SKIPPED, LANGUAGE_UNSUPPORTED)
                return
            if self.cap_hit:
                self.stop_pending(Status.SKIPPED, "TOOL_CALL_LIMIT_REACHED")
                return
            if not allow_replan:
                continue
            if self.exec_left() <= 0:
                self.deadline_hit = True
                self.stop_pending(Status.CANCELLED, "DEADLINE_EXCEEDED")
                return
            if self.replans >= self.settings.max_replans:
                self.replan_limit_hit = True
                self.stop_pending(Status.SKIPPED, "REPLAN_LIMIT_REACHED")
                return
            revised = await self.replan(failed[0])
            if revised is None:
                if self.deadline_hit:
                    self.stop_pending(Status.CANCELLED, "DEADLINE_EXCEEDED")
                else:
                    self.stop_pending(Status.SKIPPED, "STEP_FAILED")
                return
            self.adopt(revised)

    def stop_pending(self, status: Status, reason: str) -> None:
        for run in self.current:
            if run.status is Status.PENDING:
                run.status, run.failure_reason = status, reason

    async def replan(self, failed: StepRun) -> Sequence[PlanStep] | None:
        started = time.monotonic()
        self.replans += 1
        succeeded = {k: r for k, r in self.runs.items() if r.status is Status.SUCCEEDED}
        finished = [r for r in self.runs.values() if r.status not in (Status.PENDING,)]
        outcomes = tuple(
            StepOutcome(
                r.step_id,
                r.status is Status.SUCCEEDED,
                error=r.failure_reason,
                summary=f"{r.status.value}, {r.result_count} result(s)",
            )
            for r in finished
        )
        plan = Plan(tuple(r.step for r in self.current))
        request = ReplanRequest(self.request.question, plan, outcomes, failed.step_id, tools=TOOLS)
        try:
            proposal = (
                await self.bounded(self.llm(Role.REPLAN, self.router.llm.replan(request)))
            ).output
        except LlmError:
            self.degrade("LLM_UNAVAILABLE", "llm", "the replanner failed")
            return None
        except TimeoutError:
            self.deadline_hit = True
            return None
        finally:
            self.timed("plan", started)
        # A completed step is never re-run, even when the model lists it again.
        steps = [s for s in proposal.steps if s.id not in succeeded]
        if not steps:
            # nothing left to try (the end of the rules' chain): no rejection to report
            _log.info("replan: no alternative", extra={"fields": {"request_id": self.request_id}})
            return None
        # Ids are unique across revisions: a retry that reuses a failed step's id gets a
        # fresh one, and steps that pointed at it follow.
        taken = set(self.runs) | {s.id for s in steps}
        renames: dict[str, str] = {}
        for step in steps:
            if step.id in self.runs and self.runs[step.id].status is not Status.PENDING:
                fresh = f"{step.id}-r{self.revision + 1}"
                while fresh in taken:
                    fresh += "x"
                taken.add(fresh)
                renames[step.id] = fresh
        steps = [rename(s, renames) for s in steps] if renames else steps
        if failed.tool is ToolName.SEMANTIC_SEARCH:
            self.fallbacks.update(
                s.id
                for s in steps
                if s.tool is ToolName.SQL_QUESTION and s.query == failed.step.query
            )
        try:
            validate(
                steps, completed=succeeded, max_steps=self.settings.max_plan_steps, tools=TOOLS
            )
        except PlanInvalid as exc:
            _log.warning(
                "replan rejected",
                extra={"fields": {"request_id": self.request_id, "rule": str(exc)}},
            )
            return None
        return steps

    async def run_wave(self, ready: list[StepRun]) -> None:
        if not ready:
            return
        try:
            async with asyncio.timeout(max(self.exec_left(), 0.0)):
                async with asyncio.TaskGroup() as group:
                    for run in ready:
                        group.create_task(self.run_step(run))
        except TimeoutError:
            self.deadline_hit = True
            self.degrade(
                "DEADLINE_EXCEEDED", "router", "the deadline expired before every step finished"
            )

    async def run_step(self, run: StepRun) -> None:
        succeeded = {k: r for k, r in self.runs.items() if r.status is Status.SUCCEEDED}
        bound = bind(run.step, succeeded)
        run.bound_query = bound.query
        run.argument_summary = self.summarise(bound)
        run.status = Status.RUNNING
        run.start_time = datetime.now(UTC)
        started = time.monotonic()
        self.emit(StepStartedEvent(run))
        self.router.active_steps += 1
        span = self.router.tracer.start_span("router.step")
        span.set_attribute("router.step_id", run.step_id)
        span.set_attribute("router.tool", run.tool.value)
        try:
            budget = min(self.settings.step_timeout_s, max(self.exec_left(), 0.0))
            async with asyncio.timeout(budget):
                await self.dispatch(run, bound)
        except TimeoutError:
            run.status, run.failure_reason = Status.TIMED_OUT, "DEADLINE_EXCEEDED"
        except asyncio.CancelledError:
            run.status, run.failure_reason = Status.CANCELLED, "DEADLINE_EXCEEDED"
            raise
        except _ToolCapReached:
            run.status, run.failure_reason = Status.SKIPPED, "TOOL_CALL_LIMIT_REACHED"
            self.degrade(
                "TOOL_CALL_LIMIT_REACHED", "router", "the tool-call cap was reached", run.step_id
            )
        except ToolError as exc:
            self.tool_failed(run, exc)
        except LlmError as exc:
            run.status, run.failure_reason = Status.FAILED, "DEPENDENCY_ERROR"
            self.degrade("LLM_UNAVAILABLE", "llm", f"model call failed ({exc.cause})", run.step_id)
        except Exception as exc:  # a bug in one step must not sink the others
            _log.exception(
                "step failed unexpectedly",
                extra={"fields": {"step_id": run.step_id, "cause": type(exc).__name__}},
            )
            run.status, run.failure_reason = Status.FAILED, "INTERNAL_ERROR"
        finally:
            self.router.active_steps -= 1
            run.duration_s = time.monotonic() - started
            span.set_attribute("router.status", run.status.value)
            span.set_attribute("router.result_count", run.result_count)
            span.end()
            self.router._step_duration.record(
                run.duration_s, {"tool": run.tool.value, "status": run.status.value}
            )
            self.emit(StepFinishedEvent(run))
        if run.status in FAILED_STATUSES:
            self.degrade("STEP_FAILED", "router", f"step {run.status.value}", run.step_id)

    def tool_failed(self, run: StepRun, exc: ToolError) -> None:
        if exc.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED) and (
            exc.reason in ("UNKNOWN_DATABASE", "DATABASE_NOT_ALLOWED")
        ):
            if not self.request.options.database:
                # The caller named no database and the tenant has none: not the caller's
                # error. The step fails, the replan answers from documents, and the answer
                # says why it holds no records.
                if run.step_id in self.fallbacks:
                    # the records were only a second try after the documents: they hold
                    # nothing here (no answer is missing for it), and no replan was spent
                    run.status, run.failure_reason = Status.EMPTY, exc.reason
                    self.replans -= 1
                    return
                run.status, run.failure_reason = Status.FAILED, exc.reason
                self.degrade(
                    "NO_DATABASE",
                    "sql",
                    "the tenant has no SQL database it may query; answered from documents",
                    run.step_id,
                )
                return
            try:
                _raise_for_database(exc, self.request.options.database)
            except Exception as fatal:  # surfaced after the wave, outside the task group
                self.fatal = fatal
        if exc.code is grpc.StatusCode.DEADLINE_EXCEEDED:
            run.status, run.failure_reason = Status.TIMED_OUT, "DEADLINE_EXCEEDED"
            return
        run.status = Status.FAILED
        if exc.code is grpc.StatusCode.UNAVAILABLE:
            run.failure_reason = "DEPENDENCY_UNAVAILABLE"
            reason = "RETRIEVAL_UNAVAILABLE" if exc.service == "retrieval" else "SQL_UNAVAILABLE"
            self.degrade(reason, exc.service, f"{exc.service} unreachable", run.step_id)
        else:
            run.failure_reason = exc.reason or "DEPENDENCY_ERROR"

    def summarise(self, step: PlanStep) -> str:
        options = self.request.options
        if step.tool is ToolName.SEMANTIC_SEARCH:
            filters = len(options.categories) + len(options.document_ids)
            summary = f"query_chars={len(step.query)} top_k={options.top_k} filters={filters}"
            if step.scope is not None:
                source = self.runs.get(step.scope.source)
                entities = len(scope_members(step.scope, source)) if source else 0
                summary += (
                    f" scope={step.scope.field} from={step.scope.source} entities={entities}"
                    f" categories={len(step.scope.categories)}"
                )
            return summary
        database = options.database or "default"
        return f"question_chars={len(step.query)} db={database}"

    async def dispatch(self, run: StepRun, step: PlanStep) -> None:
        options = self.request.options
        tenant = self.request.tenant_id
        if step.tool is ToolName.SEMANTIC_SEARCH and step.scope is not None:
            await self.scoped(run, step, step.scope)
            return
        if step.tool is ToolName.SEMANTIC_SEARCH:
            await self.semantic(
                run,
                step.query,
                loop=self.request.mode is not Mode.RETRIEVE,
                unread=self.unread_offline(),
            )
            return
        self.take_tool_call()
        run.attempts += 1
        # Every SQL step is a question: the SQL service links it to the schema.
        # The follow-up's earlier statement belongs to the step that asks the question
        # itself (not to a replanned or decomposed step).
        follow = self.request.builds_on
        own = follow is not None and follow.relation and step.query == self.request.question
        prior = follow if own else None
        outcome = await self.router.sql.ask(
            tenant,
            options.database,
            (prior.question or step.query) if prior is not None else step.query,
            max_rows=options.max_rows,
            prior=prior,
        )
        run.repairs = outcome.repairs
        if (
            not outcome.answered
            and outcome.reason == LANGUAGE_UNSUPPORTED
            and not self.language().english
        ):
            # The SQL service reads the question's language no better than the rules: not
            # a failed step to replan around, but an answer that names the language.
            run.status, run.failure_reason = Status.SKIPPED, LANGUAGE_UNSUPPORTED
            self.unread = self.language()
            return
        if not outcome.answered:
            run.status, run.failure_reason = Status.FAILED, "STEP_FAILED"
            run.declined = outcome.message
            return
        if outcome.degraded:
            self.degrade("LLM_UNAVAILABLE", "sql", "the SQL service fell back to rules")
        run.sql = outcome
        run.result_count = len(outcome.rows)
        if not outcome.rows:
            run.status, run.failure_reason = Status.EMPTY, "STEP_FAILED"
        else:
            run.status = Status.SUCCEEDED

    async def scoped(self, run: StepRun, step: PlanStep, scope: StepScope) -> None:
        """One search per entity of the source step's rows, each kept to that entity's
        documents by a metadata filter; the searches run concurrently. No rewrite loop:
        an entity whose documents do not match is an answer ("does not mention"), not a
        gap to search around."""
        source = self.runs.get(scope.source)
        members = scope_members(scope, source) if source is not None else []
        budget = self.request.options.max_tool_calls - self.tool_calls
        if len(members) > budget:
            members = members[: max(budget, 0)]
            self.cap_hit = True
            self.degrade(
                "TOOL_CALL_LIMIT_REACHED",
                "router",
                "the tool-call cap left too few searches for every entity",
                run.step_id,
            )
        if not members:
            run.status, run.failure_reason = Status.EMPTY, "STEP_FAILED"
            return
        options = self.request.options
        categories = scope.categories or options.categories

        async def one(filters: tuple[tuple[str, Cell], ...]) -> SearchOutcome:
            self.take_tool_call()
            run.attempts += 1
            return await self.router.search.search(
                self.request.tenant_id,
                step.query,
                top_k=options.top_k,
                mode=options.search_mode,
                categories=categories,
                document_ids=options.document_ids,
                metadata={**(options.metadata or {}), **dict(filters)},
            )

        # Every search settles before a failure is raised, so none is left running.
        settled = await asyncio.gather(
            *(one(filters) for _, filters in members), return_exceptions=True
        )
        found: list[SearchOutcome] = []
        for outcome in settled:
            if isinstance(outcome, BaseException):
                raise outcome
            found.append(outcome)
        if any(f.degraded for f in found):
            run.status = Status.DEGRADED
            run.failure_reason = next(f.reason for f in found if f.degraded) or (
                "RETRIEVAL_UNAVAILABLE"
            )
            self.degrade("RETRIEVAL_UNAVAILABLE", "retrieval", "search degraded", run.step_id)
            return
        kept_all: dict[str, Hit] = {}
        held_all: dict[str, Hit] = {}
        results: list[ScopedMember] = []
        for (name, filters), outcome in zip(members, found, strict=True):
            kept, held = self.screen(outcome.hits)
            for hit in held:
                held_all.setdefault(hit.chunk_id, hit)
            for hit in kept:
                kept_all.setdefault(hit.chunk_id, hit)
            results.append(ScopedMember(name, filters, tuple(kept)))
        run.members = tuple(results)
        run.hits = tuple(kept_all.values())
        run.quarantined = tuple(held_all.values())
        run.result_count = len(run.hits)
        if run.hits:
            run.status = Status.SUCCEEDED
        else:
            run.status, run.failure_reason = Status.EMPTY, "STEP_FAILED"

    def screen(self, hits: Sequence[Hit]) -> tuple[list[Hit], list[Hit]]:
        """Split hits into usable and quarantined (HIGH-severity injection findings)."""
        if not self.settings.guardrails.injection_scan:
            return list(hits), []
        kept: list[Hit] = []
        held: list[Hit] = []
        for hit in hits:
            findings = self.findings.get(hit.chunk_id)
            if findings is None:
                findings = _guard.scan(hit.text)
                self.findings[hit.chunk_id] = findings
            (held if any(f.severity == _guard.HIGH for f in findings) else kept).append(hit)
        return kept, held

    async def semantic(
        self, run: StepRun, query: str, *, loop: bool, unread: Language | None = None
    ) -> None:
        """The agentic RAG loop: retrieve, grade, and while the evidence is missing or weak
        rewrite the query from the gaps and the best passages' own words and search again
        (bounded); what every search found relevant is fused into one ranking.

        With ``unread`` (a language the rules do not read, offline) the documents are
        still searched by the question's own words, once, and graded: documents written
        in it may answer. Rewrites would be English; nothing relevant is not a failed
        step but a question in a language the engine does not read."""
        options = self.request.options
        previous: list[str] = []
        best: list[Hit] = []
        found_relevant: list[list[Hit]] = []
        quarantined: dict[str, Hit] = {}
        loop = loop or unread is not None
        rewrites_allowed = self.settings.max_rewrites if loop and unread is None else 0
        for attempt in range(rewrites_allowed + 1):
            self.take_tool_call()
            run.attempts += 1
            found = await self.router.search.search(
                self.request.tenant_id,
                query,
                top_k=options.top_k,
                mode=options.search_mode,
                categories=options.categories,
                document_ids=options.document_ids,
                metadata=options.metadata,
            )
            previous.append(query)
            if found.degraded:
                run.status = Status.DEGRADED
                run.failure_reason = found.reason or "RETRIEVAL_UNAVAILABLE"
                self.degrade("RETRIEVAL_UNAVAILABLE", "retrieval", "search degraded", run.step_id)
                return
            kept, held = self.screen(found.hits)
            for hit in held:
                quarantined.setdefault(hit.chunk_id, hit)
            if kept and not loop:
                best = kept
                break
            shown: tuple[Passage, ...] = ()
            if kept:
                passages = tuple(
                    Passage(str(i), h.text, h.title, h.score) for i, h in enumerate(kept, 1)
                )
                grade = (
                    await self.llm(
                        Role.GRADE, self.router.llm.grade(GradeRequest(run.bound_query, passages))
                    )
                ).output
                marked = {g.passage_id for g in grade.passages if g.relevant}
                relevant = [h for i, h in enumerate(kept, 1) if str(i) in marked]
                if grade.relevant and not grade.passages:
                    relevant = kept
                if grade.relevant and relevant:
                    found_relevant.append(relevant)
                    if grade.score >= STRONG_EVIDENCE:
                        break
                missing = grade.missing_terms
                shown = tuple(p for p, h in zip(passages, kept, strict=True) if h in relevant)
                shown = shown or passages
            else:
                missing = ()
            if attempt >= rewrites_allowed:
                break
            rewrite = (
                await self.llm(
                    Role.REWRITE,
                    self.router.llm.rewrite(
                        RewriteRequest(run.bound_query, tuple(previous), tuple(missing), shown[:3])
                    ),
                )
            ).output
            query = rewrite.query or query
            run.rewrites += 1
        if found_relevant:
            best = _fused(found_relevant)
        run.hits = tuple(best)
        run.quarantined = tuple(quarantined.values())
        run.result_count = len(best)
        if best:
            run.status = Status.SUCCEEDED
        elif unread is not None:
            run.status, run.failure_reason = Status.SKIPPED, LANGUAGE_UNSUPPORTED
            self.unread = unread
        else:
            run.status, run.failure_reason = Status.EMPTY, "STEP_FAILED"

    # ---- handover to synthesis ----------------------------------------------------

    def synthesis(self) -> Synthesis:
        """Synthesis over what this run gathered; called once execution has finished, so
        the state handed over as values no longer changes."""
        return Synthesis(
            request=self.request,
            request_id=self.request_id,
            runs=self.runs,
            current=self.current,
            plan=self.plan_view(),
            klass=self.klass,
            replans=self.replans,
            tool_calls=self.tool_calls,
            deadline_hit=self.deadline_hit,
            cap_hit=self.cap_hit,
            replan_limit_hit=self.replan_limit_hit,
            started=self.started,
            deadline=self.deadline,
            findings=self.findings,
            report=self.report,
            degradations=self.degradations,
            timings=self.timings,
            usage=self.usage,
            guardrails=self.settings.guardrails,
            model=self.router.llm,
            rules=self.router.rules,
            llm=self.llm,
            degrade=self.degrade,
            emit=self.emit,
            timed=self.timed,
        )


def _raise_for_database(exc: ToolError, database: str) -> None:
    if exc.code is grpc.StatusCode.INVALID_ARGUMENT and exc.reason == "UNKNOWN_DATABASE":
        raise InvalidArgument.field(
            "options.database",
            "not a configured SQL database",
            reason="UNKNOWN_DATABASE",
            metadata={"database": database},
        )
    if exc.code is grpc.StatusCode.PERMISSION_DENIED:
        raise PermissionDenied(
            "the tenant may not query this database",
            reason="DATABASE_NOT_ALLOWED",
            metadata={"database": database},
        )


def _fused(rankings: Sequence[Sequence[Hit]]) -> list[Hit]:
    """The loop's searches as one ranking (reciprocal-rank fusion): a passage several
    searches found relevant rises; one found once keeps its place among the rest."""
    scores: dict[str, float] = {}
    hits: dict[str, Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            hits.setdefault(hit.chunk_id, hit)
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1.0 / (_FUSION_K + rank)
    order = list(hits)
    return [hits[c] for c in sorted(order, key=lambda c: (-scores[c], order.index(c)))]


def _classify(steps: Sequence[PlanStep]) -> Klass:
    if len(steps) > 1:
        return Klass.COMPOUND
    return Klass.SEMANTIC if steps[0].tool is ToolName.SEMANTIC_SEARCH else Klass.COUNTABLE


def _route_for(steps: Sequence[PlanStep]) -> Route:
    if len(steps) > 1:
        return Route.COMPOUND
    return Route.AGENTIC if steps[0].tool is ToolName.SEMANTIC_SEARCH else Route.SQL
