"""One span and one set of measurements per model call, whichever provider answers.

:class:`ObservedProvider` wraps any :class:`LlmProvider`. Each role call gets a
span named for its node (``llm.plan``, ``llm.grade``, ``llm.rewrite``, ``llm.synthesize``,
``llm.generate_sql``, …) carrying role, provider, model, tier, token counts, the cost estimate
and whether a fallback answered (with the cause as a short label), and feeds the
``tandem.llm.*`` metrics by role and tier. Prompts, questions and outputs never go in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from opentelemetry import trace

from services.common._observability import (
    LLM_COST_USD,
    LLM_DEGRADED,
    LLM_DEGRADED_REASON,
    LLM_INPUT_TOKENS,
    LLM_MODEL,
    LLM_OUTPUT_TOKENS,
    LLM_PROVIDER,
    LLM_ROLE,
    LLM_TIER,
    Metrics,
    node_span,
    token,
)
from services.common.llm._errors import LlmError
from services.common.llm._interface import LlmProvider
from services.common.llm._types import (
    Answer,
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
    UnderstandSqlRequest,
    Usage,
)

T = TypeVar("T")


def degraded_cause(reason: str | None) -> str:
    """``"gemini: timeout"`` → ``"timeout"``: the label, as a short token."""
    label = (reason or "").rsplit(":", 1)[-1].strip()
    return token(label, "fallback") if label else "fallback"


class ObservedProvider:
    """``inner`` with a span and metrics around every role call."""

    def __init__(
        self, inner: LlmProvider, *, tracer: trace.Tracer, metrics: Metrics | None = None
    ) -> None:
        self._inner = inner
        self._tracer = tracer
        self._metrics = metrics or Metrics()

    @property
    def name(self) -> str:
        return self._inner.name

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def _call(
        self, role: Role, question_chars: int, call: Callable[[], Awaitable[LlmResult[T]]]
    ) -> LlmResult[T]:
        attributes = {
            LLM_ROLE: role.value,
            LLM_PROVIDER: token(self._inner.name),
            "llm.question_chars": question_chars,
        }
        with node_span(self._tracer, f"llm.{role.value}", attributes) as span:
            try:
                result = await call()
            except LlmError as exc:
                span.set_attribute("llm.outcome", token(exc.cause))
                if exc.usage is not None:
                    self._record(span, role, exc.usage, degraded=False)
                raise
            self._record(span, role, result.usage, degraded=result.degraded)
            if result.degraded:
                span.set_attribute(LLM_DEGRADED_REASON, degraded_cause(result.degraded_reason))
            span.set_attribute("llm.outcome", "ok")
            return result

    def _record(self, span: trace.Span, role: Role, usage: Usage, *, degraded: bool) -> None:
        tier = usage.tier.value
        span.set_attributes(
            {
                LLM_MODEL: token(usage.model),
                LLM_TIER: tier,
                LLM_INPUT_TOKENS: usage.input_tokens,
                LLM_OUTPUT_TOKENS: usage.output_tokens,
                LLM_DEGRADED: degraded,
            }
        )
        if usage.cost_usd is not None:
            span.set_attribute(LLM_COST_USD, usage.cost_usd)
        self._metrics.llm_call(
            role=role.value,
            tier=tier,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
            degraded=degraded,
        )

    async def route(self, request: RouteRequest) -> LlmResult[RouteDecision]:
        return await self._call(
            Role.ROUTE, len(request.question), lambda: self._inner.route(request)
        )

    async def plan(self, request: PlanRequest) -> LlmResult[Plan]:
        return await self._call(Role.PLAN, len(request.question), lambda: self._inner.plan(request))

    async def replan(self, request: ReplanRequest) -> LlmResult[Plan]:
        return await self._call(
            Role.REPLAN, len(request.question), lambda: self._inner.replan(request)
        )

    async def grade(self, request: GradeRequest) -> LlmResult[Grade]:
        return await self._call(
            Role.GRADE, len(request.question), lambda: self._inner.grade(request)
        )

    async def rewrite(self, request: RewriteRequest) -> LlmResult[Rewrite]:
        return await self._call(
            Role.REWRITE, len(request.question), lambda: self._inner.rewrite(request)
        )

    async def understand_sql(self, request: UnderstandSqlRequest) -> LlmResult[SqlUnderstanding]:
        return await self._call(
            Role.UNDERSTAND_SQL,
            len(request.question),
            lambda: self._inner.understand_sql(request),
        )

    async def identify_tables(self, request: IdentifyTablesRequest) -> LlmResult[TableSelection]:
        return await self._call(
            Role.IDENTIFY_TABLES,
            len(request.question),
            lambda: self._inner.identify_tables(request),
        )

    async def generate_sql(self, request: GenerateSqlRequest) -> LlmResult[GeneratedSql]:
        return await self._call(
            Role.GENERATE_SQL, len(request.question), lambda: self._inner.generate_sql(request)
        )

    async def repair_sql(self, request: RepairSqlRequest) -> LlmResult[GeneratedSql]:
        return await self._call(
            Role.REPAIR_SQL, len(request.question), lambda: self._inner.repair_sql(request)
        )

    async def resolve_follow_up(
        self, request: ResolveFollowUpRequest
    ) -> LlmResult[FollowUpRewrite]:
        return await self._call(
            Role.RESOLVE_FOLLOW_UP,
            len(request.question),
            lambda: self._inner.resolve_follow_up(request),
        )

    async def synthesize(self, request: SynthesizeRequest) -> LlmResult[Answer]:
        return await self._call(
            Role.SYNTHESIZE, len(request.question), lambda: self._inner.synthesize(request)
        )
