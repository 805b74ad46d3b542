"""Protobuf <-> the SQL service's plain types (the servicer's only job besides calling)."""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from decimal import Decimal

from google.protobuf import duration_pb2, json_format, timestamp_pb2

from services.common import InvalidArgument
from services.sql._results import Described, Executed
from services.sql.ask import AskResult, GeneratorRole, ModelCall
from services.sql.catalog import Edge, TableInfo
from services.sql.conversation import Prior, Relation
from services.sql.gate import ResultSet, Verdict, Violation
from services.sql.intents import intent_to_pb
from services.sql.memory import ConfirmedPair
from services.sql.results import choose_chart, decode
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb

_ROLES = {
    GeneratorRole.UNDERSTAND: cpb.LLM_ROLE_UNDERSTAND,
    GeneratorRole.IDENTIFY_TABLES: cpb.LLM_ROLE_UNDERSTAND,
    GeneratorRole.GENERATE_SQL: cpb.LLM_ROLE_GENERATE_SQL,
    GeneratorRole.REPAIR_SQL: cpb.LLM_ROLE_REPAIR_SQL,
}


_NANOS_PER_SECOND = 1_000_000_000
# Charts of results seen before, by the result's fingerprint (a hash of its columns and
# rows, from which alone the chart is chosen); only charts whose spec is at most
# ``_CHART_KEPT_CHARS`` long are kept, so the memo holds at most a few megabytes.
_CHARTS: OrderedDict[str, pb.Chart] = OrderedDict()
_CHARTS_MAX = 256
_CHART_KEPT_CHARS = 16_000


def duration(seconds: float) -> duration_pb2.Duration:
    """``seconds`` (never negative) as a Duration (:func:`put_duration`)."""
    out = duration_pb2.Duration()
    put_duration(out, seconds)
    return out


def put_duration(out: duration_pb2.Duration, seconds: float) -> None:
    """Write ``seconds`` (never negative) into ``out``, a message's own field, as its two
    fields: the well-known type's ``FromNanoseconds`` is Python code that normalises on
    every call, and a Duration built apart is copied once more into its message; an
    answer carries ten of them."""
    nanos = max(int(seconds * 1e9), 0)
    out.seconds, out.nanos = divmod(nanos, _NANOS_PER_SECOND)


def seconds(value: duration_pb2.Duration) -> float:
    return value.seconds + value.nanos / 1e9


def violation(v: Violation) -> pb.SqlGateViolation:
    return pb.SqlGateViolation(
        rule=v.rule.value,  # type: ignore[arg-type]
        message=v.message,
        subject=v.subject,
    )


def validate_response(verdict: Verdict) -> pb.ValidateSqlResponse:
    return pb.ValidateSqlResponse(
        valid=verdict.valid,
        violations=[violation(v) for v in verdict.violations],
        normalized_sql=verdict.normalized_sql,
        tables_used=list(verdict.tables_used),
    )


def sql_result(executed: Executed, out: pb.SqlResult | None = None) -> pb.SqlResult:
    """The executed statement's result, written into ``out`` when given (a response's
    own field: building it apart and copying it in copied every row once more)."""
    result = executed.result
    out = pb.SqlResult() if out is None else out
    out.sql = executed.verdict.normalized_sql
    out.explanation = executed.explanation
    out.database = executed.database
    out.tables_used.extend(executed.verdict.tables_used)
    out.columns.extend(result.columns)
    out.rows.extend(result.rows)
    out.row_count = len(result.rows)
    out.truncated = result.truncated
    out.truncation_reason = result.truncation_reason
    out.fingerprint = result.fingerprint
    put_duration(out.execution_duration, result.duration_s)
    out.chart.CopyFrom(_result_chart(result))
    return out


def _result_chart(result: ResultSet) -> pb.Chart:
    """:func:`chart` for ``result``, chosen once per distinct result: the same question
    asked again (a dashboard's, a repeated one) has the same rows and so the same chart,
    whose choice decodes every value and writes the spec's JSON."""
    key = result.fingerprint
    known = _CHARTS.get(key) if key else None
    if known is not None:
        _CHARTS.move_to_end(key)
        return known
    drawn = chart(result.columns, result.rows)
    if key and len(drawn.vega_lite) <= _CHART_KEPT_CHARS:
        while len(_CHARTS) >= _CHARTS_MAX:
            _CHARTS.popitem(last=False)
        _CHARTS[key] = drawn
    return drawn


_CHART_KINDS = {
    "none": pb.CHART_KIND_NONE,
    "line": pb.CHART_KIND_LINE,
    "bar": pb.CHART_KIND_BAR,
    "scatter": pb.CHART_KIND_SCATTER,
}


def chart(columns: Sequence[pb.SqlColumn], rows: Sequence[pb.SqlRow]) -> pb.Chart:
    """The result's chart, chosen by rules (``_charts``) from the columns' types."""
    choice = choose_chart(
        [(c.name, c.data_type) for c in columns],
        [[_chart_value(v) for v in row.values] for row in rows],
    )
    return pb.Chart(
        kind=_CHART_KINDS[choice.kind], vega_lite=choice.vega_lite(), reason=choice.reason
    )


def _chart_value(value: cpb.SqlValue) -> object:
    plain = decode(value)
    if isinstance(plain, Decimal):
        return str(plain)
    if isinstance(plain, dt.datetime | dt.date):
        return plain.isoformat()
    if isinstance(plain, bytes):
        return f"<{len(plain)} bytes>"
    if isinstance(plain, list | dict):
        return str(plain)
    return plain


# --- ask ----------------------------------------------------------------------------


def ask_response(result: AskResult) -> pb.AskQuestionResponse:
    response = pb.AskQuestionResponse(
        outcome=result.outcome.value,  # type: ignore[arg-type]
        interpretation=result.interpretation,
        repairs=result.repairs,
        message=result.message,
        degraded=result.degraded_llm,
        definitions_applied=list(result.definitions_applied),
        definitions_ignored=list(result.definitions_ignored),
        refusal_reason=result.refusal,
    )
    put_usage(response.usage, result.calls)
    add_timing = response.timings.add
    for stage, seconds in result.timings.items():
        put_duration(add_timing(stage=stage).duration, seconds)
    if result.answer is not None:
        sql_result(
            Executed(
                result.database,
                result.answer.verdict,
                result.answer.result,
                result.answer.explanation,
            ),
            response.result,
        )
    if result.intent is not None:
        response.intent.CopyFrom(intent_to_pb(result.intent))
    for attempt in result.attempts:
        added = response.attempts.add(
            attempt=attempt.number,
            outcome=attempt.outcome.value,
            sql=attempt.sql,
            violations=[violation(v) for v in attempt.violations],
            sqlstate=attempt.sqlstate,
            message=attempt.message,
        )
        put_duration(added.duration, attempt.duration_s)
    response.checks.extend(
        pb.SqlCheck(name=c.name, passed=c.passed, reason=c.reason) for c in result.checks
    )
    response.answer_id = result.answer_id
    if result.reused is not None:
        used = result.reused
        response.confirmed_pair.CopyFrom(
            pb.ConfirmedPairUse(
                pair_id=used.pair_id,
                similarity=used.similarity,
                mode=used.mode,  # type: ignore[arg-type]
                substitutions=used.substitutions,
                replaced=[pb.ValueSubstitution(before=b, after=a) for b, a in used.replaced],
            )
        )
        response.citations.append(
            cpb.Citation(
                kind=cpb.CITATION_KIND_CONFIRMED_PAIR,
                confirmed_pair_id=used.pair_id,
                title="confirmed question",
                quote=used.question,
                sql_fingerprint=response.result.fingerprint,
            )
        )
    if result.degraded_llm:
        response.degradations.append(
            cpb.Degradation(
                reason=cpb.DEGRADATION_REASON_LLM_UNAVAILABLE,
                component="llm",
                message="the configured SQL generator failed; the deterministic provider answered",
            )
        )
    return response


def usage(calls: Iterable[ModelCall]) -> cpb.Usage:
    out = cpb.Usage()
    put_usage(out, calls)
    return out


def put_usage(out: cpb.Usage, calls: Iterable[ModelCall]) -> None:
    """The model calls' usage per role, tier and model, written into ``out`` (a
    response's own field: built apart, every entry was copied once more)."""
    out.SetInParent()  # present, as an answer's usage always is, even with no calls
    grouped: dict[tuple[int, int, str], list[ModelCall]] = {}
    for call in calls:
        key = (_ROLES[call.role], call.tier.value, call.model_name)
        grouped.setdefault(key, []).append(call)
    for (role, tier, name), items in grouped.items():
        entry = out.entries.add(
            role=role,
            tier=tier,
            model_name=name,
            calls=len(items),
            input_tokens=sum(c.input_tokens for c in items),
            output_tokens=sum(c.output_tokens for c in items),
            estimated_cost_usd=sum(c.cost_usd for c in items),
        )
        put_duration(entry.duration, sum(c.duration_s for c in items))
        out.input_tokens += entry.input_tokens
        out.output_tokens += entry.output_tokens
        out.estimated_cost_usd += entry.estimated_cost_usd
        out.calls += entry.calls


# --- describe -------------------------------------------------------------------------


def table_schema(table: TableInfo) -> pb.TableSchema:
    return pb.TableSchema(
        schema_name=table.schema,
        name=table.name,
        comment=table.comment,
        row_estimate=table.row_estimate,
        columns=[
            pb.ColumnSchema(
                name=c.name,
                data_type=c.data_type,
                nullable=c.nullable,
                comment=c.comment,
                sample_values=list(c.sample_values),
            )
            for c in table.columns
        ],
        primary_key_columns=list(table.primary_key),
        primary_key_evidence=table.key_evidence,
        foreign_keys=[
            pb.ForeignKey(
                columns=list(fk.columns),
                referenced_table=fk.referenced_table,
                referenced_columns=list(fk.referenced_columns),
            )
            for fk in table.foreign_keys
        ],
    )


def describe_response(described: Described) -> pb.DescribeSchemaResponse:
    refreshed = timestamp_pb2.Timestamp()
    refreshed.FromDatetime(described.catalog.refreshed_at)
    rendered = described.rendered
    return pb.DescribeSchemaResponse(
        database=described.database,
        catalog_text=rendered.text,
        truncated=rendered.truncated,
        tables=[table_schema(t) for t in rendered.tables],
        omitted_tables=list(rendered.omitted),
        refresh_time=refreshed,
        joins=[join_edge(e) for e in described.joins],
    )


_JOIN_ORIGINS = {
    "declared": pb.JOIN_ORIGIN_DECLARED,
    "glossary": pb.JOIN_ORIGIN_GLOSSARY,
    "key": pb.JOIN_ORIGIN_INFERRED,
    "overlap": pb.JOIN_ORIGIN_INFERRED,
}


def join_edge(edge: Edge) -> pb.JoinEdge:
    return pb.JoinEdge(
        child_table=edge.child,
        child_columns=list(edge.child_columns),
        parent_table=edge.parent,
        parent_columns=list(edge.parent_columns),
        origin=_JOIN_ORIGINS[edge.kind],
        evidence=edge.evidence,
        shared_values_only=edge.kind == "overlap",
    )


# --- the answer memory ------------------------------------------------------------------


def confirmed_pair(pair: ConfirmedPair) -> pb.ConfirmedPair:
    created = timestamp_pb2.Timestamp()
    created.FromDatetime(pair.create_time)
    out = pb.ConfirmedPair(
        pair_id=pair.pair_id,
        database=pair.database,
        question=pair.question,
        sql=pair.sql,
        source=pair.source.value,  # type: ignore[arg-type]
        create_time=created,
        use_count=pair.use_count,
        taught_by=pair.taught_by or "",
    )
    if pair.intent:
        json_format.ParseDict(pair.intent, out.intent, ignore_unknown_fields=True)
    return out


_RELATIONS = {
    pb.PRIOR_RELATION_RESULT_SET: Relation.RESULT_SET,
    pb.PRIOR_RELATION_ROW_LIMIT: Relation.ROW_LIMIT,
    pb.PRIOR_RELATION_REGROUP: Relation.REGROUP,
    pb.PRIOR_RELATION_VALUE_SWAP: Relation.VALUE_SWAP,
    pb.PRIOR_RELATION_FILTER: Relation.FILTER,
    pb.PRIOR_RELATION_TIME_SHIFT: Relation.TIME_SHIFT,
}


def prior_from_pb(request: pb.AskQuestionRequest) -> Prior:
    """The follow-up's earlier statement; INVALID_ARGUMENT names ``prior.relation`` when
    it is missing or unknown (the engine checks the rest)."""
    relation = _RELATIONS.get(request.prior.relation)
    if relation is None:
        raise InvalidArgument.field(
            "prior.relation",
            "must be RESULT_SET, ROW_LIMIT, REGROUP, VALUE_SWAP, FILTER or TIME_SHIFT",
        )
    given = request.prior
    return Prior(given.sql, relation, limit=given.limit, ascending=given.ascending,
                 dimension=given.dimension, value=given.value, add=given.add,
                 condition=given.condition, exclude=given.exclude, remove=given.remove,
                 period=given.period)  # fmt: skip
