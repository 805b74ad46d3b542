"""The offline LLM: real, rule-based implementations of every role.

It is the default when no Gemini key is set and the fallback when Gemini fails, so it
must be useful on its own: lexical routing and decomposition, schema linking to
structured intents compiled by sqlglot, grading by coverage, keyword rewriting, and
extractive synthesis that never states anything a passage or row does not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import TypeVar

import sqlglot
from sqlglot import exp

from services.common.llm import _extractive, _rules
from services.common.llm._fence import cap_question
from services.common.llm._intent_sql import IntentError, compile_intent
from services.common.llm._interface import Embedder
from services.common.llm._linking import (
    Linked,
    SchemaLinker,
    Vocabulary,
    cosine,
    table_description,
)
from services.common.llm._text import closest
from services.common.llm._types import (
    ROLE_TIERS,
    Answer,
    GeneratedSql,
    GenerateSqlRequest,
    Grade,
    GradeRequest,
    IdentifyTablesRequest,
    LlmResult,
    Plan,
    PlanRequest,
    PlanStep,
    QuestionClass,
    RepairSqlRequest,
    ReplanRequest,
    Rewrite,
    RewriteRequest,
    Role,
    RouteAction,
    RouteDecision,
    RouteRequest,
    SchemaCatalog,
    SqlUnderstanding,
    StepScope,
    SynthesizeRequest,
    TableSelection,
    ToolName,
    UnderstandSqlRequest,
    Usage,
)

DETERMINISTIC_MODEL = "deterministic"
HELP_ANSWER = (
    "I answer questions about your company's data: ask about accounts, deals, contacts, "
    "activities or products, or about what the documents say."
)
INTENT_CONFIDENCE = 0.7

_log = logging.getLogger(__name__)
T = TypeVar("T")
_CACHE_SIZE = 8


def utc_today() -> date:
    """Today in UTC: what relative dates ("last quarter") are anchored to by default."""
    return datetime.now(UTC).date()


class DeterministicProvider:
    """Rule-based provider; ``today`` anchors relative dates, ``embedder`` is optional."""

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        today: Callable[[], date] = utc_today,
    ) -> None:
        self._embedder = embedder
        self._today = today
        self._table_vectors: OrderedDict[str, dict[str, list[float]]] = OrderedDict()
        self._vocabularies: OrderedDict[SchemaCatalog, Vocabulary] = OrderedDict()

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
            plan = await self._scoped_plan(scoped, request)
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
            steps.append(await self._step(step_id, query, depends, request.tools, request.schema))
        kinds = ", ".join(s.tool.value for s in steps)
        return self._result(Role.PLAN, Plan(tuple(steps), f"{len(steps)} step(s): {kinds}."))

    async def _scoped_plan(
        self, scoped: _rules.ScopedQuestion, request: PlanRequest
    ) -> Plan | None:
        """The set from SQL first, then one search per member of it, kept to that
        member's documents (``None`` when the tools cannot do either half)."""
        if ToolName.SEMANTIC_SEARCH not in request.tools:
            return None
        first = await self._step("s1", scoped.set_question, (), request.tools, request.schema)
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

    async def _step(
        self,
        step_id: str,
        query: str,
        depends: tuple[str, ...],
        tools: tuple[ToolName, ...],
        schema: SchemaCatalog | None,
    ) -> PlanStep:
        question_class = _rules.classify_simple(query)
        if (
            question_class is QuestionClass.SEMANTIC
            and schema is not None
            and _rules.semantic_score(query) == 0
            and "{{" not in query
        ):
            # No reading cue and the schema explains every word: it is a records question.
            linked = await self._link(query, schema)
            if linked.intent is not None and linked.confidence >= 0.9:
                question_class = QuestionClass.AGGREGATION
        if question_class is QuestionClass.AGGREGATION:
            if schema is not None and ToolName.SQL_INTENT in tools and "{{" not in query:
                linked = await self._link(query, schema)
                if linked.intent is not None and linked.confidence >= INTENT_CONFIDENCE:
                    return PlanStep(step_id, ToolName.SQL_INTENT, query, depends, linked.intent)
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
        taken = {s.id for s in request.plan.steps}
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
        """Intent → free-form SQL → semantic search; a failed search is retried as keywords."""
        base_id = re.sub(r"r\d+$", "", failed.id)
        suffix = 1
        while f"{base_id}r{suffix}" in taken:
            suffix += 1
        new_id = f"{base_id}r{suffix}"
        chain = {
            ToolName.SQL_INTENT: [ToolName.SQL_QUESTION, ToolName.SEMANTIC_SEARCH],
            ToolName.SQL_QUESTION: [ToolName.SEMANTIC_SEARCH],
            ToolName.SEMANTIC_SEARCH: [],
        }[failed.tool]
        for tool in chain:
            if tool in tools:
                return PlanStep(new_id, tool, failed.query, failed.depends_on)
        if (
            failed.tool is ToolName.SEMANTIC_SEARCH
            and suffix == 1
            and ToolName.SEMANTIC_SEARCH in tools
        ):
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
        result = _extractive.rewrite(question, request.previous_queries, request.missing_terms)
        return self._result(Role.REWRITE, result)

    async def synthesize(self, request: SynthesizeRequest) -> LlmResult[Answer]:
        question = cap_question(request.question)
        answer = _extractive.synthesize(
            question, request.passages, request.rows, request.partial, request.mention
        )
        return self._result(Role.SYNTHESIZE, answer)

    # ---- text to SQL ---------------------------------------------------------------

    async def understand_sql(self, request: UnderstandSqlRequest) -> LlmResult[SqlUnderstanding]:
        linked = await self._link(cap_question(request.question), request.schema)
        restatement = linked.restatement or "The question could not be linked to the schema."
        return self._result(
            Role.UNDERSTAND_SQL, SqlUnderstanding(restatement, linked.intent, linked.confidence)
        )

    async def identify_tables(self, request: IdentifyTablesRequest) -> LlmResult[TableSelection]:
        linked = await self._link(cap_question(request.question), request.schema)
        return self._result(
            Role.IDENTIFY_TABLES, TableSelection(tuple(linked.tables), linked.confidence)
        )

    async def generate_sql(self, request: GenerateSqlRequest) -> LlmResult[GeneratedSql]:
        question = cap_question(request.question)
        linked = await self._link(question, request.schema)
        return self._result(
            Role.GENERATE_SQL, self._compile(linked, request.schema, request.row_limit)
        )

    def _compile(self, linked: Linked, schema: SchemaCatalog, row_limit: int) -> GeneratedSql:
        if linked.intent is None:
            return GeneratedSql(None, "The question names nothing in this schema.")
        try:
            sql = compile_intent(linked.intent, schema, row_limit=row_limit)
        except IntentError as exc:
            return GeneratedSql(None, f"The linked intent does not compile: {exc}.")
        return GeneratedSql(
            sql, linked.restatement, tuple(linked.tables), linked.intent, linked.confidence
        )

    async def repair_sql(self, request: RepairSqlRequest) -> LlmResult[GeneratedSql]:
        question = cap_question(request.question)
        fixed = _repair_names(request.sql, request.error, request.schema)
        if fixed is not None and _normalise(fixed) != _normalise(request.sql):
            repaired = GeneratedSql(
                fixed, "Replaced a name the database did not know with the closest catalog name."
            )
            return self._result(Role.REPAIR_SQL, repaired)
        fresh = self._compile(
            await self._link(question, request.schema), request.schema, request.row_limit
        )
        if fresh.sql is not None and _normalise(fresh.sql) == _normalise(request.sql):
            fresh = GeneratedSql(None, "The rule-based generator has no different query to offer.")
        return self._result(Role.REPAIR_SQL, fresh)

    # ---- linking with optional embeddings ------------------------------------------

    async def _link(self, question: str, schema: SchemaCatalog) -> Linked:
        similarity = await self._similarity(question, schema)
        return SchemaLinker(schema, self._today, similarity, self._vocabulary(schema)).link(
            question
        )

    def _vocabulary(self, schema: SchemaCatalog) -> Vocabulary:
        """Built once per catalog: the SQL service sends the same catalog every call."""
        vocabulary = self._vocabularies.get(schema)
        if vocabulary is None:
            vocabulary = Vocabulary(schema)
            self._vocabularies[schema] = vocabulary
            while len(self._vocabularies) > _CACHE_SIZE:
                self._vocabularies.popitem(last=False)
        self._vocabularies.move_to_end(schema)
        return vocabulary

    async def _similarity(self, question: str, schema: SchemaCatalog) -> dict[str, float]:
        if self._embedder is None or not schema.tables:
            return {}
        descriptions = [table_description(t) for t in schema.tables]
        key = hashlib.sha256("\n".join(descriptions).encode()).hexdigest()
        try:
            vectors = self._table_vectors.get(key)
            if vectors is None:
                embedded = await self._embedder.embed_queries(descriptions)
                vectors = {t.name: v for t, v in zip(schema.tables, embedded, strict=True)}
                self._table_vectors[key] = vectors
                while len(self._table_vectors) > _CACHE_SIZE:
                    self._table_vectors.popitem(last=False)
            self._table_vectors.move_to_end(key)
            (query_vector,) = await self._embedder.embed_queries([question])
        except Exception as exc:  # fail open: lexical linking still works
            _log.warning(
                "schema linking embeddings unavailable; lexical only",
                extra={"fields": {"cause": type(exc).__name__, "tables": len(schema.tables)}},
            )
            return {}
        return {name: cosine(query_vector, vector) for name, vector in vectors.items()}


def _normalise(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip().rstrip(";").lower()


_MISSING_NAME = re.compile(
    r'(column|relation|table)\s+"?([\w.]+)"?\s+does not exist'
    r"|unknown (column|table)[:\s]+\"?([\w.]+)\"?"
    r"|no such (column|table)[:\s]+\"?([\w.]+)\"?",
    re.IGNORECASE,
)


def _repair_names(sql: str, error: str, schema: SchemaCatalog) -> str | None:
    """Swap the unknown column or table named in ``error`` for its nearest catalog name."""
    match = _MISSING_NAME.search(error)
    if match is None:
        return None
    kind = (match.group(1) or match.group(3) or match.group(5) or "").lower()
    bad = (match.group(2) or match.group(4) or match.group(6) or "").split(".")[-1]
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return None
    if kind == "column":
        tables = {t.name.lower() for t in tree.find_all(exp.Table)}
        names = [c.name for t in schema.tables if t.name.lower() in tables for c in t.columns] or [
            c.name for t in schema.tables for c in t.columns
        ]
        good = closest(bad, names, cutoff=0.6)
        if good is None:
            return None
        for column in tree.find_all(exp.Column):
            if column.name.lower() == bad.lower():
                column.set("this", exp.to_identifier(good, quoted=True))
    else:
        good = closest(bad, [t.name for t in schema.tables], cutoff=0.6)
        if good is None:
            return None
        for table in tree.find_all(exp.Table):
            if table.name.lower() == bad.lower():
                table.set("this", exp.to_identifier(good, quoted=True))
        for column in tree.find_all(exp.Column):
            if column.table.lower() == bad.lower():
                column.set("table", exp.to_identifier(good, quoted=True))
    return tree.sql(dialect="postgres")
