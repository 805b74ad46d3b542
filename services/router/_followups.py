"""Follow-up policy: a question asked inside a conversation becomes the standalone one the
router answers.

The rules (``offline.resolve``) read the question's shape against the earlier turns; with
a model configured it may propose a better rewrite, and code enforces what the rules
proved (a reference to nothing stays unresolved whatever the model wrote). The span
carries the kind, the source and sizes, never the question or its rewrite.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from opentelemetry import trace

from services.common import write_request
from services.common.llm import (
    FollowUpKind,
    FollowUpRewrite,
    LlmError,
    LlmProvider,
    PriorTurn,
    ResolveFollowUpRequest,
    Usage,
)
from services.router.offline import (
    DETERMINISTIC_MODEL,
    Resolution,
    changes_row_count,
    drops_condition,
    hides_rows,
    resolve,
)


@dataclass(frozen=True)
class Resolved:
    """The standalone question, the time resolution took, and the model's usage when a
    model proposed the rewrite."""

    resolution: Resolution
    took_s: float
    usage: Usage | None = None


class FollowUps:
    """Resolves follow-ups with the rules, and with the model when one is configured."""

    def __init__(self, llm: LlmProvider, tracer: trace.Tracer) -> None:
        self._llm = llm
        self._tracer = tracer

    async def resolve(self, question: str, history: tuple[PriorTurn, ...]) -> Resolved:
        started = time.perf_counter()
        if (
            write_request(question) is not None
            and not changes_row_count(question, history)
            and not hides_rows(question, history)
            and drops_condition(question, history) is None
        ):
            # A request to change data is declined whatever it refers to ("delete them"):
            # nothing to resolve, and no reference to nothing to report instead. "Reduce
            # that to 1" after a list of rows changes only how many of them are shown;
            # "drop the suspended ones" only which of them are; "drop the delay filter" only
            # which condition the previous statement keeps.
            return Resolved(Resolution(FollowUpKind.STANDALONE, question), 0.0)
        with self._tracer.start_as_current_span("router.resolve_follow_up") as span:
            resolution = resolve(question, history)
            source, usage = "rules", None
            if history and self._llm.name != DETERMINISTIC_MODEL:
                try:
                    result = await self._llm.resolve_follow_up(
                        ResolveFollowUpRequest(question, history)
                    )
                except LlmError as exc:
                    span.set_attribute("router.follow_up_model_error", exc.cause)
                else:
                    usage = result.usage
                    # A degraded result is the rules' own answer (the model failed twice).
                    span.set_attribute("router.follow_up_model_degraded", result.degraded)
                    if not result.degraded:
                        resolution, source = enforce(result.output, question, resolution)
            span.set_attribute("router.follow_up_kind", resolution.kind.value)
            span.set_attribute("router.follow_up_source", source)
            span.set_attribute("router.history_turns", len(history))
            span.set_attribute("router.resolved_question_chars", len(resolution.question))
        return Resolved(resolution, time.perf_counter() - started, usage)


def enforce(proposed: FollowUpRewrite, asked: str, rules: Resolution) -> tuple[Resolution, str]:
    """The model proposes, code enforces: a reference the rules proved points at nothing
    (an ordinal past the list's end, no list at all) stays unresolved whatever the model
    wrote; a standalone question is answered exactly as asked; an unknown kind or an empty
    rewrite falls back to the rules; a follow-up keeps the earlier SQL statement the rules
    found it builds on (the model's wording is the question the SQL service falls back
    to reading)."""
    if rules.kind is FollowUpKind.UNRESOLVED:
        return rules, "rules"
    try:
        kind = FollowUpKind(proposed.kind)
    except ValueError:
        return rules, "rules"
    if kind is FollowUpKind.STANDALONE:
        return Resolution(kind, asked), "model"
    if kind is FollowUpKind.UNRESOLVED:
        reason = proposed.reason.strip()[:300] or "the conversation does not contain it"
        return Resolution(kind, asked, reason), "model"
    question = " ".join(proposed.question.split())
    if not question:
        return rules, "rules"
    built = rules.builds_on
    if built is not None and built.relation and kind is not rules.kind:
        # The rules read a structural edit of the earlier statement (another row count,
        # grouping or value, or its rows): a rewrite of another kind does not undo it.
        return rules, "rules"
    return Resolution(kind, question, builds_on=built), "model"
