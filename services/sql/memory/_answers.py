"""Answers that teach: recording answers, feedback, confirmed pairs and their reuse.

:class:`AnswerMemory` sits between the engine and the store. It owns every rule of the
memory — what may be stored (only statements the gate accepts), when a stored pair
answers a new question (similar templates, agreeing words, an adaptation that passes
the gate) — and keeps the pipeline hook in the engine to a few lines. Reading the store
and the embedding service fails open: when either is down, AskQuestion runs the normal
pipeline and the answer carries no ``answer_id``.

Spans carry hit or miss, the similarity, the pair id and a reason code — never the
question or a statement.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace

from services.common import (
    Database,
    Env,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    SettingsError,
    TandemError,
    Unavailable,
    current_principal,
    embedded_server_url,
)
from services.common.spans import node_span
from services.sql.ask import (
    Answered,
    AskOutcome,
    AskResult,
    Attempt,
    AttemptOutcome,
    GeneratorRole,
    ModelTier,
    PairUse,
)
from services.sql.catalog import Catalog, StoredValues, compared_columns, stored_in
from services.sql.gate import (
    RESOURCE_LIMIT_REASON,
    FailureKind,
    GateRule,
    Limits,
    SqlGate,
    StatementError,
    StatementRunner,
    Verdict,
)
from services.sql.intents import intent_to_pb
from services.sql.linker import form_words
from services.sql.memory._reuse import (
    Adapted,
    NotAdaptable,
    Reading,
    adapt,
    agreement,
    content_words,
    is_year,
    measures,
    names_schema,
    opposite_ends,
    other_kind,
    read,
    roles_differ,
    stem,
    word_swaps,
)
from services.sql.memory._store import (
    ConfirmedPair,
    EmbeddingUnavailable,
    MemoryStore,
    NearPair,
    PairSource,
    QuestionEmbedder,
    Rating,
    app_conninfo,
    cosine,
    parse_uuid,
)
from services.sql.targets import Target
from services.sql.verify import CheckResult, StatementChecker, notes
from services.sql.words import name_words

_log = logging.getLogger("tandem.sql.memory")
MAX_NOTE_CHARS = 500


@dataclass(frozen=True)
class MemorySettings:
    """The answer memory's settings (environment variables in brackets).

    A value swap (the templates agree word for word once the statement explains every
    differing value) needs ``min_similarity``; a paraphrase needs
    ``paraphrase_similarity`` and ``min_agreement`` of content words, no differing word
    that names a table or column, no other aggregate or end, and no word exchanged for
    another beyond the question's form. Those checks are what keep a near miss out (on
    both dev sets they hold false reuse at 0 with both floors at 0); the floors are a
    margin below the least similar paraphrase measured (0.75), not the guard.
    """

    enabled: bool = True  # SQL_MEMORY
    retention_days: int = 365  # SQL_MEMORY_RETENTION_DAYS: confirmed pairs
    answer_retention_days: int = 30  # SQL_ANSWER_RETENTION_DAYS: answers awaiting feedback
    min_similarity: float = 0.72  # SQL_MEMORY_MIN_SIMILARITY
    paraphrase_similarity: float = 0.72  # SQL_MEMORY_PARAPHRASE_SIMILARITY
    min_agreement: float = 0.5  # SQL_MEMORY_MIN_AGREEMENT
    candidates: int = 3
    embedding_addr: str = "127.0.0.1:50054"  # EMBEDDING_ADDR
    embedding_timeout_s: float = 2.0  # SQL_MEMORY_EMBEDDING_TIMEOUT_S
    app_database_url: str | None = None  # SQL_MEMORY_APP_DATABASE_URL
    # How long a tenant seen without pairs on a database is not asked again (a pair
    # taught through another replica is reused after at most this long; 0: always ask).
    empty_ttl_s: float = 2.0  # SQL_MEMORY_EMPTY_TTL_S

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> MemorySettings:
        env = Env(environ)
        return cls(
            enabled=env.get_bool("SQL_MEMORY", True),
            retention_days=env.get_int("SQL_MEMORY_RETENTION_DAYS", 365, minimum=1),
            answer_retention_days=env.get_int("SQL_ANSWER_RETENTION_DAYS", 30, minimum=1),
            min_similarity=_share(env, "SQL_MEMORY_MIN_SIMILARITY", 0.72),
            paraphrase_similarity=_share(env, "SQL_MEMORY_PARAPHRASE_SIMILARITY", 0.72),
            min_agreement=_share(env, "SQL_MEMORY_MIN_AGREEMENT", 0.5),
            embedding_addr=env.get_str("EMBEDDING_ADDR", "127.0.0.1:50054"),
            embedding_timeout_s=env.get_float("SQL_MEMORY_EMBEDDING_TIMEOUT_S", 2.0, minimum=0.05),
            app_database_url=env.get_optional("SQL_MEMORY_APP_DATABASE_URL"),
            empty_ttl_s=_empty_ttl(env),
        )


def _empty_ttl(env: Env) -> float:
    value = env.get_float("SQL_MEMORY_EMPTY_TTL_S", 2.0, minimum=0.0)
    if value > 60.0:
        # a pair taught through another replica would go unused for minutes
        raise SettingsError(f"SQL_MEMORY_EMPTY_TTL_S must be at most 60, got {value}")
    return value


def _share(env: Env, name: str, default: float) -> float:
    value = env.get_float(name, default, minimum=0.0)
    if value > 1.0:
        raise SettingsError(f"{name} must be between 0 and 1, got {value}")
    return value


@dataclass(frozen=True)
class Feedback:
    """What SubmitFeedback stored."""

    feedback_id: str
    pair: ConfirmedPair | None


@dataclass(frozen=True)
class Candidate:
    """A pair that answers the question, and its adapted statement (not yet gated)."""

    near: NearPair
    sql: str
    substitutions: int
    replaced: tuple[tuple[str, str], ...] = ()


def _quoted(sql: str) -> list[str]:
    """The string literals of a statement, lower-cased."""
    return [m.group(1).replace("''", "'").lower() for m in re.finditer(r"'((?:[^']|'')*)'", sql)]


def schema_words(catalog: Catalog) -> set[str]:
    """Every word of every table and column name, lowercased and stemmed like question
    words: a question word that differs between two questions and names a part of the
    schema means they ask about different things."""
    words: set[str] = set()
    for table in catalog.tables:
        for name in (table.name, *(c.name for c in table.columns)):
            for part in name_words(name):
                if len(part) > 2:  # as a question word compares, an aggregate's word too
                    words |= {stem(part)} & content_words(Reading((), (stem(part),)))
    return words


class AnswerMemory:
    """Teach, feedback, recall and reuse over one :class:`MemoryStore`."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: QuestionEmbedder,
        *,
        gate: SqlGate,
        runner: StatementRunner,
        settings: MemorySettings | None = None,
        tracer: trace.Tracer | None = None,
        few_shot: bool = True,
        checker: StatementChecker | None = None,
    ) -> None:
        self.store = store
        # an adapted statement passes the verification checks, or the pair is a miss
        self._checker = checker
        self._embedder = embedder
        self._gate = gate
        self._runner = runner
        self.settings = settings or MemorySettings()
        self._tracer = tracer or trace.NoOpTracer()
        # Whether the generator reads the nearest pairs as examples (a model does, the
        # rules do not): only then does a miss need the embedding for its own sake.
        self._few_shot = few_shot
        # Table and column words per catalog version: computed once, not per question.
        # Each keyed by ``Catalog.memo_key``: a principal's view of a load apart from the
        # full catalog (its stored values are only what they may see).
        self._vocabulary: dict[tuple[str, float, str], set[str]] = {}
        # Stored questions as read for reuse (bounded; a question's reading never changes).
        self._readings: dict[tuple[str, str, float, str], Reading] = {}
        self._stored_values: dict[tuple[str, float, str], StoredValues] = {}

    # --- writing ----------------------------------------------------------------------

    def _gated(self, sql: str, catalog: Catalog, field: str) -> Verdict:
        """The verdict on ``sql``; INVALID_ARGUMENT naming the rule when it, or its
        normalised form (what is stored, and what a reuse gates and runs), is refused.
        Checking the stored form here also leaves its verdict remembered for the hits."""
        verdict = self._gate.check(sql, catalog)
        if verdict.valid and verdict.normalized_sql != sql:
            stored = self._gate.check(verdict.normalized_sql, catalog)
            if not stored.valid:
                verdict = stored
        if not verdict.valid:
            rule = verdict.violations[0].rule.wire_name
            raise InvalidArgument.field(
                field,
                f"the read-only gate refused the statement ({rule})",
                reason="SQL_REJECTED",
                metadata={"rule": rule},
            )
        return verdict

    async def teach(
        self,
        tenant_id: str,
        target: Target,
        catalog: Catalog,
        question: str,
        sql: str,
        *,
        source: PairSource = PairSource.TAUGHT,
        intent: dict[str, Any] | None = None,
        field: str = "sql",
    ) -> ConfirmedPair:
        """Gate ``sql`` on the target's catalog, embed the question's template, store."""
        verdict = self._gated(sql, catalog, field)
        reading = read(question, self._values(catalog))
        with node_span(self._tracer, "sql.memory.teach") as span:
            try:
                vector, model = await self._embedder.embed(reading.template)
            except EmbeddingUnavailable:
                span.set_attribute("sql.memory.error", "EMBEDDING_UNAVAILABLE")
                raise Unavailable(
                    "the embedding service cannot embed the question now",
                    reason="EMBEDDING_UNAVAILABLE",
                ) from None
            pair = await self.store.save_pair(
                tenant_id,
                database=target.name,
                question=question,
                template=reading.template,
                sql=verdict.normalized_sql,
                source=source,
                embedding=vector,
                model_name=model,
                intent=intent,
            )
            span.set_attributes({"sql.memory.pair_id": pair.pair_id,
                                 "sql.memory.source": source.name})  # fmt: skip
        return pair

    async def feedback(
        self,
        tenant_id: str,
        answer_id: str,
        rating: int,
        *,
        corrected_sql: str,
        note: str,
        catalog_for: Any,
        max_sql_chars: int,
    ) -> Feedback:
        """Record a rating; HELPFUL stores the answer's statement, a correction its own.

        ``catalog_for(database)`` returns ``(target, catalog)`` for the answer's database,
        so the correction is gated on the catalog it will run against.
        """
        answer_key = parse_uuid(answer_id, "answer_id")
        try:
            verdict = Rating(rating)
        except ValueError:
            raise InvalidArgument.field("rating", "must be HELPFUL or WRONG") from None
        if len(note) > MAX_NOTE_CHARS:
            raise InvalidArgument.field("note", f"longer than {MAX_NOTE_CHARS} characters")
        if len(corrected_sql) > max_sql_chars:
            raise InvalidArgument.field("corrected_sql", f"longer than {max_sql_chars} characters")
        if corrected_sql.strip() and verdict is Rating.HELPFUL:
            raise InvalidArgument.field("corrected_sql", "only with a WRONG rating")
        answer = await self.store.answer(tenant_id, answer_key)
        if answer is None:
            raise NotFound("no such answer for this tenant", reason="ANSWER_NOT_FOUND")
        pair: ConfirmedPair | None = None
        if corrected_sql.strip():
            target, catalog = await catalog_for(answer.database)
            pair = await self.teach(
                tenant_id, target, catalog, answer.question, corrected_sql,
                source=PairSource.CORRECTED, field="corrected_sql",
            )  # fmt: skip
        elif verdict is Rating.HELPFUL and answer.sql:
            target, catalog = await catalog_for(answer.database)
            pair = await self.teach(
                tenant_id, target, catalog, answer.question, answer.sql,
                source=PairSource.HELPFUL, intent=answer.intent,
            )  # fmt: skip
        feedback_id = await self.store.record_feedback(
            tenant_id,
            answer_id=answer_key,
            rating=verdict,
            corrected_sql=corrected_sql,
            note=note,
            pair_id=pair.pair_id if pair else None,
        )
        return Feedback(feedback_id, pair)

    async def remember(self, tenant_id: str, question: str, result: AskResult) -> AskResult:
        """``result`` with an ``answer_id`` (and the reused pair's use counted); unchanged
        when the store is down (the answer matters more than its feedback handle)."""
        sql = result.answer.verdict.normalized_sql if result.answer else ""
        intent = _intent_json(result)
        try:
            answer_id = await self.store.record_answer(
                tenant_id, database=result.database, question=question, sql=sql, intent=intent,
                used_pair=result.reused.pair_id if result.reused else None,
            )  # fmt: skip
        except TandemError as exc:
            _log.warning("answer not recorded", extra={"fields": {"error.reason": exc.reason}})
            return result
        return replace(result, answer_id=answer_id)

    # --- reuse ------------------------------------------------------------------------

    async def find(
        self, tenant_id: str, database: str, catalog: Catalog, question: str
    ) -> tuple[Candidate | None, list[NearPair]]:
        """The nearest confirmed pair that answers ``question``, adapted (None on a miss
        or when the store or the embedding service is down: fail open), and the nearest
        pairs above the similarity floor (few-shot examples for a model on a miss)."""
        with node_span(self._tracer, "sql.memory.lookup") as span:
            if self.store.known_empty(tenant_id, database):
                # Most tenants teach nothing: the question is not read (its values looked
                # up, its template built) for a lookup the store knows finds no pair.
                span.set_attributes({"sql.memory.hit": False, "sql.memory.miss": "NO_PAIRS"})
                return None, []
            asked = read(question, self._values(catalog))
            try:
                # Cheap first: a tenant without pairs here costs one indexed query, and a
                # value swap of a confirmed question (the same template) no embedding.
                survey = await self.store.survey(tenant_id, database, asked.template)
                if not survey.pairs:
                    span.set_attributes({"sql.memory.hit": False, "sql.memory.miss": "NO_PAIRS"})
                    return None, []
                for pair in survey.same:
                    found = self._adapted(NearPair(pair, 1.0), asked, catalog)
                    if isinstance(found, Candidate):
                        _record_hit(span, found, exact=True)
                        return found, []
                # The embedding (the model, most of a lookup's time) only when some pair
                # passes the word checks a hit needs anyway, or a model wants examples.
                if survey.complete and not self._few_shot:
                    words = [p for p in survey.pairs if self._could_answer(p, asked, catalog)]
                    if not words:
                        span.set_attributes({"sql.memory.hit": False,
                                             "sql.memory.miss": "NO_WORD_CANDIDATE"})  # fmt: skip
                        return None, []
                    near, adaptations = await self._rank(tenant_id, words, asked, catalog)
                    return self._first_hit(span, near, asked, catalog, adaptations), near
                vector, model = await self._embedder.embed(asked.template)
                near = await self.store.nearest(
                    tenant_id, database, vector, model_name=model,
                    limit=self.settings.candidates, min_similarity=self.settings.min_similarity,
                )  # fmt: skip
            except (EmbeddingUnavailable, TandemError) as exc:
                reason = (
                    "EMBEDDING_UNAVAILABLE"
                    if isinstance(exc, EmbeddingUnavailable)
                    else getattr(exc, "reason", "ERROR")
                )
                _log.warning("answer memory skipped", extra={"fields": {"error.reason": reason}})
                span.set_attributes({"sql.memory.hit": False, "sql.memory.miss": reason})
                span.set_status(trace.StatusCode.ERROR, reason)
                return None, []
            return self._first_hit(span, near, asked, catalog, {}), near

    async def _rank(
        self, tenant_id: str, words: list[ConfirmedPair], asked: Reading, catalog: Catalog
    ) -> tuple[list[NearPair], dict[str, Adapted | str]]:
        """The word candidates most similar first (at least ``min_similarity``), with
        their adaptations.

        Only a word candidate can answer, so its stored vector is compared here instead
        of searching every pair. The embedding is requested first and the model works
        while the stored vectors are read and the statements adapted and gated (the gate
        remembers its verdicts), so a hit waits for about the embedding alone. (The
        request leaves during the read: the event loop must run for it to go out.)
        """
        embedding = asyncio.ensure_future(self._embedder.embed(asked.template))
        try:
            stored = await self.store.vectors(tenant_id, [p.pair_id for p in words])
            adaptations: dict[str, Adapted | str] = {}
            for pair in words:
                adaptations[pair.pair_id] = outcome = self._adapt(pair, asked, catalog)
                if isinstance(outcome, Adapted):
                    self._gate.check(outcome.sql, catalog)
            vector, model = await embedding
        finally:
            if not embedding.done():
                embedding.cancel()
        near = []
        for pair in words:
            found = stored.get(pair.pair_id)
            if found is None or found[0] != model:
                continue
            similarity = cosine(vector, found[1])
            if similarity >= self.settings.min_similarity:
                near.append(NearPair(pair, similarity))
        near.sort(key=lambda item: item.similarity, reverse=True)
        return near[: self.settings.candidates], adaptations

    def _first_hit(
        self,
        span: trace.Span,
        near: list[NearPair],
        asked: Reading,
        catalog: Catalog,
        adaptations: Mapping[str, Adapted | str],
    ) -> Candidate | None:
        """The most similar pair that answers ``asked``, recorded on ``span``."""
        span.set_attribute("sql.memory.candidates", len(near))
        why = "NO_CANDIDATE"
        for item in near:
            outcome = self._adapted(item, asked, catalog, adaptations.get(item.pair.pair_id))
            if isinstance(outcome, Candidate):
                _record_hit(span, outcome, exact=False)
                return outcome
            why = outcome
        span.set_attributes({"sql.memory.hit": False, "sql.memory.miss": why})
        if near:
            span.set_attribute("sql.memory.similarity", round(near[0].similarity, 4))
        return None

    def _reading(self, question: str, catalog: Catalog) -> Reading:
        key = (question, *catalog.memo_key)
        reading = self._readings.get(key)
        if reading is None:
            if len(self._readings) >= 4096:
                self._readings.clear()
            reading = self._readings[key] = read(question, self._values(catalog))
        return reading

    def _values(self, catalog: Catalog) -> StoredValues:
        """The catalog's stored values (the linker's value lookup), built once per load."""
        key = catalog.memo_key
        values = self._stored_values.get(key)
        if values is None:
            if len(self._stored_values) > 64:
                self._stored_values.clear()
            values = self._stored_values[key] = StoredValues.of(catalog)
        return values

    def _could_answer(self, pair: ConfirmedPair, asked: Reading, catalog: Catalog) -> bool:
        """False only when ``pair`` cannot answer ``asked`` whatever its similarity: the
        necessary word conditions of :meth:`_adapted`, without the statement or a vector.

        Both paths need the same literal shape. A reworded question needs the content
        words to agree; a value swap needs every differing content word to be one side of
        a word-for-word swap (the only differences its statement may explain).
        """
        stored = self._reading(pair.question, catalog)
        if [lit.kind for lit in stored.literals] != [lit.kind for lit in asked.literals]:
            return False
        if agreement(stored, asked) >= self.settings.min_agreement:
            return True
        swaps = word_swaps(stored, asked)
        if not swaps:
            return False
        kept, wanted = content_words(stored), content_words(asked)
        return wanted - kept <= {stem(new) for _, new in swaps} and kept - wanted <= {
            stem(old) for old, _ in swaps
        }

    def _adapt(self, pair: ConfirmedPair, asked: Reading, catalog: Catalog) -> Adapted | str:
        """``pair``'s statement adapted to ``asked``, or why it cannot be."""
        try:
            return adapt(pair.sql, self._reading(pair.question, catalog), asked)
        except NotAdaptable as exc:
            return exc.why.upper()

    def _adapted(
        self,
        item: NearPair,
        asked: Reading,
        catalog: Catalog,
        adapted: Adapted | str | None = None,
    ) -> Candidate | str:
        """The pair adapted to the asked question (``adapted`` when already done), or why
        it does not answer it."""
        stored = self._reading(item.pair.question, catalog)
        if adapted is None:
            adapted = self._adapt(item.pair, asked, catalog)
        if isinstance(adapted, str):
            return adapted
        if other_kind(stored, asked, self._values(catalog)):
            return "VALUE_KIND_DIFFERS"
        if roles_differ(stored, asked):
            return "ROLE_DIFFERS"
        kept, wanted = content_words(stored), content_words(asked)
        differing = kept ^ wanted
        # A differing word the statements' own values do not explain ("female" swapped
        # for "male" is a value) that names a part of the schema ("received" where
        # "made" was, and the schema has a receiver) asks about another thing.
        quoted = " ".join(_quoted(item.pair.sql) + _quoted(adapted.sql))
        named = self._named_by_value(item.pair.sql, catalog)
        schema = self._schema_words(catalog)
        # A word naming a column the statement compares a value with is explained when
        # the value answers for it (see _named_by_value).
        by_value = {
            w for w in differing if names_schema({w}, named[0] if w in wanted else named[1])
        }
        unexplained = {w for w in differing if w not in quoted} - by_value
        if names_schema(unexplained, schema):
            return "SCHEMA_WORD_DIFFERS"
        if measures(stored) != measures(asked) or opposite_ends(stored, asked):
            return "MEASURE_DIFFERS"
        if adapted.paraphrase:
            if item.similarity < self.settings.paraphrase_similarity:
                return "PARAPHRASE_SIMILARITY"
            if agreement(stored, asked) < self.settings.min_agreement:
                return "WORD_AGREEMENT"
            if (differing & schema) - by_value:
                return "SCHEMA_WORD_DIFFERS"
            # Each says something the other does not ("arrive" where "depart" was):
            # words beyond the form and the values are exchanged, not added.
            said = differing - by_value - _FORM
            if said & kept and said & wanted:
                return "WORDS_EXCHANGED"
        return Candidate(item, adapted.sql, adapted.substitutions, adapted.replaced)

    @staticmethod
    def _named_by_value(sql: str, catalog: Catalog) -> tuple[set[str], set[str]]:
        """The columns a reworded question may name or leave unsaid because of a value.

        First, every column the statement compares a value with: a question that adds
        its name says what the other left to the value ("whose country is france" for
        "in france"). Second, those a value names by itself, which a question may leave
        unsaid: a stored text value ("france" is a country) or a year ("held in 2014"
        for "in year 2014"); a plain number does not ("more than 300000 songs" is no
        longer "songs with sales more than 300000")."""
        compared = compared_columns(sql, catalog, equality_only=False)
        every = {column.lower() for found in compared.values() for _, column in found}
        by_value = {
            column.lower()
            for literal, found in compared.items()
            if not _numeric(literal) or is_year(literal)
            for _, column in found
        }
        return every, by_value

    def _schema_words(self, catalog: Catalog) -> set[str]:
        key = catalog.memo_key
        words = self._vocabulary.get(key)
        if words is None:
            if len(self._vocabulary) > 64:
                self._vocabulary.clear()
            words = self._vocabulary[key] = schema_words(catalog)
        return words

    async def reuse(
        self,
        tenant_id: str,
        target: Target,
        catalog: Catalog,
        question: str,
        limits: Limits,
    ) -> tuple[AskResult | None, tuple[NearPair, ...]]:
        """Answer from a confirmed pair: the adapted statement goes through the gate and
        then runs read-only like any other. A gate refusal or a database error is a miss
        (the pipeline answers instead); nothing refused by the gate ever runs. On a miss,
        the nearest pairs come back as examples for the pipeline's generator."""
        started = time.perf_counter()
        found, near = await self.find(tenant_id, target.name, catalog, question)
        # examples a model may copy words from: only pairs this principal may be shown
        near = [n for n in near if may_name(n.pair)]
        if found is None:
            return None, tuple(near)
        lookup = time.perf_counter() - started
        with node_span(self._tracer, "sql.memory.reuse") as span:
            span.set_attribute("sql.memory.pair_id", found.near.pair.pair_id)
            if not await self._stored_where_replaced(target, catalog, found):
                span.set_attributes({"sql.memory.reused": False,
                                     "sql.memory.miss": "VALUE_NOT_STORED"})  # fmt: skip
                return None, tuple(near)
            gate_started = time.perf_counter()
            verdict = self._gate.check(found.sql, catalog)
            gate_s = time.perf_counter() - gate_started
            if not verdict.valid:
                span.set_attributes({"sql.memory.reused": False,
                                     "sql.memory.miss": "GATE_REJECTED"})  # fmt: skip
                too_large = next(
                    (v for v in verdict.violations if v.rule is GateRule.VALUE_TOO_LARGE), None
                )
                if too_large is not None:
                    # A taught statement that would build a value past the cap (taught
                    # before the rule, or adapted into one): said, never answered around.
                    return _over_limit(target, f"the confirmed question's statement: "
                                       f"{too_large.message}"), tuple(near)  # fmt: skip
                return None, tuple(near)
            exec_started = time.perf_counter()
            try:
                result = await self._runner.run(target.pool, verdict, limits, database=target.name)
            except StatementError as exc:
                if exc.kind in (FailureKind.DEADLINE, FailureKind.UNAVAILABLE):
                    raise exc.to_tandem() from exc
                span.set_attributes({"sql.memory.reused": False,
                                     "sql.memory.miss": "DATABASE_ERROR"})  # fmt: skip
                if exc.kind is FailureKind.RESOURCE:
                    return _over_limit(target, exc.to_tandem().message), tuple(near)
                return None, tuple(near)
            execute_s = time.perf_counter() - exec_started
            checks: tuple[CheckResult, ...] = ()
            if self._checker is not None:
                checks = await self._checker.check(verdict, result, target, catalog, limits)
                if self._checker.refuses(checks) is not None:
                    span.set_attributes({"sql.memory.reused": False,
                                         "sql.memory.miss": "CHECK_FAILED"})  # fmt: skip
                    return None, tuple(near)
            span.set_attribute("sql.memory.reused", True)
        total = time.perf_counter() - started
        named = may_name(found.near.pair)
        answered = AskResult(
            outcome=AskOutcome.ANSWERED,
            database=target.name,
            interpretation="answered like a confirmed question",
            answer=Answered(
                verdict,
                result,
                f"the statement of a confirmed question, adapted. {notes(checks)}".strip(),
            ),
            attempts=(
                Attempt(
                    1,
                    AttemptOutcome.SUCCEEDED,
                    verdict.normalized_sql,
                    duration_s=gate_s + execute_s,
                ),
            ),
            timings={"memory": lookup, "gate": gate_s, "execute": execute_s, "total": total},
            reused=PairUse(
                pair_id=found.near.pair.pair_id,
                similarity=found.near.similarity,
                substitutions=found.substitutions,
                question=found.near.pair.question if named else "",
                replaced=found.replaced if named else (),
            ),
            checks=checks,
        )
        return answered, ()

    async def _stored_where_replaced(
        self, target: Target, catalog: Catalog, found: Candidate
    ) -> bool:
        """Whether every text value the adaptation put in is stored in the column the
        replaced value was compared with: "blue" where a make was, or a status where a
        transaction type was, is another question, not a value swap. The catalog's values
        say so when they can; otherwise one read-only probe per value. A probe that fails
        is no evidence either way (the statement's own run decides)."""
        texts = [(b, a) for b, a in found.replaced if not any(c.isdigit() for c in a + b)]
        if not texts:
            return True
        columns = compared_columns(found.near.pair.sql, catalog)
        values = self._values(catalog)
        unknown = [
            (table, column, after)
            for before, after in texts
            for table, column in columns.get(before.lower(), ())
            if values.spelling(table, column, after) is None
        ]
        if not unknown:
            return True
        try:
            async with target.pool.connection() as conn:
                for table, column, after in unknown:
                    if not await stored_in(conn, table, column, after):
                        return False
        except psycopg.Error:
            return True
        return True

    @staticmethod
    def few_shot(result: AskResult, near: tuple[NearPair, ...]) -> AskResult:
        """``result`` naming the nearest pair when a model wrote its statement with the
        pairs as examples (the offline generator reads no examples: nothing to name)."""
        modelled = any(
            call.role is GeneratorRole.GENERATE_SQL and call.tier is not ModelTier.DETERMINISTIC
            for call in result.calls
        )
        if not near or not modelled or result.answer is None or result.degraded_llm:
            return result
        top = near[0]
        question = top.pair.question if may_name(top.pair) else ""
        use = PairUse(top.pair.pair_id, top.similarity, 0, question, mode=2)
        return replace(result, reused=use)


def may_name(pair: ConfirmedPair) -> bool:
    """Whether an answer may show the current request's principal ``pair``'s own words
    (its question, the values its statement held): only a pair they could list
    (``store.list_pairs``), one they taught or one a service key taught for everyone.
    The store reuses no other for a principal (``_store._LISTABLE``): another principal's
    question is someone else's words, the value it compared may lie only in rows outside
    this principal's row filter ("companies in Germany", taught by someone whose rows
    hold Germany, adapted to "in Canada"), and its reuse alone would say that someone
    asked it. Kept as the check at the point of showing (and of few-shot examples)."""
    principal = current_principal.get()
    return principal is None or pair.taught_by is None or pair.taught_by == principal.id


# The words of a question's form (head, cues, grammar) as content words compare.
_FORM = content_words(Reading((), tuple(form_words())))


def _numeric(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:\.\d+)?", text.strip()))


def _record_hit(span: trace.Span, found: Candidate, *, exact: bool) -> None:
    """Hit, pair id, similarity and counts on the lookup span — never text."""
    span.set_attributes(
        {
            "sql.memory.hit": True,
            "sql.memory.exact_template": exact,
            "sql.memory.pair_id": found.near.pair.pair_id,
            "sql.memory.similarity": round(found.near.similarity, 4),
            "sql.memory.substitutions": found.substitutions,
        }
    )


def _intent_json(result: AskResult) -> dict[str, Any] | None:
    if result.intent is None or result.reused is not None:
        return None
    return MessageToDict(intent_to_pb(result.intent))


def memory_disabled() -> FailedPrecondition:
    return FailedPrecondition("the answer memory is switched off", reason="MEMORY_DISABLED")


async def open_memory(
    admin_url: str | None, data_dir: Path, settings: MemorySettings, *, pool_max_size: int = 4
) -> MemoryStore:
    """The store on ``DATABASE_URL`` (or the embedded server's ``postgres`` database),
    migrated as that URL's role and queried as the row-level-security role."""
    owner = admin_url
    if not owner:
        owner = await asyncio.to_thread(embedded_server_url, data_dir, "postgres")
    database = Database(
        app_conninfo(owner, settings.app_database_url),
        owner_conninfo=owner,
        min_size=1,
        max_size=pool_max_size,
    )
    store = MemoryStore(
        database,
        retention_days=settings.retention_days,
        answer_retention_days=settings.answer_retention_days,
        empty_ttl_s=settings.empty_ttl_s,
    )
    await store.open()
    return store


def _over_limit(target: Target, message: str) -> AskResult:
    """The answer to a question whose confirmed statement needs more than the database
    allows a statement: UNANSWERABLE, reason SQL_RESOURCE_LIMIT, never a fresh reading
    that might say nothing matches."""
    trace.get_current_span().set_attribute("sql.refusal", RESOURCE_LIMIT_REASON)
    return AskResult(
        AskOutcome.UNANSWERABLE, target.name, message=message, refusal=RESOURCE_LIMIT_REASON
    )
