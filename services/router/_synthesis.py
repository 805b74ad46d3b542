"""Synthesis: the gathered evidence → the cited answer behind the output guardrails.

The router's request has two halves. Execution (``services.router._engine``) plans, runs
the steps in waves, replans, and so gathers evidence: step runs holding passages and row
sets. Synthesis, here, writes the answer from that evidence alone: it numbers it, asks the
model for cited sentences (one synthesis per step of a multi-step plan), checks the output,
composes the text with its citations, and decides the outcome, confidence and disclaimer.

Synthesis starts once execution has finished, so it reads execution's final state as plain
values; what it still shares with the run is explicit in ``Synthesis``'s fields: the
records both halves write (the guardrail report, degradations, timings, usage) and the
run's callbacks (the metered model call, ``degrade``, ``emit``, ``timed``). It never
imports the engine.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from services.common.llm import (
    Answer,
    AnswerSentence,
    LlmError,
    LlmProvider,
    LlmResult,
    MemberEvidence,
    MentionCheck,
    Passage,
    Role,
    RowSet,
    SynthesizeRequest,
)
from services.router import _guard
from services.router._settings import GuardrailSettings
from services.router._types import (
    FAILED_STATUSES,
    AskInput,
    Citation,
    CitationEvent,
    CitationKind,
    Degradation,
    DeltaEvent,
    Event,
    GuardrailReport,
    Hit,
    InjectionFinding,
    Klass,
    Mode,
    Outcome,
    PlanView,
    Route,
    RouterAnswer,
    SqlEvidence,
    Status,
    StepRun,
    UsageEntry,
)
from services.router.offline import NO_ANSWER, cited_row, sql_refusal_note, unplaced_note

# The most confidence an answer carries when any dependency or step degraded it.
DEGRADED_CONFIDENCE = 0.5

# The run's metered model call (usage and degradation recorded on the run).
LlmCall = Callable[[Role, Awaitable[LlmResult[Answer]]], Awaitable[LlmResult[Answer]]]


@dataclass
class _Evidence:
    """One numbered piece of evidence in the synthesis context."""

    number: int
    step_id: str
    hit: Hit | None = None
    run: StepRun | None = None
    quarantined: bool = False


@dataclass(frozen=True, kw_only=True)
class Synthesis:
    """One request's synthesis, over what its execution gathered.

    The fields are the whole interface with execution. The first group is execution's
    final state, read only; the second the records shared with the run, which synthesis
    adds to in place (so the run's ``degrade`` and this class write the same list); the
    last the collaborators.
    """

    # Execution's final state.
    request: AskInput
    request_id: str
    runs: Mapping[str, StepRun]
    current: Sequence[StepRun]
    plan: PlanView
    klass: Klass
    replans: int
    tool_calls: int
    deadline_hit: bool
    cap_hit: bool
    replan_limit_hit: bool
    started: float
    deadline: float
    findings: Mapping[str, tuple[_guard.Finding, ...]]
    # Records shared with the run.
    report: GuardrailReport
    degradations: list[Degradation]
    timings: dict[str, float]
    usage: Mapping[tuple[str, str, str], list[float]]
    # Collaborators.
    guardrails: GuardrailSettings
    model: LlmProvider
    rules: LlmProvider
    llm: LlmCall
    degrade: Callable[[str, str, str], None]
    emit: Callable[[Event], None]
    timed: Callable[[str, float], None]

    def number_evidence(self) -> list[_Evidence]:
        evidence: list[_Evidence] = []
        seen: set[str] = set()
        for run in self.runs.values():
            # Quarantined passages were retrieved whatever became of their step: they are
            # numbered (and reported) but never shown to the model.
            usable = run.hits if run.status is Status.SUCCEEDED else ()
            for hit, held in [(h, False) for h in usable] + [(h, True) for h in run.quarantined]:
                if hit.chunk_id in seen:
                    continue
                seen.add(hit.chunk_id)
                evidence.append(
                    _Evidence(len(evidence) + 1, run.step_id, hit=hit, quarantined=held)
                )
            if run.sql is not None and run.status is Status.SUCCEEDED:
                evidence.append(_Evidence(len(evidence) + 1, run.step_id, run=run))
        return evidence

    async def synthesize(self, route: Route) -> RouterAnswer:
        started = time.monotonic()
        evidence = self.number_evidence()
        self.record_scan(evidence)
        partial = self.partial()
        usable = [e for e in evidence if not e.quarantined]
        groups = self.groups(usable)
        provider = self.rules if self.request.mode is Mode.RETRIEVE else self.model
        answers: list[Answer] = []
        if usable:
            requests = [
                SynthesizeRequest(
                    question,
                    passages=tuple(_passage(e) for e in items if e.hit is not None),
                    rows=tuple(_rows(e) for e in items if e.run is not None),
                    partial=partial and index == len(groups) - 1,
                    mention=self.mention_check(items),
                )
                for index, (question, items) in enumerate(groups)
            ]
            answers = await self.synthesize_all(provider, requests)
        supported = any(a.supported for a in answers)
        sentences = [s for a in answers for s in a.sentences] if supported else []
        if not sentences:
            sentences = [AnswerSentence(NO_ANSWER)]
            # A document refusal says which of the question's words the passages found
            # lack, as the SQL side names the phrase it could not place.
            # The section path counts as held too (a heading the chunker kept aside).
            passages = [
                Passage(str(e.number), f"{e.hit.section}\n{e.hit.text}", e.hit.title)
                for e in usable
                if e.hit is not None
            ]
            note = unplaced_note(self.request.question, passages)
            if note is not None:
                sentences.append(AnswerSentence(note))
            # A SQL step the service declined says why (the phrase it could not place,
            # the nearest names), once per distinct reason: without it a question the
            # data could answer reads as one it cannot. For a person inside the tenant
            # too: the service reads and words it through their view (their rows' values
            # only, ``services.sql.access``), so it tells nothing AskSql would not.
            said = dict.fromkeys(r.declined for r in self.runs.values() if r.declined)
            database = self.request.options.database
            sentences.extend(AnswerSentence(sql_refusal_note(database, m)) for m in said)
        guards = self.guardrails
        checked = _guard.check_output(
            sentences,
            known={e.number for e in evidence},
            quarantined={e.number for e in evidence if e.quarantined},
            context=[e.hit.text for e in usable if e.hit is not None]
            + [
                " ".join(str(c) for row in e.run.sql.rows for c in row)
                for e in usable
                if e.run and e.run.sql
            ],
            sentinel="",
            check_urls_and_leaks=guards.output_check,
            check_citations=guards.citation_check,
        )
        self.report.removed_citations = checked.removed_citations
        self.report.url_findings = checked.url_findings
        self.report.prompt_leak_detected = checked.prompt_leak
        by_number = {e.number: e for e in evidence}
        text, citations, claims, backed = self.compose(checked.sentences, by_number)
        self.timed("synthesize", started)
        if not citations:
            outcome = Outcome.PARTIAL if partial and self.any_failure() else Outcome.NOT_FOUND
        else:
            outcome = Outcome.PARTIAL if partial else Outcome.ANSWERED
        base = sum(a.confidence for a in answers) / len(answers) if answers else 0.0
        coverage = backed / claims if claims else 0.0
        confidence = base * coverage if citations else 0.0
        if outcome is Outcome.PARTIAL:
            confidence *= 0.5
        if not partial:
            # A failed step whose replacement answered did not degrade the answer.
            current = {r.step_id for r in self.current}
            self.degradations[:] = [
                d for d in self.degradations if d.reason != "STEP_FAILED" or d.step_id in current
            ]
        if self.degradations:
            # Something the answer should have drawn on did not serve it: the evidence it
            # rests on is what was left, so it never reads as certain.
            confidence = min(confidence, DEGRADED_CONFIDENCE)
        sql_results = tuple(
            SqlEvidence(e.step_id, e.number, e.run.sql.raw, e.run.sql.answer_id)
            for e in evidence
            if e.run is not None and e.run.sql is not None
        )
        return self.answer(
            text=text,
            citations=citations,
            outcome=outcome,
            route=route,
            confidence=round(min(max(confidence, 0.0), 1.0), 3),
            disclaimer=self.disclaimer() if partial else "",
            sql_results=sql_results,
        )

    async def synthesize_all(
        self, provider: LlmProvider, requests: list[SynthesizeRequest]
    ) -> list[Answer]:
        budget = max(self.deadline - time.monotonic() - 0.02, 0.05)

        async def one(request: SynthesizeRequest) -> Answer:
            try:
                async with asyncio.timeout(budget):
                    if provider is self.rules:
                        return (await provider.synthesize(request)).output
                    return (await self.llm(Role.SYNTHESIZE, provider.synthesize(request))).output
            except (TimeoutError, LlmError):
                self.degrade("LLM_UNAVAILABLE", "llm", "synthesis fell back to extraction")
                return (await self.rules.synthesize(request)).output

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def groups(self, usable: list[_Evidence]) -> list[tuple[str, list[_Evidence]]]:
        """One synthesis per step for multi-step plans (each sub-question answered from its
        own evidence); the original question for a single step."""
        steps = list(dict.fromkeys(e.step_id for e in usable))
        if len(self.runs) <= 1:
            return [(self.request.question, usable)]
        groups = {
            s: (
                self.runs[s].bound_query or self.request.question,
                [e for e in usable if e.step_id == s],
            )
            for s in steps
        }
        # A mention check answers the question itself, from the set and its documents
        # together: the set's rows join the check's group.
        for step_id in steps:
            scope = self.runs[step_id].step.scope
            if scope is None or not scope.check_mention or scope.source not in groups:
                continue
            _, source_items = groups.pop(scope.source)
            groups[step_id] = (self.request.question, source_items + groups[step_id][1])
        return list(groups.values())

    def mention_check(self, items: list[_Evidence]) -> MentionCheck | None:
        """Which member of a scoped step's set the group's passages belong to."""
        scoped = next(
            (
                self.runs[e.step_id]
                for e in items
                if (sc := self.runs[e.step_id].step.scope) is not None and sc.check_mention
            ),
            None,
        )
        if scoped is None or scoped.step.scope is None:
            return None
        scope = scoped.step.scope
        rows_id = next(
            (str(e.number) for e in items if e.run is not None and e.step_id == scope.source),
            "",
        )
        if not rows_id:
            return None
        numbers = {e.hit.chunk_id: str(e.number) for e in items if e.hit is not None}
        members = tuple(
            MemberEvidence(
                m.name,
                rows_id,
                tuple(numbers[h.chunk_id] for h in m.hits if h.chunk_id in numbers),
            )
            for m in scoped.members
        )
        return MentionCheck(scope.topic, scope.documents or "documents", members)

    def record_scan(self, evidence: list[_Evidence]) -> None:
        scanned = [e for e in evidence if e.hit is not None]
        if not self.guardrails.injection_scan:
            return
        self.report.passages_scanned = len(self.findings)
        self.report.passages_quarantined = sum(1 for e in scanned if e.quarantined)
        for item in scanned:
            assert item.hit is not None
            for finding in self.findings.get(item.hit.chunk_id, []):
                self.report.injection_findings.append(
                    InjectionFinding(
                        passage_id=item.number,
                        document_id=item.hit.document_id,
                        chunk_id=item.hit.chunk_id,
                        kind=finding.kind,
                        severity=finding.severity,
                        quarantined=item.quarantined,
                    )
                )

    def compose(
        self, sentences: list[_guard.CheckedSentence], by_number: dict[int, _Evidence]
    ) -> tuple[str, tuple[Citation, ...], int, int]:
        parts: list[str] = []
        citations: dict[int, Citation] = {}
        claims = backed = 0
        offset = 0
        for index, sentence in enumerate(sentences):
            cited = [n for n in sentence.citations if n in by_number] or sentence.citations
            piece = sentence.text + ("".join(f" [{n}]" for n in cited) if cited else "")
            start = offset + (1 if parts else 0)
            end = start + len(piece)
            parts.append(piece)
            offset = end
            if _guard.needs_citation(sentence.text):
                claims += 1
                if any(n in by_number for n in cited):
                    backed += 1
                else:
                    self.report.unsupported_sentences.append((index, (start, end)))
            for number in cited:
                item = by_number.get(number)
                if item is None or number in citations:
                    continue
                citations[number] = _citation(item, sentence.text, (start, end))
        text = " ".join(parts)
        ordered = tuple(citations.values())
        for piece in parts:
            self.emit(DeltaEvent(piece if piece is parts[0] else " " + piece))
        for citation in ordered:
            self.emit(CitationEvent(citation))
        return text, ordered, claims, backed

    def any_failure(self) -> bool:
        return (
            any(
                r.status in FAILED_STATUSES or r.status in (Status.CANCELLED, Status.SKIPPED)
                for r in self.runs.values()
                if r.status is not Status.EMPTY
            )
            or self.deadline_hit
            or self.cap_hit
        )

    def partial(self) -> bool:
        final = [r for r in self.current if r.status is not Status.SUCCEEDED]
        if self.request.mode is not Mode.AUTO:
            # A single-step mode with no result is "not found", unless something broke.
            return (
                self.deadline_hit
                or self.cap_hit
                or any(r.status not in (Status.EMPTY, Status.SUCCEEDED) for r in final)
            )
        return bool(final) or self.deadline_hit or self.cap_hit

    def disclaimer(self) -> str:
        missing = [r for r in self.current if r.status is not Status.SUCCEEDED]
        parts = [
            f'{r.step_id} ("{_short(r.input_summary)}", {r.tool.value}, {r.status.value})'
            for r in missing
        ]
        causes = []
        if self.deadline_hit:
            causes.append("the deadline expired")
            self.degrade(
                "DEADLINE_EXCEEDED", "router", "the deadline expired before every step finished"
            )
        if self.cap_hit:
            causes.append("the tool-call cap was reached")
        if self.replan_limit_hit:
            causes.append(f"steps still failed after {self.replans} replan(s)")
            self.degrade("REPLAN_LIMIT_REACHED", "router", "a step failed after the last replan")
        text = "Partial answer: missing results for " + (", ".join(parts) or "some steps")
        if causes:
            text += " because " + " and ".join(causes)
        return text + "."

    def answer(
        self,
        *,
        text: str,
        citations: tuple[Citation, ...],
        outcome: Outcome,
        route: Route,
        confidence: float,
        disclaimer: str,
        sql_results: tuple[SqlEvidence, ...],
        refusal_reason: str = "",
    ) -> RouterAnswer:
        self.timings["total"] = time.monotonic() - self.started
        trajectory = tuple(
            r for r in self.runs.values() if r.status is not Status.PENDING and r.start_time
        )
        usage = tuple(
            UsageEntry(role, tier, model, int(v[0]), int(v[1]), int(v[2]), v[3], v[4])
            for (role, tier, model), v in self.usage.items()
        )
        return RouterAnswer(
            request_id=self.request_id,
            text=text,
            citations=citations,
            outcome=outcome,
            mode=self.request.mode,
            question_class=self.klass,
            route=route,
            plan=self.plan,
            trajectory=trajectory,
            guardrails=self.report,
            confidence=confidence,
            disclaimer=disclaimer,
            degradations=tuple(self.degradations),
            usage=usage,
            sql_results=sql_results,
            timings=tuple(self.timings.items()),
            replans=self.replans,
            tool_calls=self.tool_calls,
            refusal_reason=refusal_reason,
        )


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _passage(item: _Evidence) -> Passage:
    assert item.hit is not None
    return Passage(str(item.number), item.hit.text, item.hit.title, item.hit.score)


def _rows(item: _Evidence) -> RowSet:
    assert item.run is not None and item.run.sql is not None
    sql = item.run.sql
    return RowSet(str(item.number), sql.columns, sql.rows, sql.description[:300])


def _citation(item: _Evidence, sentence: str, span: tuple[int, int]) -> Citation:
    if item.hit is not None:
        hit = item.hit
        at = hit.text.find(sentence.rstrip("."))
        row = cited_row(hit.text, sentence) if at < 0 else None
        section = hit.section
        if at >= 0:
            quote = sentence.rstrip(".")
            quote_span = (at, at + len(quote))
        elif row is not None:  # a cell answer: the quote is its row, the section names it
            quote = hit.text[row.start : row.end]
            quote_span = (row.start, row.end)
            section = row.section(hit.section)
        else:
            quote = hit.text[:200]
            quote_span = (0, len(quote))
        return Citation(
            passage_id=item.number,
            kind=CitationKind.PASSAGE,
            step_id=item.step_id,
            answer_span=span,
            document_id=hit.document_id,
            chunk_id=hit.chunk_id,
            title=hit.title,
            uri=hit.uri,
            section=section,
            quote=quote,
            quote_span=quote_span,
        )
    assert item.run is not None and item.run.sql is not None
    sql = item.run.sql
    first = ", ".join("" if c is None else str(c) for c in sql.rows[0]) if sql.rows else ""
    return Citation(
        passage_id=item.number,
        kind=CitationKind.SQL_RESULT,
        step_id=item.step_id,
        answer_span=span,
        title=sql.description[:120],
        quote=first[:200],
        sql_fingerprint=sql.fingerprint,
    )
