"""The one interface the engines program against, whichever model sits behind it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

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
    RouteDecision,
    RouteRequest,
    SqlUnderstanding,
    SynthesizeRequest,
    TableSelection,
    UnderstandSqlRequest,
)


@runtime_checkable
class LlmProvider(Protocol):
    """Every LLM role as one async method with a typed input and a validated output."""

    @property
    def name(self) -> str:
        """Short provider name for spans and logs (``gemini``, ``deterministic``)."""
        ...

    async def route(self, request: RouteRequest) -> LlmResult[RouteDecision]:
        """Retrieve or respond, and the question's class."""
        ...

    async def plan(self, request: PlanRequest) -> LlmResult[Plan]:
        """Tool steps with dependencies for a question."""
        ...

    async def replan(self, request: ReplanRequest) -> LlmResult[Plan]:
        """Remaining steps after a failure, keeping completed work."""
        ...

    async def grade(self, request: GradeRequest) -> LlmResult[Grade]:
        """Relevance of retrieved passages to the question."""
        ...

    async def rewrite(self, request: RewriteRequest) -> LlmResult[Rewrite]:
        """A better search query from the gaps."""
        ...

    async def understand_sql(self, request: UnderstandSqlRequest) -> LlmResult[SqlUnderstanding]:
        """A database question restated as an intent."""
        ...

    async def identify_tables(self, request: IdentifyTablesRequest) -> LlmResult[TableSelection]:
        """The tables a database question needs."""
        ...

    async def generate_sql(self, request: GenerateSqlRequest) -> LlmResult[GeneratedSql]:
        """One read-only SELECT for the question."""
        ...

    async def repair_sql(self, request: RepairSqlRequest) -> LlmResult[GeneratedSql]:
        """A corrected SELECT given the error it hit."""
        ...

    async def synthesize(self, request: SynthesizeRequest) -> LlmResult[Answer]:
        """An answer stated only from the cited evidence."""
        ...

    async def resolve_follow_up(
        self, request: ResolveFollowUpRequest
    ) -> LlmResult[FollowUpRewrite]:
        """A question asked in a conversation as a standalone one (or why it cannot be)."""
        ...

    async def aclose(self) -> None:
        """Release connections; the provider is unusable afterwards."""
        ...
