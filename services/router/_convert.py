"""Protobuf ↔ plain objects for the router: request validation in, answers and events out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from google.protobuf import duration_pb2, timestamp_pb2

from services.common import FieldViolation, InvalidArgument
from services.common.llm import FollowUpKind, PriorTurn, Usage
from services.router._clients import struct_to_dict
from services.router._settings import RouterSettings
from services.router._types import (
    AskInput,
    Citation,
    CitationEvent,
    CitationKind,
    DeltaEvent,
    Event,
    Klass,
    Mode,
    Options,
    Outcome,
    PlanEvent,
    PlanView,
    Route,
    RouterAnswer,
    Status,
    StepFinishedEvent,
    StepRun,
    StepStartedEvent,
)
from services.router.offline import Resolution
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb
from tandem.v1 import sql_service_pb2 as sql_pb

_TENANT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_CONVERSATION_ID_CHARS = 256
# Members kept per turn: what "the second one" or "their call notes" may point at.
MAX_MEMBERS = 50
# The SQL service's own cap on a follow-up's earlier statement.
MAX_TURN_SQL_CHARS = 20_000
FOLLOW_UP_KINDS = {
    FollowUpKind.STANDALONE: pb.FOLLOW_UP_KIND_STANDALONE,
    FollowUpKind.TIME_SHIFT: pb.FOLLOW_UP_KIND_TIME_SHIFT,
    FollowUpKind.VALUE_SWAP: pb.FOLLOW_UP_KIND_VALUE_SWAP,
    FollowUpKind.FILTER: pb.FOLLOW_UP_KIND_FILTER,
    FollowUpKind.BREAKDOWN: pb.FOLLOW_UP_KIND_BREAKDOWN,
    FollowUpKind.RESULT_REFERENCE: pb.FOLLOW_UP_KIND_RESULT_REFERENCE,
    FollowUpKind.ORDINAL: pb.FOLLOW_UP_KIND_ORDINAL,
    FollowUpKind.UNRESOLVED: pb.FOLLOW_UP_KIND_UNRESOLVED,
    FollowUpKind.LIMIT: pb.FOLLOW_UP_KIND_LIMIT,
}

_MODES = {
    pb.ASK_MODE_UNSPECIFIED: Mode.AUTO,
    pb.ASK_MODE_AUTO: Mode.AUTO,
    pb.ASK_MODE_RETRIEVE: Mode.RETRIEVE,
    pb.ASK_MODE_AGENTIC: Mode.AGENTIC,
    pb.ASK_MODE_SQL: Mode.SQL,
}
_MODE_PB = {
    Mode.AUTO: pb.ASK_MODE_AUTO,
    Mode.RETRIEVE: pb.ASK_MODE_RETRIEVE,
    Mode.AGENTIC: pb.ASK_MODE_AGENTIC,
    Mode.SQL: pb.ASK_MODE_SQL,
}
_ROUTES = {
    Route.RETRIEVE: pb.ROUTE_RETRIEVE,
    Route.AGENTIC: pb.ROUTE_AGENTIC,
    Route.SQL: pb.ROUTE_SQL,
    Route.COMPOUND: pb.ROUTE_COMPOUND,
}
_CLASSES = {
    Klass.UNSPECIFIED: pb.QUESTION_CLASS_UNSPECIFIED,
    Klass.COUNTABLE: pb.QUESTION_CLASS_COUNTABLE,
    Klass.SEMANTIC: pb.QUESTION_CLASS_SEMANTIC,
    Klass.COMPOUND: pb.QUESTION_CLASS_COMPOUND,
}
_OUTCOMES = {
    Outcome.ANSWERED: pb.ANSWER_OUTCOME_ANSWERED,
    Outcome.PARTIAL: pb.ANSWER_OUTCOME_PARTIAL,
    Outcome.NOT_FOUND: pb.ANSWER_OUTCOME_NOT_FOUND,
    Outcome.REFUSED: pb.ANSWER_OUTCOME_REFUSED,
}
_TOOLS = {
    "semantic_search": pb.TOOL_SEMANTIC_SEARCH,
    "sql_question": pb.TOOL_SQL_QUESTION,
    "sql_intent": pb.TOOL_SQL_INTENT,
}
_STATUSES = {
    Status.PENDING: pb.STEP_STATUS_PENDING,
    Status.RUNNING: pb.STEP_STATUS_RUNNING,
    Status.SUCCEEDED: pb.STEP_STATUS_SUCCEEDED,
    Status.EMPTY: pb.STEP_STATUS_EMPTY,
    Status.DEGRADED: pb.STEP_STATUS_DEGRADED,
    Status.FAILED: pb.STEP_STATUS_FAILED,
    Status.TIMED_OUT: pb.STEP_STATUS_TIMED_OUT,
    Status.CANCELLED: pb.STEP_STATUS_CANCELLED,
    Status.SKIPPED: pb.STEP_STATUS_SKIPPED,
}


def ask_input(request: pb.AskRequest | pb.StreamAskRequest, settings: RouterSettings) -> AskInput:
    """Validate a request; every violation is named in one INVALID_ARGUMENT."""
    violations: list[FieldViolation] = []
    if not request.tenant_id:
        violations.append(FieldViolation("tenant_id", "required"))
    elif not _TENANT.match(request.tenant_id):
        violations.append(
            FieldViolation(
                "tenant_id", "1-63 lowercase letters, digits, '-' or '_', starting alphanumeric"
            )
        )
    question = request.question.strip()
    if not question:
        violations.append(FieldViolation("question", "required"))
    elif len(request.question) > settings.max_question_chars:
        violations.append(
            FieldViolation("question", f"at most {settings.max_question_chars} characters")
        )
    if request.mode not in _MODES:
        violations.append(FieldViolation("mode", "unknown mode"))
    options = request.options
    if not 0 <= options.top_k <= settings.max_top_k:
        violations.append(FieldViolation("options.top_k", f"must be 0..{settings.max_top_k}"))
    if not 0 <= options.max_tool_calls <= settings.max_tool_calls:
        violations.append(
            FieldViolation("options.max_tool_calls", f"must be 0..{settings.max_tool_calls}")
        )
    if not 0 <= options.max_rows <= settings.max_rows:
        violations.append(FieldViolation("options.max_rows", f"must be 0..{settings.max_rows}"))
    if len(options.search_filter.document_ids) > settings.max_filter_document_ids:
        violations.append(
            FieldViolation(
                "options.search_filter.document_ids",
                f"at most {settings.max_filter_document_ids} ids",
            )
        )
    if options.search_mode not in rpb.SearchMode.values():
        violations.append(FieldViolation("options.search_mode", "unknown search mode"))
    if len(request.conversation_id) > MAX_CONVERSATION_ID_CHARS:
        violations.append(
            FieldViolation("conversation_id", f"at most {MAX_CONVERSATION_ID_CHARS} characters")
        )
    for index, turn in enumerate(request.history):
        for name in ("question", "resolved_question"):
            if len(getattr(turn, name)) > settings.max_question_chars:
                violations.append(
                    FieldViolation(
                        f"history[{index}].{name}",
                        f"at most {settings.max_question_chars} characters",
                    )
                )
    if violations:
        raise InvalidArgument(violations)
    search_filter = options.search_filter
    return AskInput(
        tenant_id=request.tenant_id,
        question=question,
        mode=_MODES[request.mode],
        options=Options(
            top_k=options.top_k or settings.default_top_k,
            include_trajectory=options.include_trajectory,
            max_tool_calls=options.max_tool_calls or settings.max_tool_calls,
            database=options.database,
            categories=tuple(search_filter.categories),
            document_ids=tuple(search_filter.document_ids),
            metadata=struct_to_dict(search_filter.metadata) if search_filter.metadata else None,
            search_mode=int(options.search_mode),
            max_rows=options.max_rows,
        ),
        conversation_id=request.conversation_id,
        history=prior_turns(request.history, settings),
    )


def prior_turns(
    history: Sequence[pb.ConversationTurn], settings: RouterSettings
) -> tuple[PriorTurn, ...]:
    """The newest turns within the router's own caps, oldest first: whatever the caller
    sent, resolution reads a bounded amount."""
    kept: list[PriorTurn] = []
    used = 0
    newest = list(history)[-settings.max_history_turns :] if settings.max_history_turns else []
    for turn in reversed(newest):
        members = tuple(turn.members[:MAX_MEMBERS])
        size = len(turn.question) + len(turn.resolved_question) + sum(map(len, members))
        if used + size > settings.max_history_chars:
            break
        used += size
        kept.append(
            PriorTurn(
                question=turn.question,
                resolved_question=turn.resolved_question or turn.question,
                members=members,
                row_count=turn.row_count,
                unresolved=turn.follow_up_kind == pb.FOLLOW_UP_KIND_UNRESOLVED,
                sql=turn.sql[:MAX_TURN_SQL_CHARS],
                cited=bool(turn.cited_chunk_ids),
            )
        )
    kept.reverse()
    return tuple(kept)


def _sql_members(result: sql_pb.SqlResult) -> list[str]:
    """The first text column's values: the names a list answer gave."""
    for column in range(len(result.columns)):
        values = [row.values[column] for row in result.rows if len(row.values) > column]
        if values and all(v.WhichOneof("kind") == "string_value" for v in values):
            return [v.string_value for v in values]
    return []


def conversation_turn(
    answer_pb: pb.Answer, question: str, resolution: Resolution
) -> pb.ConversationTurn:
    """What a later follow-up may refer to: the members a list named (else the subjects
    of the cited documents), fingerprints and cited chunks; never the answer text."""
    members: list[str] = []
    for item in answer_pb.sql_results:
        members = _sql_members(item.result)
        if members:
            break
    if not members and not answer_pb.sql_results:
        for cited in answer_pb.citations:
            if cited.title:
                # Demo and product documents are titled "Kind: Subject".
                subject = cited.title.rsplit(": ", 1)[-1].strip()
                if subject and subject not in members:
                    members.append(subject)
    first = answer_pb.sql_results[0].result if answer_pb.sql_results else None
    return pb.ConversationTurn(
        question=question,
        resolved_question=resolution.question,
        route=answer_pb.route,
        follow_up_kind=FOLLOW_UP_KINDS[resolution.kind],
        members=members[:MAX_MEMBERS],
        sql_fingerprints=[s.result.fingerprint for s in answer_pb.sql_results],
        cited_chunk_ids=list(dict.fromkeys(c.chunk_id for c in answer_pb.citations if c.chunk_id)),
        row_count=first.row_count if first is not None else 0,
        sql=first.sql if first is not None and len(first.sql) <= MAX_TURN_SQL_CHARS else "",
    )


def with_conversation(
    answer_pb: pb.Answer,
    ask: AskInput,
    resolution: Resolution,
    took_s: float,
    usage: Usage | None = None,
) -> pb.Answer:
    """Stamp an answer with its conversation, how its question was resolved (also the
    first timing, "resolve") and the turn the gateway stores."""
    answer_pb.conversation_id = ask.conversation_id
    answer_pb.resolution.CopyFrom(
        pb.FollowUpResolution(
            kind=FOLLOW_UP_KINDS[resolution.kind],
            resolved_question=resolution.question,
            unresolved_reason=resolution.reason,
            history_turns=len(ask.history),
            duration=_duration(took_s),
        )
    )
    timings = [cpb.Timing(stage="resolve", duration=_duration(took_s)), *answer_pb.timings]
    del answer_pb.timings[:]
    answer_pb.timings.extend(timings)
    answer_pb.turn.CopyFrom(conversation_turn(answer_pb, ask.question, resolution))
    if usage is not None and usage.calls:
        # A model proposed the rewrite: its cost belongs to this answer.
        answer_pb.usage.entries.append(
            cpb.UsageEntry(
                role=cpb.LLM_ROLE_RESOLVE_FOLLOW_UP,
                tier=cpb.ModelTier.Value(f"MODEL_TIER_{usage.tier.name}"),
                model_name=usage.model,
                calls=usage.calls,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                estimated_cost_usd=usage.cost_usd or 0.0,
                duration=_duration(took_s),
            )
        )
        answer_pb.usage.calls += usage.calls
        answer_pb.usage.input_tokens += usage.input_tokens
        answer_pb.usage.output_tokens += usage.output_tokens
        answer_pb.usage.estimated_cost_usd += usage.cost_usd or 0.0
    return answer_pb


def unresolved_text(resolution: Resolution) -> str:
    """What the user reads when a reference points at nothing: the reason, and how to ask
    instead; nothing was searched or queried."""
    return (
        f"I can't tell what your question refers to: {resolution.reason}. "
        "Please ask again naming it."
    )


def unresolved_answer(ask: AskInput, request_id: str, resolution: Resolution) -> pb.Answer:
    """The answer to a follow-up that could not be resolved: said so, not guessed."""
    return pb.Answer(
        request_id=request_id,
        text=unresolved_text(resolution),
        outcome=pb.ANSWER_OUTCOME_NOT_FOUND,
        mode=_MODE_PB[ask.mode],
        confidence=0.0,
        disclaimer="The question refers to an earlier answer that does not contain it.",
    )


def mode_pb(mode: Mode) -> pb.AskMode.ValueType:
    return _MODE_PB[mode]


def _duration(seconds: float) -> duration_pb2.Duration:
    out = duration_pb2.Duration()
    out.FromNanoseconds(int(max(seconds, 0.0) * 1e9))
    return out


def _timestamp(moment: datetime | None) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    if moment is not None:
        out.FromDatetime(moment)
    return out


def plan_step(run: StepRun) -> pb.PlanStep:
    return pb.PlanStep(
        step_id=run.step_id,
        tool=_TOOLS[run.tool.value],
        input_summary=run.input_summary,
        depends_on_step_ids=list(run.step.depends_on),
        status=_STATUSES[run.status],
        wave=run.wave,
    )


def plan(view: PlanView) -> pb.Plan:
    return pb.Plan(revision=view.revision, steps=[plan_step(r) for r in view.steps])


def trajectory_step(run: StepRun) -> pb.TrajectoryStep:
    return pb.TrajectoryStep(
        step_id=run.step_id,
        tool=_TOOLS[run.tool.value],
        argument_summary=run.argument_summary,
        start_time=_timestamp(run.start_time),
        duration=_duration(run.duration_s),
        status=_STATUSES[run.status],
        attempts=run.attempts,
        rewrites=run.rewrites,
        repairs=run.repairs,
        plan_revision=run.revision,
        result_count=run.result_count,
        failure_reason=run.failure_reason,
    )


def citation(item: Citation) -> cpb.Citation:
    out = cpb.Citation(
        passage_id=item.passage_id,
        kind=cpb.CITATION_KIND_PASSAGE
        if item.kind is CitationKind.PASSAGE
        else cpb.CITATION_KIND_SQL_RESULT,
        document_id=item.document_id,
        chunk_id=item.chunk_id,
        title=item.title,
        uri=item.uri,
        section=item.section,
        quote=item.quote,
        answer_span=cpb.TextSpan(start_offset=item.answer_span[0], end_offset=item.answer_span[1]),
        sql_fingerprint=item.sql_fingerprint,
        step_id=item.step_id,
    )
    if item.quote_span is not None:
        out.quote_span.CopyFrom(
            cpb.TextSpan(start_offset=item.quote_span[0], end_offset=item.quote_span[1])
        )
    return out


def elapsed(seconds: float) -> duration_pb2.Duration:
    return _duration(seconds)


def answer(result: RouterAnswer, include_trajectory: bool = True) -> pb.Answer:
    report = result.guardrails
    guard = cpb.GuardrailReport(
        enabled_layers=[
            cpb.GuardrailLayer.Value(f"GUARDRAIL_LAYER_{n}") for n in report.enabled_layers
        ],
        passages_scanned=report.passages_scanned,
        passages_quarantined=report.passages_quarantined,
        injection_findings=[
            cpb.InjectionFinding(
                passage_id=f.passage_id,
                document_id=f.document_id,
                chunk_id=f.chunk_id,
                kind=cpb.InjectionKind.Value(f"INJECTION_KIND_{f.kind}"),
                severity=cpb.FindingSeverity.Value(f"FINDING_SEVERITY_{f.severity}"),
                quarantined=f.quarantined,
            )
            for f in report.injection_findings
        ],
        removed_citations=[
            cpb.RemovedCitation(
                passage_id=number,
                reason=cpb.CitationRemovalReason.Value(f"CITATION_REMOVAL_REASON_{reason}"),
            )
            for number, reason in report.removed_citations
        ],
        unsupported_sentences=[
            cpb.UnsupportedSentence(
                sentence_index=index,
                answer_span=cpb.TextSpan(start_offset=span[0], end_offset=span[1]),
            )
            for index, span in report.unsupported_sentences
        ],
        url_findings=[
            cpb.UrlFinding(host=host, action=cpb.UrlFindingAction.Value(f"URL_FINDING_ACTION_{a}"))
            for host, a in report.url_findings
        ],
        prompt_leak_detected=report.prompt_leak_detected,
    )
    entries = [
        cpb.UsageEntry(
            role=cpb.LlmRole.Value(f"LLM_ROLE_{u.role}"),
            tier=cpb.ModelTier.Value(f"MODEL_TIER_{u.tier}"),
            model_name=u.model,
            calls=u.calls,
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            estimated_cost_usd=u.cost_usd,
            duration=_duration(u.duration_s),
        )
        for u in result.usage
    ]
    usage = cpb.Usage(
        input_tokens=sum(u.input_tokens for u in result.usage),
        output_tokens=sum(u.output_tokens for u in result.usage),
        estimated_cost_usd=sum(u.cost_usd for u in result.usage),
        calls=sum(u.calls for u in result.usage),
        entries=entries,
    )
    return pb.Answer(
        request_id=result.request_id,
        text=result.text,
        citations=[citation(c) for c in result.citations],
        outcome=_OUTCOMES[result.outcome],
        mode=_MODE_PB[result.mode],
        question_class=_CLASSES[result.question_class],
        route=_ROUTES[result.route],
        plan=plan(result.plan),
        trajectory=[trajectory_step(r) for r in result.trajectory] if include_trajectory else [],
        guardrail_report=guard,
        confidence=result.confidence,
        disclaimer=result.disclaimer,
        degraded=bool(result.degradations),
        degradations=[
            cpb.Degradation(
                reason=cpb.DegradationReason.Value(f"DEGRADATION_REASON_{d.reason}"),
                component=d.component,
                message=d.message,
                step_id=d.step_id,
            )
            for d in result.degradations
        ],
        usage=usage,
        sql_results=[
            pb.SqlStepResult(
                step_id=s.step_id, passage_id=s.passage_id, result=s.raw, answer_id=s.answer_id
            )
            for s in result.sql_results
        ],
        # Feedback on an Ask answer is feedback on the first SQL statement it drew on.
        answer_id=result.sql_results[0].answer_id if result.sql_results else "",
        timings=[cpb.Timing(stage=k, duration=_duration(v)) for k, v in result.timings],
        replans=result.replans,
        tool_calls=result.tool_calls,
        refusal_reason=result.refusal_reason,
    )


def event(item: Event, elapsed_s: float) -> pb.StreamAskResponse:
    """One stream event; converted the moment it happens (step records keep changing)."""
    elapsed = _duration(elapsed_s)
    if isinstance(item, PlanEvent):
        return pb.StreamAskResponse(plan=plan(item.plan), elapsed=elapsed)
    if isinstance(item, StepStartedEvent):
        run = item.run
        return pb.StreamAskResponse(
            step_started=pb.StepStarted(
                step_id=run.step_id,
                tool=_TOOLS[run.tool.value],
                argument_summary=run.argument_summary,
                plan_revision=run.revision,
                start_time=_timestamp(run.start_time),
            ),
            elapsed=elapsed,
        )
    if isinstance(item, StepFinishedEvent):
        return pb.StreamAskResponse(
            step_finished=pb.StepFinished(step=trajectory_step(item.run)), elapsed=elapsed
        )
    if isinstance(item, DeltaEvent):
        return pb.StreamAskResponse(answer_delta=pb.AnswerDelta(text=item.text), elapsed=elapsed)
    assert isinstance(item, CitationEvent)
    return pb.StreamAskResponse(citation=citation(item.citation), elapsed=elapsed)
