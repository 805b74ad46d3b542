"""Fail open, visibly: when the model fails, the rule-based provider answers that call.

The result says so (``degraded`` with a reason), the operator gets one warning log line
and a span event; none of them carries question text, only role, cause and sizes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from opentelemetry import trace

from services.common.llm._errors import LlmError
from services.common.llm._interface import LlmProvider
from services.common.llm._prompts import RoleRequest
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
)

R = TypeVar("R", bound=RoleRequest)
T = TypeVar("T")

_default_log = logging.getLogger(__name__)


class FallbackProvider:
    """``primary`` for every role; on an LLM error, ``fallback`` for that call only."""

    def __init__(
        self,
        primary: LlmProvider,
        fallback: LlmProvider,
        *,
        logger: logging.Logger | None = None,
    ) -> None:
        self._primary = primary
        self._fallback = fallback
        self._log = logger or _default_log

    @property
    def name(self) -> str:
        return f"{self._primary.name}+{self._fallback.name}"

    async def aclose(self) -> None:
        try:
            await self._primary.aclose()
        finally:
            await self._fallback.aclose()

    async def _call(
        self,
        role: Role,
        request: R,
        primary: Callable[[R], Awaitable[LlmResult[T]]],
        fallback: Callable[[R], Awaitable[LlmResult[T]]],
    ) -> LlmResult[T]:
        try:
            return await primary(request)
        except LlmError as exc:
            reason = f"{self._primary.name}: {exc.cause}"
            spent_in = exc.usage.input_tokens if exc.usage else 0
            spent_out = exc.usage.output_tokens if exc.usage else 0
            fields = {
                "role": role.value,
                "cause": exc.cause,
                "primary": self._primary.name,
                "fallback": self._fallback.name,
                "question_chars": len(request.question),
                "primary_input_tokens": spent_in,
                "primary_output_tokens": spent_out,
            }
            self._log.warning("llm call failed; answered by fallback", extra={"fields": fields})
            trace.get_current_span().add_event(
                "llm.fallback", {f"llm.{k}": v for k, v in fields.items()}
            )
            result = await fallback(request)
            return dataclasses.replace(result, degraded=True, degraded_reason=reason)

    async def route(self, request: RouteRequest) -> LlmResult[RouteDecision]:
        return await self._call(Role.ROUTE, request, self._primary.route, self._fallback.route)

    async def plan(self, request: PlanRequest) -> LlmResult[Plan]:
        return await self._call(Role.PLAN, request, self._primary.plan, self._fallback.plan)

    async def replan(self, request: ReplanRequest) -> LlmResult[Plan]:
        return await self._call(Role.REPLAN, request, self._primary.replan, self._fallback.replan)

    async def grade(self, request: GradeRequest) -> LlmResult[Grade]:
        return await self._call(Role.GRADE, request, self._primary.grade, self._fallback.grade)

    async def rewrite(self, request: RewriteRequest) -> LlmResult[Rewrite]:
        return await self._call(
            Role.REWRITE, request, self._primary.rewrite, self._fallback.rewrite
        )

    async def understand_sql(self, request: UnderstandSqlRequest) -> LlmResult[SqlUnderstanding]:
        return await self._call(
            Role.UNDERSTAND_SQL,
            request,
            self._primary.understand_sql,
            self._fallback.understand_sql,
        )

    async def identify_tables(self, request: IdentifyTablesRequest) -> LlmResult[TableSelection]:
        return await self._call(
            Role.IDENTIFY_TABLES,
            request,
            self._primary.identify_tables,
            self._fallback.identify_tables,
        )

    async def generate_sql(self, request: GenerateSqlRequest) -> LlmResult[GeneratedSql]:
        return await self._call(
            Role.GENERATE_SQL, request, self._primary.generate_sql, self._fallback.generate_sql
        )

    async def repair_sql(self, request: RepairSqlRequest) -> LlmResult[GeneratedSql]:
        return await self._call(
            Role.REPAIR_SQL, request, self._primary.repair_sql, self._fallback.repair_sql
        )

    async def resolve_follow_up(
        self, request: ResolveFollowUpRequest
    ) -> LlmResult[FollowUpRewrite]:
        return await self._call(
            Role.RESOLVE_FOLLOW_UP,
            request,
            self._primary.resolve_follow_up,
            self._fallback.resolve_follow_up,
        )

    async def synthesize(self, request: SynthesizeRequest) -> LlmResult[Answer]:
        return await self._call(
            Role.SYNTHESIZE, request, self._primary.synthesize, self._fallback.synthesize
        )
