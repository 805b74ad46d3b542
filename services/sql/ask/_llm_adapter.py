"""The shared LLM layer as a :class:`SqlGenerator`: the four SQL roles behind the seam.

The adapter translates between the SQL service's types (``SchemaView``, ``Proposal``,
``Failure``) and the LLM layer's (``SchemaCatalog``, ``GeneratedSql``), and records one
:class:`ModelCall` per role call from its ``usage``. The provider fences the question
and schema in its prompts; the pipeline's gate checks whatever SQL comes back.

Any provider failure (``LlmError``), a degraded answer (the provider's own fallback
answered) or output that holds no statement raises :class:`GeneratorUnavailable`, so the
pipeline's offline generator takes over and the answer is marked degraded.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from opentelemetry import trace

from services.common.llm import (
    CatalogColumn,
    CatalogTable,
    GeneratedSql,
    GenerateSqlRequest,
    IdentifyTablesRequest,
    LlmError,
    LlmProvider,
    LlmResult,
    LlmSettings,
    RepairSqlRequest,
    SchemaCatalog,
    SqlExample,
    Tier,
    UnderstandSqlRequest,
    Usage,
    create_model_provider,
)
from services.sql.ask._pipeline import (
    Failure,
    GeneratorRole,
    GeneratorUnavailable,
    ModelCall,
    ModelTier,
    Proposal,
    SchemaView,
    TableChoice,
    Understanding,
)
from services.sql.catalog import TableInfo
from services.sql.intents import intent_from_model

_T = TypeVar("_T")
_TIERS = {Tier.STRONG: ModelTier.STRONG, Tier.FAST: ModelTier.FAST}
DEFAULT_ROW_LIMIT = 50


def schema_catalog(tables: tuple[TableInfo, ...]) -> SchemaCatalog:
    """The view's tables as the LLM layer's catalog; ``public`` tables go unqualified."""
    return SchemaCatalog(tuple(_table(t) for t in tables))


def _name(schema: str, name: str) -> str:
    return name if schema == "public" else f"{schema}.{name}"


def _table(table: TableInfo) -> CatalogTable:
    references: dict[str, str] = {}
    for fk in table.foreign_keys:
        if len(fk.columns) == 1 and len(fk.referenced_columns) == 1:
            ref_schema, _, ref_name = fk.referenced_table.rpartition(".")
            target = _name(ref_schema or "public", ref_name)
            references[fk.columns[0]] = f"{target}.{fk.referenced_columns[0]}"
    columns = tuple(
        CatalogColumn(
            name=c.name,
            type=c.data_type,
            comment=c.comment,
            sample_values=c.sample_values,
            primary_key=c.name in table.primary_key,
            references=references.get(c.name),
        )
        for c in table.columns
    )
    return CatalogTable(
        name=_name(table.schema, table.name),
        columns=columns,
        comment=table.comment,
        row_estimate=table.row_estimate if table.row_estimate >= 0 else None,
    )


def definitions(schema: SchemaView) -> tuple[str, ...]:
    """The view's glossary as one line per entry, the way the model sees it."""
    return tuple(entry.text() for entry in schema.glossary)


def failure_text(failure: Failure) -> str:
    """The repair signal as one line: the gate's violations or the database's error."""
    parts = [v.message for v in failure.violations]
    if failure.message and failure.message not in parts:
        parts.append(failure.message)
    text = "; ".join(parts) or failure.outcome.name.lower().replace("_", " ")
    return f"SQLSTATE {failure.sqlstate}: {text}" if failure.sqlstate else text


class LlmSqlGenerator:
    """A :class:`SqlGenerator` over an :class:`LlmProvider`'s SQL roles."""

    def __init__(self, provider: LlmProvider, *, row_limit: int = DEFAULT_ROW_LIMIT) -> None:
        self._provider = provider
        self._row_limit = row_limit

    @property
    def provider(self) -> LlmProvider:
        return self._provider

    async def aclose(self) -> None:
        await self._provider.aclose()

    async def _call(
        self, role: GeneratorRole, call: Callable[[], Awaitable[LlmResult[_T]]]
    ) -> tuple[_T, ModelCall]:
        started = time.perf_counter()
        try:
            result = await call()
        except LlmError as exc:
            raise GeneratorUnavailable(f"{role.value}: {exc.cause}") from exc
        if result.degraded:
            reason = result.degraded_reason or "the provider's fallback answered"
            raise GeneratorUnavailable(f"{role.value}: {reason}")
        return result.output, _model_call(role, result.usage, time.perf_counter() - started)

    async def understand(self, question: str, schema: SchemaView) -> Understanding:
        request = UnderstandSqlRequest(
            question,
            schema_catalog(schema.tables),
            definitions=definitions(schema),
            instructions=schema.instructions,
        )
        output, call = await self._call(
            GeneratorRole.UNDERSTAND, lambda: self._provider.understand_sql(request)
        )
        return Understanding(interpretation=output.restatement, calls=(call,))

    async def identify_tables(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> TableChoice:
        request = IdentifyTablesRequest(
            question,
            schema_catalog(schema.tables),
            understanding.interpretation,
            definitions=definitions(schema),
            instructions=schema.instructions,
        )
        output, call = await self._call(
            GeneratorRole.IDENTIFY_TABLES, lambda: self._provider.identify_tables(request)
        )
        chosen = [schema.catalog.table(name) for name in output.tables]
        return TableChoice(tuple(t.qualified for t in chosen if t is not None), calls=(call,))

    async def generate(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> Proposal:
        catalog = schema_catalog(schema.tables)
        request = GenerateSqlRequest(
            question,
            catalog,
            tables=tuple(t.name for t in catalog.tables),
            understanding=understanding.interpretation,
            row_limit=self._row_limit,
            definitions=definitions(schema),
            instructions=schema.instructions,
            examples=tuple(SqlExample(q, sql) for q, sql in schema.examples),
        )
        output, call = await self._call(
            GeneratorRole.GENERATE_SQL, lambda: self._provider.generate_sql(request)
        )
        return self._proposal(output, call)

    async def repair(
        self,
        question: str,
        understanding: Understanding,
        schema: SchemaView,
        previous: Proposal,
        failure: Failure,
    ) -> Proposal:
        catalog = schema_catalog(schema.tables)
        request = RepairSqlRequest(
            question,
            catalog,
            sql=failure.sql or previous.sql or "",
            error=failure_text(failure),
            attempt=failure.attempt,
            row_limit=self._row_limit,
            definitions=definitions(schema),
            instructions=schema.instructions,
        )
        output, call = await self._call(
            GeneratorRole.REPAIR_SQL, lambda: self._provider.repair_sql(request)
        )
        return self._proposal(output, call)

    def _proposal(self, output: GeneratedSql, call: ModelCall) -> Proposal:
        """SQL when the model wrote it; else its intent, which the pipeline compiles with
        the service's own compiler; else unavailable."""
        sql = (output.sql or "").strip()
        if sql:
            return Proposal(sql=sql, explanation=output.explanation, calls=(call,))
        if output.intent is not None:
            intent = intent_from_model(output.intent)
            return Proposal(intent=intent, explanation=output.explanation, calls=(call,))
        raise GeneratorUnavailable("the model proposed no statement")


def _model_call(role: GeneratorRole, usage: Usage, duration_s: float) -> ModelCall:
    return ModelCall(
        role=role,
        tier=_TIERS.get(usage.tier, ModelTier.STRONG),
        model_name=usage.model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd or 0.0,
        duration_s=duration_s,
    )


def generator_from_env(
    environ: Mapping[str, str] | None = None, *, tracer: trace.Tracer | None = None
) -> LlmSqlGenerator | None:
    """The model ``LLM_PROVIDER`` selects (Gemini, or an OpenAI-compatible server) behind
    the seam; ``None`` (rules) offline.

    The model is used without the LLM layer's own deterministic fallback: when it fails,
    the SQL service's offline generator (the schema linker) takes over.
    """
    provider = create_model_provider(LlmSettings.from_env(environ), tracer=tracer)
    return None if provider is None else LlmSqlGenerator(provider)
