"""What every model-backed provider does the same way, whichever wire it speaks.

Each role call: fence the inputs (fresh sentinel), build the role's prompt, ask the role's
tier for JSON against the output type's schema, repair and validate the reply, re-ask once
on a violation, and put metadata only (provider, model, tier, tokens, cost, outcome,
duration) on a span. A subclass supplies the one thing that differs, how a conversation is
sent and its text read back (:meth:`ModelProvider._complete`), with its own retries.
Keeping the rest here means Gemini and an OpenAI-compatible server can never drift apart
on the checks that keep a model's answer honest.
"""

from __future__ import annotations

import contextlib
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from opentelemetry import trace

from services.common.llm._errors import LlmError, LlmOutputInvalid
from services.common.llm._fence import Fence, cap
from services.common.llm._jsonrepair import JsonRepairError, parse_output
from services.common.llm._prices import ModelPrice, estimate_cost
from services.common.llm._prompts import Prompt, RoleRequest, build_prompt
from services.common.llm._schema import SchemaViolation
from services.common.llm._settings import LlmSettings
from services.common.llm._types import (
    ROLE_TIERS,
    Answer,
    FollowUpKind,
    FollowUpRewrite,
    GeneratedSql,
    GenerateSqlRequest,
    Grade,
    GradeRequest,
    IdentifyTablesRequest,
    LlmResult,
    Plan,
    PlanRequest,
    RepairSqlRequest,
    ReplanRequest,
    ResolveFollowUpRequest,
    Rewrite,
    RewriteRequest,
    Role,
    RouteDecision,
    RouteRequest,
    SqlUnderstanding,
    SynthesizeRequest,
    TableSelection,
    Tier,
    ToolName,
    UnderstandSqlRequest,
    Usage,
)

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# A rewritten follow-up is one question: it may name a few members, never an essay.
MAX_REWRITTEN_CHARS = 4000
# The model's broken reply as quoted back in the re-ask.
REASK_QUOTE_CHARS = 8000


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation sent to a model: the user's, or the model's own."""

    speaker: Literal["user", "model"]
    text: str


@dataclass
class Tally:
    """What one role call has spent so far, across retries and the re-ask."""

    model: str
    tier: Tier
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    retries: int = 0
    reasked: bool = False

    def add(self, input_tokens: int, output_tokens: int) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def usage(self, prices: Mapping[str, ModelPrice]) -> Usage:
        return Usage(
            model=self.model,
            tier=self.tier,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=estimate_cost(self.model, self.input_tokens, self.output_tokens, prices),
            calls=self.calls,
            retries=self.retries,
            reasked=self.reasked,
        )


class ModelProvider(ABC):
    """Every role on a language model; subclasses speak the wire (``_complete``)."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        models: Mapping[Tier, str],
        tracer: trace.Tracer | None,
        prices: Mapping[str, ModelPrice],
    ) -> None:
        self._settings = settings
        self._tracer = tracer
        self._prices = prices
        self._random = random.Random()
        self._models = dict(models)

    @property
    @abstractmethod
    def name(self) -> str:
        """Short provider name for spans, logs and degraded reasons."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release the HTTP client; the provider is unusable afterwards."""

    @abstractmethod
    async def _complete(
        self, system: str, turns: list[Turn], output_type: type[Any], tally: Tally
    ) -> str:
        """The model's reply text to ``turns`` under ``system``, asked for JSON matching
        ``output_type``; retries, timeouts and token counts (into ``tally``) are the
        subclass's, failures raise :class:`LlmError` with a content-free cause."""

    def model_for(self, role: Role) -> tuple[str, Tier]:
        """The model and tier a role runs on."""
        tier = ROLE_TIERS[role]
        return self._models[tier], tier

    # ---- roles -------------------------------------------------------------------

    async def route(self, request: RouteRequest) -> LlmResult[RouteDecision]:
        return await self._run(Role.ROUTE, request, RouteDecision)

    async def plan(self, request: PlanRequest) -> LlmResult[Plan]:
        return await self._run(Role.PLAN, request, Plan, lambda p: _check_plan(p, request))

    async def replan(self, request: ReplanRequest) -> LlmResult[Plan]:
        done = {o.step_id for o in request.outcomes if o.succeeded}
        return await self._run(
            Role.REPLAN, request, Plan, lambda p: _check_replan(p, request.tools, done)
        )

    async def grade(self, request: GradeRequest) -> LlmResult[Grade]:
        return await self._run(Role.GRADE, request, Grade)

    async def rewrite(self, request: RewriteRequest) -> LlmResult[Rewrite]:
        return await self._run(Role.REWRITE, request, Rewrite)

    async def understand_sql(self, request: UnderstandSqlRequest) -> LlmResult[SqlUnderstanding]:
        return await self._run(Role.UNDERSTAND_SQL, request, SqlUnderstanding)

    async def identify_tables(self, request: IdentifyTablesRequest) -> LlmResult[TableSelection]:
        known = {t.name.lower() for t in request.schema.tables}

        def check(selection: TableSelection) -> str | None:
            unknown = [t for t in selection.tables if t.lower() not in known]
            return f"{len(unknown)} table name(s) are not in the schema" if unknown else None

        return await self._run(Role.IDENTIFY_TABLES, request, TableSelection, check)

    async def generate_sql(self, request: GenerateSqlRequest) -> LlmResult[GeneratedSql]:
        return await self._run(Role.GENERATE_SQL, request, GeneratedSql)

    async def repair_sql(self, request: RepairSqlRequest) -> LlmResult[GeneratedSql]:
        return await self._run(Role.REPAIR_SQL, request, GeneratedSql)

    async def resolve_follow_up(
        self, request: ResolveFollowUpRequest
    ) -> LlmResult[FollowUpRewrite]:
        kinds = {kind.value for kind in FollowUpKind}

        def check(rewrite: FollowUpRewrite) -> str | None:
            if rewrite.kind not in kinds:
                return f"kind must be one of {sorted(kinds)}"
            if not rewrite.question.strip():
                return "question must not be empty"
            if len(rewrite.question) > MAX_REWRITTEN_CHARS:
                return f"question must be at most {MAX_REWRITTEN_CHARS} characters"
            return None

        return await self._run(Role.RESOLVE_FOLLOW_UP, request, FollowUpRewrite, check)

    async def synthesize(self, request: SynthesizeRequest) -> LlmResult[Answer]:
        return await self._run(Role.SYNTHESIZE, request, Answer)

    # ---- one role call -----------------------------------------------------------

    async def _run(
        self,
        role: Role,
        request: RoleRequest,
        output_type: type[T],
        check: Callable[[T], str | None] | None = None,
    ) -> LlmResult[T]:
        model, tier = self.model_for(role)
        fence = Fence(enabled=self._settings.fence_untrusted)  # fresh sentinel per request
        prompt = build_prompt(role, request, fence, restate_rules=self._settings.restate_rules)
        tally = Tally(model, tier)
        attributes: dict[str, Any] = {
            "llm.provider": self.name,
            "llm.role": role.value,
            "llm.model": model,
            "llm.tier": tier.value,
            "llm.question_chars": len(request.question),
            "llm.prompt_chars": len(prompt.system) + len(prompt.user),
        }
        started = time.monotonic()
        outcome = "aborted"  # cancelled or an unexpected error, unless set below
        with self._span(role) as (span, owned):
            try:
                output = await self._ask(prompt, output_type, tally, check)
                outcome = "ok"
            except LlmError as exc:
                outcome = exc.cause
                raise
            finally:
                usage = tally.usage(self._prices)
                attributes |= _usage_attributes(usage)
                attributes["llm.outcome"] = outcome
                attributes["llm.duration_ms"] = round((time.monotonic() - started) * 1000, 1)
                if owned:
                    span.set_attributes(attributes)
                    if outcome != "ok":
                        span.set_status(trace.Status(trace.StatusCode.ERROR, outcome))
                else:
                    span.add_event("llm.call", attributes)
        return LlmResult(output, usage)

    @contextlib.contextmanager
    def _span(self, role: Role) -> Iterator[tuple[trace.Span, bool]]:
        """A child span when a tracer was given, else the caller's span (for an event)."""
        if self._tracer is None:
            yield trace.get_current_span(), False
            return
        with self._tracer.start_as_current_span(
            f"llm.{role.value}", record_exception=False, set_status_on_exception=False
        ) as span:
            yield span, True

    async def _ask(
        self,
        prompt: Prompt,
        output_type: type[T],
        tally: Tally,
        check: Callable[[T], str | None] | None,
    ) -> T:
        turns = [Turn("user", prompt.user)]
        for ask in range(2):
            text = await self._complete(prompt.system, turns, output_type, tally)
            problem: str
            try:
                output = parse_output(output_type, text)
            except SchemaViolation as exc:
                problem = str(exc)
            except JsonRepairError as exc:
                problem = f"not JSON ({exc})"
            else:
                semantic = check(output) if check is not None else None
                if semantic is None:
                    return output
                problem = semantic
            if ask == 1:
                break
            tally.reasked = True
            turns = [
                *turns,
                Turn("model", cap(text, REASK_QUOTE_CHARS)),
                Turn(
                    "user",
                    f"Your reply broke the response schema: {problem}. "
                    "Reply again with only the corrected JSON object.",
                ),
            ]
        raise LlmOutputInvalid(
            f"{self.name}'s reply broke its schema twice",
            cause="invalid_output",
            usage=tally.usage(self._prices),
        )

    def _backoff(self, attempt: int) -> float:
        """Exponential with jitter in [50%, 100%], capped at ``backoff_max_s``."""
        ceiling = min(
            self._settings.backoff_max_s, self._settings.backoff_initial_s * (2.0**attempt)
        )
        return ceiling * (0.5 + 0.5 * self._random.random())


SleepFn = Callable[[float], Awaitable[None]]


def _usage_attributes(usage: Usage) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "llm.input_tokens": usage.input_tokens,
        "llm.output_tokens": usage.output_tokens,
        "llm.calls": usage.calls,
        "llm.retries": usage.retries,
        "llm.reasked": usage.reasked,
    }
    if usage.cost_usd is not None:
        attributes["llm.cost_usd"] = usage.cost_usd
    return attributes


def _check_plan(plan: Plan, request: PlanRequest) -> str | None:
    if len(plan.steps) > request.max_steps:
        return f"the plan has {len(plan.steps)} steps, more than {request.max_steps}"
    return _check_steps(plan, request.tools, set())


def _check_replan(plan: Plan, tools: tuple[ToolName, ...], done: set[str]) -> str | None:
    repeated = [s.id for s in plan.steps if s.id in done]
    if repeated:
        return f"{len(repeated)} step(s) repeat completed work"
    return _check_steps(plan, tools, done)


def _check_steps(plan: Plan, tools: tuple[ToolName, ...], done: set[str]) -> str | None:
    seen: set[str] = set(done)
    for index, step in enumerate(plan.steps):
        if step.tool not in tools:
            return f"steps[{index}] uses a tool that is not available"
        if step.id in seen:
            return f"steps[{index}] reuses an id"
        if any(d not in seen for d in step.depends_on):
            return f"steps[{index}] depends on a step that does not come before it"
        seen.add(step.id)
    return None
