"""The SQL service's logic: request rules, the gate, execution, intents, the catalog and
the ask pipeline, over the configured target databases. The servicer only converts."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from opentelemetry import metrics, trace

from services.common import (
    READ_ONLY_REASON,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    control_character_problem,
    current_principal,
    read_only_message,
    write_request,
)
from services.common.spans import Metrics as TandemMetrics
from services.sql._results import Described, Executed
from services.sql.access import ValueReader, asking_view, catalog_view, view_key
from services.sql.ask import (
    Answered,
    AskOutcome,
    AskPipeline,
    AskResult,
    Attempt,
    AttemptOutcome,
    record_verdict,
)
from services.sql.catalog import Catalog, JoinGraph, Narrowed, TableInfo, index_of, render
from services.sql.conversation import (
    MAX_PRIOR_CHARS,
    MAX_PRIOR_WORDS,
    FollowUpError,
    Prior,
    Relation,
    adds_only_keys,
    bounded,
    built,
    deciding,
    kept_there,
    labels,
    named_as_before,
    pointed,
    points_at_a_place,
    refers,
    restrict,
    rows_asked,
    same_query,
    shows_only_rows,
    subject,
)
from services.sql.definitions import GlossaryEntry
from services.sql.gate import (
    GateRule,
    Limits,
    ResultSet,
    SqlGate,
    StatementError,
    StatementRunner,
    Verdict,
    scope_memos,
)
from services.sql.intents import Intent, IntentError, compile_intent
from services.sql.memory import (
    AnswerMemory,
    ConfirmedPair,
    Feedback,
    NearPair,
    memory_disabled,
    parse_uuid,
)
from services.sql.results import as_asked, joined
from services.sql.targets import Target, TargetRegistry
from services.sql.verify import CheckResult, StatementChecker, notes

_TENANT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_DESCRIBE_CHARS = 100_000
MAX_PAGE_SIZE = 1000
# The refusal reason (ErrorReason without its prefix) of a statement the principal's
# access policy refuses.
ACCESS_DENIED_REASON = "SQL_ACCESS_DENIED"


@dataclass(frozen=True)
class EngineLimits:
    """The configured request limits and defaults."""

    default_max_rows: int = 50
    max_rows: int = 1000
    statement_timeout_s: float = 5.0
    max_statement_timeout_s: float = 30.0
    client_timeout_grace_s: float = 1.0
    max_result_bytes: int = 1_048_576
    work_mem_kb: int = 8192
    max_sql_chars: int = 20_000
    max_question_chars: int = 2000
    max_instructions_chars: int = 4000
    catalog_max_chars: int = 8000


class SqlEngine:
    """Validates requests, then gates, executes, compiles, describes and asks."""

    def __init__(
        self,
        targets: TargetRegistry,
        *,
        gate: SqlGate,
        runner: StatementRunner,
        limits: EngineLimits,
        ask: AskPipeline | None = None,
        memory: AnswerMemory | None = None,
        checker: StatementChecker | None = None,
        tracer: trace.Tracer | None = None,
        meter: metrics.Meter | None = None,
    ) -> None:
        self.targets = targets
        self.memory = memory
        # the verification checks a follow-up's statement passes, as the pipeline's do
        self._checker = checker
        self._gate = gate
        self._runner = runner
        self.limits = limits
        self._ask = ask
        self._tracer = tracer or trace.NoOpTracer()
        meter = meter or metrics.NoOpMeter("tandem.sql")
        self._metrics = TandemMetrics(meter)

    # --- request rules ---------------------------------------------------------------

    @staticmethod
    def check_tenant(tenant_id: str) -> None:
        """``tenant_id`` is well formed; it then keys the gate's, the runner's and the
        generator's memos for the rest of the request (``gate.scope_memos``)."""
        if not tenant_id:
            raise InvalidArgument.field("tenant_id", "required")
        if not _TENANT.match(tenant_id):
            raise InvalidArgument.field(
                "tenant_id", "1-63 lowercase letters, digits, '-' or '_', starting alphanumeric"
            )
        principal = current_principal.get()
        scope_memos(tenant_id, view_key(principal))

    def _check_sql(self, sql: str) -> None:
        if not sql.strip():
            raise InvalidArgument.field("sql", "required")
        _no_nul("sql", sql)
        if len(sql) > self.limits.max_sql_chars:
            raise InvalidArgument.field(
                "sql", f"longer than {self.limits.max_sql_chars} characters"
            )

    def _check_question(self, question: str, *, required: bool) -> None:
        if required and not question.strip():
            raise InvalidArgument.field("question", "required")
        _no_nul("question", question)
        if len(question) > self.limits.max_question_chars:
            raise InvalidArgument.field(
                "question", f"longer than {self.limits.max_question_chars} characters"
            )

    def row_cap(self, max_rows: int) -> int:
        """The request's row cap: 0 means the default; out of range is INVALID_ARGUMENT."""
        if max_rows < 0 or max_rows > self.limits.max_rows:
            raise InvalidArgument.field("max_rows", f"must be between 0 and {self.limits.max_rows}")
        return max_rows or self.limits.default_max_rows

    def statement_timeout(self, seconds: float) -> float:
        if seconds < 0 or seconds > self.limits.max_statement_timeout_s:
            raise InvalidArgument.field(
                "statement_timeout",
                f"must be between 0 and {self.limits.max_statement_timeout_s:g} seconds",
            )
        return seconds or self.limits.statement_timeout_s

    def _limits(self, max_rows: int, timeout_s: float | None = None) -> Limits:
        return Limits(
            max_rows=max_rows,
            statement_timeout_s=timeout_s or self.limits.statement_timeout_s,
            max_result_bytes=self.limits.max_result_bytes,
            client_grace_s=self.limits.client_timeout_grace_s,
            work_mem_kb=self.limits.work_mem_kb,
        )

    def _target(self, tenant_id: str, database: str) -> Target:
        return self.targets.resolve(database, tenant_id)

    # --- operations ------------------------------------------------------------------

    def gate(self, sql: str, catalog: Catalog) -> Verdict:
        """The gate's verdict, recorded in the current span (rule names, never the SQL)."""
        with self._tracer.start_as_current_span("sql.gate") as span:
            verdict = self._gate.check(sql, catalog)
            record_verdict(span, verdict, self._metrics)
            return verdict

    async def validate(self, tenant_id: str, database: str, sql: str) -> Verdict:
        self.check_tenant(tenant_id)
        self._check_sql(sql)
        target = self._target(tenant_id, database)
        catalog = catalog_view(await target.get_catalog())
        return self.gate(sql, catalog)

    async def execute(
        self,
        tenant_id: str,
        database: str,
        sql: str,
        *,
        max_rows: int = 0,
        statement_timeout_s: float = 0.0,
    ) -> Executed:
        self.check_tenant(tenant_id)
        self._check_sql(sql)
        rows = self.row_cap(max_rows)
        timeout = self.statement_timeout(statement_timeout_s)
        target = self._target(tenant_id, database)
        catalog = catalog_view(await target.get_catalog())
        verdict = self.gate(sql, catalog)
        _raise_if_rejected(verdict, "sql")
        result = await self._run(target, verdict, self._limits(rows, timeout), "sql")
        return Executed(target.name, verdict, result)

    async def run_intent(
        self, tenant_id: str, database: str, intent: Intent, *, max_rows: int = 0
    ) -> Executed:
        self.check_tenant(tenant_id)
        rows = self.row_cap(max_rows)
        target = self._target(tenant_id, database)
        catalog = catalog_view(await target.get_catalog())
        try:
            compiled = compile_intent(intent, catalog, row_cap=rows)
        except IntentError as exc:
            raise InvalidArgument.field(
                exc.field, exc.description, reason="INVALID_INTENT"
            ) from None
        verdict = self.gate(compiled.sql, catalog)
        _raise_if_rejected(verdict, "intent")
        result = await self._run(target, verdict, self._limits(rows), "intent")
        return Executed(target.name, verdict, result, compiled.explanation)

    def _own_values(self, target: Target, loaded: Catalog) -> ValueReader:
        """How ``access.asking_view`` reads a principal's stored values: gated against
        their view of ``loaded`` and run as them, like any statement of theirs."""

        async def read(text: str, rows: int) -> list[tuple[int, str]] | None:
            verdict = self._gate.check(text, catalog_view(loaded))
            if not verdict.valid:
                return None
            try:
                result = await self._runner.run(
                    target.pool, verdict, self._limits(rows), database=target.name
                )
            except StatementError:
                return None
            return [
                (int(row.values[0].int_value), row.values[1].string_value)
                for row in result.rows
                if row.values[1].WhichOneof("kind") == "string_value"
            ]

        return read

    async def _run(self, target: Target, verdict: Verdict, limits: Limits, field: str) -> ResultSet:
        try:
            return await self._runner.run(target.pool, verdict, limits, database=target.name)
        except StatementError as exc:
            raise exc.to_tandem(field) from None

    async def describe(
        self,
        tenant_id: str,
        database: str,
        *,
        question: str = "",
        max_chars: int = 0,
        tables: Sequence[str] = (),
    ) -> Described:
        self.check_tenant(tenant_id)
        self._check_question(question, required=False)
        if max_chars < 0 or max_chars > MAX_DESCRIBE_CHARS:
            raise InvalidArgument.field("max_chars", f"must be between 0 and {MAX_DESCRIBE_CHARS}")
        target = self._target(tenant_id, database)
        catalog = catalog_view(await target.get_catalog())
        selected: list[TableInfo] | None = None
        if tables:
            selected = []
            for index, name in enumerate(tables):
                table = catalog.table(name)
                if table is None:
                    raise InvalidArgument.field(f"tables[{index}]", "not a table in the catalog")
                if table not in selected:
                    selected.append(table)
        rendered = render(
            catalog,
            max_chars=max_chars or self.limits.catalog_max_chars,
            question=question or None,
            tables=selected,
        )
        shown = {t.qualified for t in rendered.tables}
        joins = tuple(e for e in JoinGraph(catalog).edges if e.child in shown and e.parent in shown)
        return Described(target.name, catalog, rendered, joins)

    def _check_instructions(self, instructions: str) -> None:
        _no_nul("instructions", instructions)
        if len(instructions) > self.limits.max_instructions_chars:
            raise InvalidArgument.field(
                "instructions", f"longer than {self.limits.max_instructions_chars} characters"
            )

    async def ask(
        self,
        tenant_id: str,
        database: str,
        question: str,
        *,
        max_rows: int = 0,
        instructions: str = "",
        prior: Prior | None = None,
    ) -> AskResult:
        """Answer ``question`` on ``database``; ``instructions`` are the caller's business
        rules (data for the generator), applied after the database's glossary; ``prior``
        is the earlier statement a conversation's follow-up builds on."""
        self.check_tenant(tenant_id)
        self._check_question(question, required=True)
        self._check_instructions(instructions)
        rows = self.row_cap(max_rows)
        if prior is not None:
            self._check_prior(prior, rows)
        target = self._target(tenant_id, database)
        request = write_request(question)
        if request is not None:
            # Tandem never changes data: declined before the memory or any generator
            # reads it, on every database (the gate would refuse any such statement).
            trace.get_current_span().set_attribute("sql.refusal", READ_ONLY_REASON)
            return AskResult(
                AskOutcome.UNANSWERABLE,
                target.name,
                message=read_only_message(request),
                refusal=READ_ONLY_REASON,
            )
        loaded = await target.get_catalog()
        # a principal's view, with the values their own rows hold (never other people's)
        catalog = await asking_view(loaded, self._own_values(target, loaded))
        if self._ask is None:
            raise RuntimeError("no SQL generator configured")
        limits = self._limits(rows)
        if prior is not None:
            # A follow-up is about this conversation's earlier answer: the memory's pairs
            # (standalone questions) neither answer it nor learn from it.
            return _access_refusal(
                await self._follow_up(
                    question, prior, target, catalog, limits, instructions=instructions
                )
            )
        # A confirmed pair answers first (instructions change what a question means, so
        # a request that carries them skips the memory); a miss changes nothing below.
        reused: AskResult | None = None
        near: tuple[NearPair, ...] = ()
        looked = time.perf_counter()
        if self.memory is not None and not instructions.strip():
            reused, near = await self.memory.reuse(tenant_id, target, catalog, question, limits)
        looked = time.perf_counter() - looked
        if reused is None:
            narrowed = _narrow(catalog, question, instructions, target.glossary)
            result = _noted(
                await self._ask.ask(
                    question,
                    target,
                    narrowed.catalog,
                    limits,
                    instructions=instructions,
                    glossary=target.glossary,
                    examples=[(n.pair.question, n.pair.sql) for n in near],
                ),
                narrowed,
            )
        else:
            result = reused
        if reused is None and self.memory is not None:
            # What the miss cost is visible beside the pipeline's own stages.
            result.timings["memory"] = looked
            result.timings["total"] = result.timings.get("total", 0.0) + looked
            result = self.memory.few_shot(result, near)
        result = _access_refusal(result)
        if self.memory is not None:
            result = await self.memory.remember(tenant_id, question, result)
        return result

    # --- follow-ups on an earlier statement --------------------------------------------

    def _check_prior(self, prior: Prior, rows: int) -> None:
        _no_nul("prior.sql", prior.sql)
        if not prior.sql.strip():
            raise InvalidArgument.field("prior.sql", "is required with prior.relation")
        if len(prior.sql) > min(self.limits.max_sql_chars, MAX_PRIOR_CHARS):
            raise InvalidArgument.field(
                "prior.sql", f"longer than {min(self.limits.max_sql_chars, MAX_PRIOR_CHARS)}"
            )
        if prior.relation is Relation.ROW_LIMIT and not 1 <= prior.limit <= rows:
            raise InvalidArgument.field("prior.limit", f"must be between 1 and {rows}")
        if prior.remove and prior.relation is not Relation.FILTER:
            # Removing edits the conditions a FILTER adds; with another relation it would
            # be dropped without a word, and the caller answered as if it never asked.
            raise InvalidArgument.field(
                "prior.remove", f"is only meaningful with FILTER, not {prior.relation.name}"
            )
        for name, words, relation in (
            ("prior.dimension", prior.dimension, Relation.REGROUP),
            ("prior.value", prior.value, Relation.VALUE_SWAP),
            ("prior.condition", prior.condition, Relation.FILTER),
            ("prior.period", prior.period, Relation.TIME_SHIFT),
        ):
            _no_nul(name, words)
            if prior.relation is relation and not words.strip():
                raise InvalidArgument.field(name, f"is required with {relation.name}")
            if len(words) > MAX_PRIOR_WORDS:
                raise InvalidArgument.field(name, f"longer than {MAX_PRIOR_WORDS} characters")

    async def _follow_up(
        self,
        question: str,
        prior: Prior,
        target: Target,
        catalog: Catalog,
        limits: Limits,
        *,
        instructions: str,
    ) -> AskResult:
        """The follow-up on ``prior``'s structure (see ``_followup``); what cannot be
        built on it is refused with the reason, never answered from a guess."""
        assert self._ask is not None
        started = time.perf_counter()
        with self._tracer.start_as_current_span("sql.follow_up") as span:
            span.set_attribute("sql.follow_up.relation", prior.relation.value)
            earlier = self.gate(prior.sql, catalog)
            _raise_if_rejected(earlier, "prior.sql")
            linked: AskResult | None = None
            try:
                if (
                    prior.relation is Relation.RESULT_SET
                    and (kept := bounded(question, earlier.normalized_sql, catalog)) is not None
                ):
                    # "which of these operated more than 500?": a bound on the earlier
                    # statement's one measure, placed on its structure (no words linked).
                    sql, explanation = (
                        kept,
                        "the previous statement, kept to the rows past the bound",
                    )
                elif prior.relation is Relation.RESULT_SET:
                    about = subject(earlier.normalized_sql, catalog)
                    asked = (
                        pointed(question, about.table, catalog) if refers(question) else question
                    )
                    narrowed = _narrow(catalog, asked, instructions, target.glossary)
                    linked = _noted(await self._ask.ask(
                        asked, target, narrowed.catalog, limits,
                        instructions=instructions, glossary=target.glossary,
                    ), narrowed)  # fmt: skip
                    if linked.answer is None:
                        # words the linker placed nowhere may still ask about the
                        # earlier rows by their keys and types (``conversation.rows_asked``)
                        rows = rows_asked(question, earlier.normalized_sql, catalog)
                        if rows is None:
                            span.set_attribute("sql.follow_up.outcome", linked.outcome.name)
                            return linked
                        (sql, explanation), linked = rows, None
                    else:
                        # the linked statement's joins, as composed (an answer asked
                        # outright writes them as a semi-join: ``results.joined``)
                        reading = joined(linked.answer.verdict.normalized_sql, catalog)
                        if shows_only_rows(question, reading, about, catalog):
                            raise FollowUpError(
                                "the question asks something about the previous rows that no "
                                "column of theirs was read as"
                            )
                        shown = labels(earlier.normalized_sql, about, catalog)
                        chosen_by = deciding(earlier.normalized_sql, about, catalog)
                        sql = restrict(reading, earlier.normalized_sql,
                                       about, shown, chosen_by, catalog=catalog)  # fmt: skip
                        sql = named_as_before(sql, earlier.normalized_sql, about, catalog)
                        if points_at_a_place(question):
                            sql = kept_there(sql, earlier.normalized_sql)
                        sql = as_asked(sql, linked.answer.verdict.normalized_sql, catalog)
                        explanation = (
                            f"{linked.answer.explanation}, among the previous answer's rows"
                        )
                else:

                    async def link(text: str) -> str | None:
                        # The words read as any question is, about one of the earlier
                        # statement's tables; only the conditions of its statement are
                        # used (see conversation._conditions).
                        probe = await self._ask.ask(  # type: ignore[union-attr]
                            text, target, catalog, limits,
                            instructions=instructions, glossary=target.glossary,
                        )  # fmt: skip
                        if probe.answer is None:
                            return None
                        return joined(probe.answer.verdict.normalized_sql, catalog)

                    # edited on the joins a semi-join of the earlier answer stands for,
                    # written back as the question asked outright writes it
                    sql, explanation = await built(
                        joined(earlier.normalized_sql, catalog), prior, catalog, link, question
                    )
                    sql = as_asked(sql, earlier.normalized_sql, catalog)
            except FollowUpError as exc:
                if prior.relation in (Relation.REGROUP, Relation.VALUE_SWAP):
                    # Nothing in the statement fits the words: read the follow-up spelled
                    # out (the router's rewrite), as any question.
                    span.set_attribute("sql.follow_up.outcome", "READ_AS_QUESTION")
                    narrowed = _narrow(catalog, question, instructions, target.glossary)
                    return _noted(await self._ask.ask(
                        question, target, narrowed.catalog, limits,
                        instructions=instructions, glossary=target.glossary,
                    ), narrowed)  # fmt: skip
                span.set_attribute("sql.follow_up.outcome", "UNANSWERABLE")
                return AskResult(AskOutcome.UNANSWERABLE, target.name, message=str(exc))
            verdict = self.gate(sql, catalog)
            if not verdict.valid:
                span.set_attribute("sql.follow_up.outcome", "GATE_REJECTED")
                denied = verdict.first_rule is GateRule.ACCESS_DENIED
                return AskResult(
                    AskOutcome.UNANSWERABLE,
                    target.name,
                    message="the follow-up's statement was refused by the gate",
                    refusal=ACCESS_DENIED_REASON if denied else "",
                )
            if linked is None:
                alike = await self._spelled_alike(
                    question, verdict.normalized_sql, target, catalog, limits,
                    relation=prior.relation, instructions=instructions,
                )  # fmt: skip
                if alike is not None:
                    span.set_attribute("sql.follow_up.outcome", "ANSWERED_AS_SPELLED_OUT")
                    return alike
            gated = time.perf_counter()
            result = await self._run(target, verdict, limits, "prior.sql")
            executed = time.perf_counter()
            checks: tuple[CheckResult, ...] = ()
            if self._checker is not None:
                checks = await self._checker.check(verdict, result, target, catalog, limits)
                refused = self._checker.refuses(checks)
                if refused is not None:
                    span.set_attribute("sql.follow_up.outcome", "CHECK_FAILED")
                    return AskResult(
                        AskOutcome.UNANSWERABLE, target.name, message=refused.reason,
                        checks=checks,
                    )  # fmt: skip
            span.set_attribute("sql.follow_up.outcome", "ANSWERED")
        explanation = f"{explanation} {notes(checks)}".strip()
        attempt = Attempt(1, AttemptOutcome.SUCCEEDED, verdict.normalized_sql,
                          duration_s=executed - started, checks=checks)  # fmt: skip
        timings = dict(linked.timings) if linked is not None else {}
        timings.update(follow_up=gated - started, execute=executed - gated,
                       total=executed - started)  # fmt: skip
        return AskResult(
            AskOutcome.ANSWERED,
            target.name,
            interpretation=linked.interpretation if linked is not None else explanation,
            answer=Answered(verdict, result, explanation),
            attempts=(*(linked.attempts if linked is not None else ()), attempt),
            calls=linked.calls if linked is not None else (),
            degraded_llm=linked.degraded_llm if linked is not None else False,
            timings=timings,
            checks=checks,
        )

    async def _spelled_alike(
        self,
        question: str,
        built_sql: str,
        target: Target,
        catalog: Catalog,
        limits: Limits,
        *,
        relation: Relation,
        instructions: str,
    ) -> AskResult | None:
        """The follow-up spelled out (the router's rewrite) answered as a question of its
        own, when its statement computes what the edited statement computes and differs
        at most in the plain columns it shows: the conversation then answers as the same
        question asked alone would (a name where the earlier answer showed an id)."""
        assert self._ask is not None
        spelled = await self._ask.ask(
            question, target, catalog, limits,
            instructions=instructions, glossary=target.glossary,
        )  # fmt: skip
        if spelled.answer is None:
            return None
        reading = spelled.answer.verdict.normalized_sql
        if not same_query(reading, built_sql, catalog):
            return None
        if relation in (Relation.ROW_LIMIT, Relation.TIME_SHIFT) and adds_only_keys(
            reading, built_sql, catalog
        ):
            # A row limit is the earlier answer cut short, a time shift the earlier answer
            # over another period: its rows keep the columns they were shown with, and a
            # rewrite ("…, top 1 only?", "… opened for 2010?") that the linker reads with
            # the key beside the name is no closer to the question asked alone.
            return None
        return spelled

    # --- the answer memory -------------------------------------------------------------

    def _memory(self) -> AnswerMemory:
        if self.memory is None:
            raise memory_disabled()
        return self.memory

    async def teach(self, tenant_id: str, database: str, question: str, sql: str) -> ConfirmedPair:
        """Store a confirmed pair after the gate accepts ``sql`` on the database."""
        self.check_tenant(tenant_id)
        self._check_question(question, required=True)
        self._check_sql(sql)
        memory = self._memory()
        target = self._target(tenant_id, database)
        catalog = catalog_view(await target.get_catalog())
        return await memory.teach(tenant_id, target, catalog, question, sql)

    async def list_pairs(
        self, tenant_id: str, database: str, *, page_size: int, page_token: str
    ) -> tuple[list[ConfirmedPair], str]:
        self.check_tenant(tenant_id)
        if page_size < 0 or page_size > MAX_PAGE_SIZE:
            raise InvalidArgument.field("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
        memory = self._memory()
        name = self._target(tenant_id, database).name if database else ""
        return await memory.store.list_pairs(
            tenant_id, database=name, page_size=page_size or 50, page_token=page_token
        )

    async def delete_pair(self, tenant_id: str, pair_id: str, *, allow_missing: bool) -> bool:
        self.check_tenant(tenant_id)
        key = parse_uuid(pair_id, "pair_id")
        deleted = await self._memory().store.delete_pair(tenant_id, key)
        if not deleted and not allow_missing:
            raise NotFound("no such confirmed pair for this tenant",
                           reason="CONFIRMED_PAIR_NOT_FOUND")  # fmt: skip
        return deleted

    async def feedback(
        self, tenant_id: str, answer_id: str, rating: int, *, corrected_sql: str, note: str
    ) -> Feedback:
        self.check_tenant(tenant_id)
        memory = self._memory()

        async def catalog_for(database: str) -> tuple[Target, Catalog]:
            target = self._target(tenant_id, database)
            return target, catalog_view(await target.get_catalog())

        return await memory.feedback(
            tenant_id,
            answer_id,
            rating,
            corrected_sql=corrected_sql,
            note=note,
            catalog_for=catalog_for,
            max_sql_chars=self.limits.max_sql_chars,
        )


def _narrow(
    catalog: Catalog, question: str, instructions: str, glossary: Sequence[GlossaryEntry]
) -> Narrowed:
    """The tables a question is linked against: the words of the question, of the
    request's instructions, and of the definitions of the glossary terms it says."""
    index = index_of(catalog)
    if not index.wide:  # a small catalog is linked whole: no words to weigh
        return index.narrow(question)
    low = question.lower()
    defined = [
        entry.text()
        for entry in glossary
        if any(re.search(rf"\b{re.escape(name.lower())}\b", low) for name in entry.names if name)
    ]
    return index.narrow(question, context=" ".join([instructions, *defined]))


def _noted(result: AskResult, narrowed: Narrowed) -> AskResult:
    """The answer's interpretation with the table it read where look-alikes of it were
    passed over (or the copy the question named), so a reader sees which one was used."""
    if result.answer is None:
        return result
    note = narrowed.note(result.answer.verdict.tables_used)
    if not note:
        return result
    return replace(result, interpretation=f"{result.interpretation} {note}".strip())


def _access_refusal(result: AskResult) -> AskResult:
    """An unanswered question whose statements the principal's access policy refused
    says so (refusal SQL_ACCESS_DENIED) instead of reading as a question the database
    cannot answer."""
    if result.answer is not None or result.refusal:
        return result
    if any(
        v.rule is GateRule.ACCESS_DENIED for attempt in result.attempts for v in attempt.violations
    ):
        return replace(
            result,
            outcome=AskOutcome.UNANSWERABLE,
            refusal=ACCESS_DENIED_REASON,
            message="the principal may not read what this question needs",
        )
    return result


def _raise_if_rejected(verdict: Verdict, field: str) -> None:
    if verdict.valid:
        return
    first = verdict.violations[0]
    if first.rule is GateRule.ACCESS_DENIED:
        # The principal's view refuses it: said as a permission, naming the attribute the
        # principal lacks when that is why (never a value).
        metadata = {"rule": first.rule.wire_name}
        if first.subject.startswith("principal."):
            metadata["attribute"] = first.subject.removeprefix("principal.")
        raise PermissionDenied(
            f"the principal may not read what the statement reads ({first.message})",
            reason=ACCESS_DENIED_REASON,
            metadata=metadata,
        )
    raise InvalidArgument.field(
        field,
        f"the read-only gate refused the statement ({first.rule.wire_name})",
        reason="SQL_REJECTED",
        metadata={"rule": first.rule.wire_name},
    )


def _no_nul(field: str, text: str) -> None:
    """The shared rule for free text (``common.control_character_problem``), here too for
    callers inside the network: Postgres text cannot hold NUL, and the linker marks places
    in statements with it, so a request carrying one is refused by name, never
    half-processed."""
    problem = control_character_problem(text, free_text=True)
    if problem is not None:
        raise InvalidArgument.field(field, problem)
