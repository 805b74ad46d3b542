"""The offline SQL generator: the schema linker behind the generator protocol.

No model: every role is answered by :class:`~services.sql.linker.QuestionLinker`, which
reads the question against the catalog (names, the other names comments give, stored
values, the value index, the join graph) and the business definitions (the database's
glossary, the request's instructions), and composes one SELECT or refuses with the
phrase it could not link. The statement still goes through the gate like any other.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass, replace

from opentelemetry import trace

from services.common import LANGUAGE_UNSUPPORTED, detect_language, english_only_message
from services.sql.ask._pipeline import (
    Failure,
    GeneratorRole,
    ModelCall,
    ModelTier,
    Proposal,
    SchemaView,
    TableChoice,
    Understanding,
)
from services.sql.ask._refusals import RefusalExplainer
from services.sql.catalog import Catalog, JoinGraph
from services.sql.definitions import parse_definitions
from services.sql.gate import memo_scope
from services.sql.linker import (
    PENDING,
    LinkError,
    Meaning,
    PhraseEmbedder,
    QuestionLinker,
    ValueVectors,
    Vocabulary,
    find_meanings,
    has_candidates,
    nearest_names,
    said_as_values,
    unplaced_meanings,
    value_meanings,
)
from services.sql.verify import verify_statement

MODEL_NAME = "deterministic"
_log = logging.getLogger("tandem.sql.offline")
# Vocabularies kept per (database, catalog load, tables): one per schema version in use,
# or per candidate set a wide catalog's questions are narrowed to, the oldest dropped.
_VOCABULARIES_MAX = 64
_READINGS_MAX = 64
# value vectors kept per database: the load serving and the one being prepared
_LOADS_KEPT = 2


@dataclass(frozen=True)
class Reading:
    """What the linker made of a question: a statement, or why there is none."""

    sql: str = ""
    interpretation: str = ""
    reason: str = ""
    tables: tuple[str, ...] = ()
    applied: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    # Why the question was declined before any reading (LANGUAGE_UNSUPPORTED), if it was.
    refusal: str = ""
    # The linker's refusal itself, when it named a phrase: explained again with the names
    # nearest in meaning once the embedder has been asked.
    error: LinkError | None = None


def _load_of(catalog: Catalog) -> tuple[str, float]:
    """One catalog load, whichever principal's view or narrowing of it."""
    return (catalog.database, catalog.refreshed_at.timestamp())


class OfflineGenerator:
    """The deterministic :class:`~services.sql.ask._pipeline.SqlGenerator`: the schema linker."""

    model_name = MODEL_NAME

    def __init__(self, embedder: PhraseEmbedder | None = None) -> None:
        # the question embedder links words no name spells by meaning ("nation" to a
        # country column); without one, questions are read by names alone
        self._embedder = embedder
        self._meanings: dict[tuple[object, ...], tuple[Meaning, ...]] = {}
        self._vocabularies: dict[tuple[object, ...], Vocabulary] = {}
        # the sampled values' vectors per catalog load (``linker._valued``), embedded while
        # the load is prepared (:meth:`prepare`), by (database, load time)
        self._value_vectors: dict[tuple[str, float], ValueVectors] = {}
        # The pipeline asks three roles about one question: it is read once. Keyed by
        # everything a reading depends on (catalogs are per database) and by the
        # request's tenant (a question another tenant asked is read afresh), bounded.
        self._readings: dict[tuple[object, ...], Reading] = {}

    def _vocabulary(self, catalog: Catalog) -> Vocabulary:
        # the principal's view too (``Catalog.memo_key``): a view's catalog has the full
        # one's database, load time and tables but not its stored values
        key = catalog.contents_key
        vocabulary = self._vocabularies.get(key)
        if vocabulary is None:
            if len(self._vocabularies) >= _VOCABULARIES_MAX:
                del self._vocabularies[next(iter(self._vocabularies))]
            vocabulary = Vocabulary(catalog, JoinGraph(catalog))
            self._vocabularies[key] = vocabulary
        return vocabulary

    async def prepare(self, catalog: Catalog) -> bool:
        """Embed what the value-meaning rule compares words with, for ``catalog``'s load,
        before the catalog is served (``CatalogCache.prepare_with``); True when it is all
        in (or there is no embedder to ask). Outside any request: a load a question
        started does not run under that question's deadline, which outgoing calls
        inherit (``services.common.effective_timeout``)."""
        if self._embedder is None:
            return True
        memory = ValueVectors()
        loading = asyncio.get_running_loop().create_task(
            memory.load(self._embedder, catalog), context=contextvars.Context()
        )
        complete = await loading
        key = _load_of(catalog)
        self._value_vectors[key] = memory
        # the load being prepared and the one serving meanwhile: older ones are done with
        loads = sorted(k for k in self._value_vectors if k[0] == key[0])
        for old in loads[:-_LOADS_KEPT]:
            del self._value_vectors[old]
        return complete

    def _values_of(self, catalog: Catalog) -> ValueVectors | None:
        # one memory per load, whichever principal's view or tables a question reads
        return self._value_vectors.get(_load_of(catalog))

    def read(
        self, question: str, schema: SchemaView, meanings: tuple[Meaning, ...] = ()
    ) -> Reading:
        """The linker's statement with every phrase linked, or the reason it could not
        link (``sql`` empty), naming the phrase that was missing."""
        key = (
            memo_scope(),
            question,
            schema.database,
            schema.catalog.memo_key,
            schema.today,
            schema.glossary,
            schema.instructions,
            meanings,
        )
        reading = self._readings.get(key)
        if reading is None:
            if len(self._readings) >= _READINGS_MAX:
                self._readings.clear()
            reading = self._readings[key] = self._read(question, schema, meanings)
        return reading

    async def reading(self, question: str, schema: SchemaView) -> Reading:
        """:meth:`read`; a question read by names refused is read again with the words
        no name spells linked by meaning (when there is an embedder and such words), and
        a refusal still left names the tables and columns nearest in meaning to the
        words it could not place."""
        reading = self.read(question, schema)
        if reading.sql or reading.refusal or self._embedder is None:
            return reading
        key = (memo_scope(), question, schema.database, schema.catalog.memo_key)
        vocabulary = self._vocabulary(schema.catalog)
        meanings = self._meanings.get(key)
        if meanings is None:
            meanings = await find_meanings(self._embedder, vocabulary, question)
            if len(self._meanings) >= _READINGS_MAX:
                self._meanings.clear()
            self._meanings[key] = meanings
        if meanings:
            reading = self.read(question, schema, meanings)
        if reading.sql or reading.error is None:
            return reading
        explainer = RefusalExplainer(vocabulary)
        unplaced = explainer.unplaced(reading.error)
        pending = False
        if unplaced:
            nouns = await unplaced_meanings(
                self._embedder, vocabulary, question, unplaced, meanings
            )
            if nouns:
                last = self.read(question, schema, (*meanings, *nouns))
                if last.sql or last.error is None:
                    return last
            # a noun saying a stored value in other words ("women": 'Female'), said as
            # that value and read again (``linker._valued``)
            loaded = self._values_of(schema.catalog)
            valued = await value_meanings(self._embedder, vocabulary, question, unplaced, loaded)
            if valued:
                again = self.read(said_as_values(question, valued), schema, meanings)
                if again.sql:
                    said = "; ".join(m.text() for m in valued)
                    return replace(again, interpretation=f"{again.interpretation} ({said})")
            # the load's vectors not in yet, and the rule had a word and values to read
            # with them: said, so the asker knows to ask again
            pending = (
                loaded is not None
                and not loaded.ready
                and has_candidates(vocabulary, question, unplaced)
            )
        nearby = await nearest_names(self._embedder, vocabulary, unplaced) if unplaced else {}
        if nearby:
            reading = replace(reading, reason=explainer.explain(reading.error, nearby))
        if pending:
            reading = replace(reading, reason=f"{reading.reason} ({PENDING})")
        return reading

    def _read(self, question: str, schema: SchemaView, meanings: tuple[Meaning, ...]) -> Reading:
        language = detect_language(question)
        if not language.english:
            # The linker reads English words: another language would be refused for a
            # word it "could not place", or worse, read wrongly. The code (never the
            # question) goes on the span.
            trace.get_current_span().set_attribute("question.language", language.code)
            return Reading(reason=english_only_message(language), refusal=LANGUAGE_UNSUPPORTED)
        glossary = (*schema.glossary, *parse_definitions(schema.instructions))
        try:
            linked = QuestionLinker(
                question,
                self._vocabulary(schema.catalog),
                schema.today,
                glossary,
                schema.instructions,
                check=verify_statement,
                meanings=meanings,
            ).link()
        except LinkError as exc:
            # said from its phrase: the names found, or those nearest to what was not
            explained = RefusalExplainer(self._vocabulary(schema.catalog)).explain(exc)
            return Reading(reason=explained, error=exc if exc.phrase else None)
        except Exception as exc:  # a linker bug refuses the question, it never fails it
            _log.warning(
                "schema linker failed",
                extra={"fields": {"error.type": type(exc).__name__}},
            )
            return Reading(reason="the schema linker could not read the question")
        used = set(linked.applied)
        return Reading(
            sql=linked.sql,
            interpretation=linked.explanation,
            tables=linked.tables,
            applied=linked.applied,
            ignored=tuple(
                e.term for e in glossary if e.term not in used and e.source != "question"
            ),
        )

    @staticmethod
    def _call(role: GeneratorRole, started: float) -> tuple[ModelCall, ...]:
        return (
            ModelCall(
                role=role,
                tier=ModelTier.DETERMINISTIC,
                model_name=MODEL_NAME,
                duration_s=time.perf_counter() - started,
            ),
        )

    async def understand(self, question: str, schema: SchemaView) -> Understanding:
        started = time.perf_counter()
        reading = await self.reading(question, schema)
        calls = self._call(GeneratorRole.UNDERSTAND, started)
        if not reading.sql:
            return Understanding(
                interpretation="",
                answerable=False,
                reason=reading.reason,
                calls=calls,
                refusal=reading.refusal,
            )
        return Understanding(interpretation=reading.interpretation, calls=calls)

    async def identify_tables(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> TableChoice:
        started = time.perf_counter()
        reading = await self.reading(question, schema)
        return TableChoice(reading.tables, self._call(GeneratorRole.IDENTIFY_TABLES, started))

    async def generate(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> Proposal:
        started = time.perf_counter()
        reading = await self.reading(question, schema)
        calls = self._call(GeneratorRole.GENERATE_SQL, started)
        if not reading.sql:
            return Proposal(explanation=reading.reason, calls=calls)
        return Proposal(
            sql=reading.sql,
            explanation=reading.interpretation,
            calls=calls,
            definitions_applied=reading.applied,
            definitions_ignored=reading.ignored,
        )

    async def repair(
        self,
        question: str,
        understanding: Understanding,
        schema: SchemaView,
        previous: Proposal,
        failure: Failure,
    ) -> Proposal:
        """Give up: the linker reads a question one way, and reading it again gives the
        same statement (a model may repair; this generator says why it cannot)."""
        started = time.perf_counter()
        return Proposal(
            explanation="the offline generator reads a question one way; nothing to repair",
            calls=self._call(GeneratorRole.REPAIR_SQL, started),
        )
