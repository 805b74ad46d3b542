"""The offline LLM: real, rule-based implementations of every role but the SQL ones.

It is the default when no Gemini key is set and the fallback when Gemini fails, so it
must be useful on its own: lexical routing and decomposition, grading by coverage,
keyword rewriting, and extractive synthesis that never states anything a passage or row
does not. It writes no SQL: text-to-SQL has one engine, the SQL service's rule-based
generator, so the SQL roles here answer "unavailable offline" and the SQL service's
own generator takes over.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TypeVar

from services.common.llm import (
    ROLE_TIERS,
    Answer,
    FollowUpRewrite,
    GeneratedSql,
    GenerateSqlRequest,
    Grade,
    GradeRequest,
    IdentifyTablesRequest,
    LlmResult,
    LlmUnavailable,
    Plan,
    PlanRequest,
    PlanStep,
    QuestionClass,
    RepairSqlRequest,
    ReplanRequest,
    ResolveFollowUpRequest,
    Rewrite,
    RewriteRequest,
    Role,
    RouteAction,
    RouteDecision,
    RouteRequest,
    SqlUnderstanding,
    StepScope,
    SynthesizeRequest,
    TableSelection,
    ToolName,
    UnderstandSqlRequest,
    Usage,
    cap_question,
)
from services.router.offline import _extractive, _followup, _rules

DETERMINISTIC_MODEL = "deterministic"
HELP_ANSWER = (
    "I answer questions about your company's data: ask about accounts, deals, contacts, "
    "activities or products, or about what the documents say."
)
T = TypeVar("T")
# Why every SQL role refuses: the SQL service falls back to its own rule-based generator.
OFFLINE_SQL = "sql_offline"


class DeterministicProvider:
    """Rule-based provider for every role but the SQL ones (see the module note)."""

    @property
    def name(self) -> str:
        return DETERMINISTIC_MODEL

    async def aclose(self) -> None:
        """Nothing to release."""

    def _result(self, role: Role, output: T) -> LlmResult[T]:
        return LlmResult(output, Usage(DETERMINISTIC_MODEL, ROLE_TIERS[role], cost_usd=0.0))

    # ---- routing and planning ------------------------------------------------------

    async def route(self, request: RouteRequest) -> LlmResult[RouteDecision]:
        question = cap_question(request.question)
        question_class = _rules.classify(question)
        if question_class is QuestionClass.CONVERSATIONAL or not question:
            decision = RouteDecision(
                RouteAction.RESPOND,
                QuestionClass.CONVERSATIONAL,
                answer=HELP_ANSWER,
                confidence=0.9,
            )
        else:
            decision = RouteDecision(
                RouteAction.RETRIEVE,
                question_class,
                search_query=_rules.search_query(question),
                confidence=0.7,
            )
        return self._result(Role.ROUTE, decision)

    async def plan(self, request: PlanRequest) -> LlmResult[Plan]:
        question = cap_question(request.question)
        if _rules.is_conversational(question) or not question:
            return self._result(Role.PLAN, Plan((), "Nothing to look up."))
        scoped = _rules.scoped_question(question)
        if scoped is not None and request.max_steps >= 2:
            plan = self._scoped_plan(scoped, request)
            if plan is not None:
                return self._result(Role.PLAN, plan)
        parts = _rules.decompose(question, max_parts=max(1, request.max_steps))
        steps: list[PlanStep] = []
        for index, part in enumerate(parts, start=1):
            step_id = f"s{index}"
            depends: tuple[str, ...] = ()
            query = part.text
            if part.after_previous and steps:
                previous = steps[-1].id
                depends = (previous,)
                query = query.replace("{{s}}", f"{{{{{previous}}}}}")
            steps.append(self._step(step_id, query, depends, request.tools))
        kinds = ", ".join(s.tool.value for s in steps)
        return self._result(Role.PLAN, Plan(tuple(steps), f"{len(steps)} step(s): {kinds}."))

    def _scoped_plan(self, scoped: _rules.ScopedQuestion, request: PlanRequest) -> Plan | None:
        """The set from SQL first, then one search per member of it, kept to that
        member's documents (``None`` when the tools cannot do either half)."""
        if ToolName.SEMANTIC_SEARCH not in request.tools:
            return None
        first = self._step("s1", scoped.set_question, (), request.tools)
        if first.tool is ToolName.SEMANTIC_SEARCH:
            return None
        scope = StepScope(
            source=first.id,
            field=f"{scoped.entity}_id",
            label_field=scoped.entity,
            categories=scoped.categories,
            documents=scoped.documents,
            check_mention=bool(scoped.topic),
            topic=scoped.topic,
        )
        query = scoped.search.replace("{{s}}", f"{{{{{first.id}}}}}")
        second = PlanStep("s2", ToolName.SEMANTIC_SEARCH, query, (first.id,), scope=scope)
        kinds = ", ".join(scoped.categories) or "any kind"
        return Plan(
            (first, second),
            f"2 step(s): {first.tool.value} lists the {scoped.entity} set, then "
            f"semantic_search per {scoped.entity} over its documents ({kinds}).",
        )

    @staticmethod
    def _step(
        step_id: str, query: str, depends: tuple[str, ...], tools: tuple[ToolName, ...]
    ) -> PlanStep:
        """A records question goes to the SQL service as text (it links the schema, not
        the planner); anything else to search."""
        if _rules.classify_simple(query) is QuestionClass.AGGREGATION:
            preferred = [ToolName.SQL_QUESTION, ToolName.SEMANTIC_SEARCH]
        else:
            preferred = [ToolName.SEMANTIC_SEARCH, ToolName.SQL_QUESTION]
        tool = next((t for t in preferred if t in tools), tools[0] if tools else preferred[0])
        return PlanStep(step_id, tool, query, depends)

    async def replan(self, request: ReplanRequest) -> LlmResult[Plan]:
        done = {o.step_id for o in request.outcomes if o.succeeded}
        # Steps that already failed were replaced by an earlier replan.
        finished = {o.step_id for o in request.outcomes}
        failed = next((s for s in request.plan.steps if s.id == request.failed_step_id), None)
        if failed is None:
            return self._result(Role.REPLAN, Plan((), "The failed step is not in the plan."))
        taken = {s.id for s in request.plan.steps} | finished  # every id of this run
        replacement = self._alternative(failed, request.tools, taken)
        steps: list[PlanStep] = []
        if replacement is not None:
            steps.append(replacement)
        for step in request.plan.steps:
            if step.id in finished or step.id == failed.id:
                continue
            depends = tuple(
                (replacement.id if replacement is not None else d) if d == failed.id else d
                for d in step.depends_on
            )
            if replacement is None and failed.id in step.depends_on:
                continue  # nothing can stand in for what this step needed
            query = step.query
            if replacement is not None:
                query = query.replace(f"{{{{{failed.id}}}}}", f"{{{{{replacement.id}}}}}")
            scope = step.scope
            if scope is not None and replacement is not None and scope.source == failed.id:
                scope = dataclasses.replace(scope, source=replacement.id)
            steps.append(dataclasses.replace(step, query=query, depends_on=depends, scope=scope))
        rationale = (
            f"Replaced {failed.id} ({failed.tool.value}) with {replacement.id} "
            f"({replacement.tool.value}); kept {len(done)} completed step(s)."
            if replacement is not None
            else f"No alternative for {failed.id}; kept {len(done)} completed step(s)."
        )
        return self._result(Role.REPLAN, Plan(tuple(steps), rationale))

    @staticmethod
    def _alternative(
        failed: PlanStep, tools: tuple[ToolName, ...], taken: set[str]
    ) -> PlanStep | None:
        """The other engine first, then the search again as keywords.

        Intent → free-form SQL → semantic search. A question of its own (no earlier
        result bound in, no scope) that the documents could not answer goes to the
        records next: "Which teachers teach Math?" has no countable cue, but the
        warehouse may hold exactly that (the SQL service refuses what its schema does
        not say); if that fails too, the search is retried as keywords. A search bound
        to earlier results is retried as keywords only.
        """
        base_id = re.sub(r"r\d+$", "", failed.id)
        suffix = 1
        while f"{base_id}r{suffix}" in taken:
            suffix += 1
        new_id = f"{base_id}r{suffix}"
        own_question = not failed.depends_on and failed.scope is None
        chain = {
            ToolName.SQL_INTENT: [ToolName.SQL_QUESTION, ToolName.SEMANTIC_SEARCH],
            ToolName.SQL_QUESTION: [ToolName.SEMANTIC_SEARCH] if suffix == 1 else [],
            ToolName.SEMANTIC_SEARCH: [ToolName.SQL_QUESTION] if suffix == 1 and own_question
            else [],
        }[failed.tool]  # fmt: skip
        for tool in chain:
            if tool in tools:
                return PlanStep(new_id, tool, failed.query, failed.depends_on)
        searched_first = (
            failed.tool is ToolName.SEMANTIC_SEARCH and suffix == 1 and not own_question
        ) or (failed.tool is ToolName.SQL_QUESTION and suffix == 2)
        if searched_first and ToolName.SEMANTIC_SEARCH in tools:
            query = _extractive.rewrite(failed.query, (failed.query,), ()).query
            # Keep the bindings of earlier results the original query relied on.
            bindings = re.findall(r"\{\{[^}]+\}\}", failed.query)
            query = " ".join([query, *bindings])
            return PlanStep(
                new_id, ToolName.SEMANTIC_SEARCH, query, failed.depends_on, scope=failed.scope
            )
        return None

    # ---- the agentic RAG loop ------------------------------------------------------

    async def grade(self, request: GradeRequest) -> LlmResult[Grade]:
        question = cap_question(request.question)
        return self._result(Role.GRADE, _extractive.grade(question, request.passages))

    async def rewrite(self, request: RewriteRequest) -> LlmResult[Rewrite]:
        question = cap_question(request.question)
        result = _extractive.rewrite(
            question, request.previous_queries, request.missing_terms, request.passages
        )
        return self._result(Role.REWRITE, result)

    async def resolve_follow_up(
        self, request: ResolveFollowUpRequest
    ) -> LlmResult[FollowUpRewrite]:
        resolution = _followup.resolve(cap_question(request.question), request.history)
        rewrite = FollowUpRewrite(resolution.kind.value, resolution.question, resolution.reason)
        return self._result(Role.RESOLVE_FOLLOW_UP, rewrite)

    async def synthesize(self, request: SynthesizeRequest) -> LlmResult[Answer]:
        question = cap_question(request.question)
        answer = _extractive.synthesize(
            question, request.passages, request.rows, request.partial, request.mention
        )
        return self._result(Role.SYNTHESIZE, answer)

    # ---- text to SQL ---------------------------------------------------------------

    async def understand_sql(self, request: UnderstandSqlRequest) -> LlmResult[SqlUnderstanding]:
        raise _offline(Role.UNDERSTAND_SQL)

    async def identify_tables(self, request: IdentifyTablesRequest) -> LlmResult[TableSelection]:
        raise _offline(Role.IDENTIFY_TABLES)

    async def generate_sql(self, request: GenerateSqlRequest) -> LlmResult[GeneratedSql]:
        raise _offline(Role.GENERATE_SQL)

    async def repair_sql(self, request: RepairSqlRequest) -> LlmResult[GeneratedSql]:
        raise _offline(Role.REPAIR_SQL)


def _offline(role: Role) -> LlmUnavailable:
    return LlmUnavailable(f"{role.value} is unavailable offline", cause=OFFLINE_SQL)
