"""Ingest: normalise -> redact -> chunk -> embed in batches -> upsert, one document at a time.

The call validates the request and checks the tenant and the stored copies before it
reports anything, so whole-call errors reach the client before any event. After that a
problem with one document only fails that document. Documents are prepared off the
event loop; embedding batches run ahead (``embed_concurrency`` in flight) while finished
documents are written, each in its own transaction, so the model stays busy while
Postgres works. Nothing is written in a dry run and nothing is embedded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np
from opentelemetry import metrics, trace

from services.common import (
    DATABASE_UNAVAILABLE,
    FieldViolation,
    InvalidArgument,
    TandemError,
    Unavailable,
    clean_document_text,
    control_character_problem,
    document_language,
    json_control_problem,
)
from services.common.spans import CHARS, CHUNKS, COUNT, node_span
from services.common.spans import Metrics as TandemMetrics
from services.retrieval._acl import LOCKS_OUT_CALLER, readable_by_caller
from services.retrieval._budget import TenantBudget
from services.retrieval._chunking import chunk_text, embedding_text, normalise
from services.retrieval._embedding_client import EmbedderInfo, EmbeddingClient, EmbeddingError
from services.retrieval._extract_pool import ExtractionPool
from services.retrieval._files import extract_content
from services.retrieval._redact import (
    MAX_FINDINGS,
    RedactionPolicy,
    Redactor,
    findings,
    has_content,
)
from services.retrieval._repository import (
    NewDocument,
    RetrievalRepository,
    StoredVersion,
)
from services.retrieval._settings import RetrievalSettings
from services.retrieval._types import (
    PERSONAL_KINDS,
    SECRET_KINDS,
    ContentType,
    DocumentAcl,
    DocumentError,
    DocumentInput,
    DocumentResult,
    ExclusionReason,
    Extraction,
    IngestEvent,
    IngestProgress,
    IngestRequest,
    IngestStage,
    IngestSummary,
    Outcome,
    RedactionFinding,
    RedactionKind,
)
from services.retrieval._validation import (
    acl_violations,
    check_tenant_id,
    document_id_problem,
    metadata_problem,
)

_log = logging.getLogger("tandem.retrieval")

# Bumped whenever chunking changes shape, so stored documents are re-chunked on re-ingest.
CHUNKER_VERSION = 3
MAX_TITLE_CHARS = 2000
MAX_URI_CHARS = 4096
MAX_CATEGORY_CHARS = 256
PROGRESS_INTERVAL_S = 0.25
_MODEL_INFO_TIMEOUT_S = 5.0

_INVALID = grpc.StatusCode.INVALID_ARGUMENT.value[0]
_UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.value[0]
_FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION.value[0]
_INTERNAL = grpc.StatusCode.INTERNAL.value[0]


def derive_document_id(uri: str) -> str:
    """The id a document without one gets: the same uri always yields the same id."""
    return "uri-" + hashlib.sha256(uri.encode()).hexdigest()[:32]


@dataclass
class _Work:
    """A document that will be (or, in a dry run, would be) embedded and written."""

    index: int
    document: NewDocument
    uri: str
    texts: list[str]
    replaced: bool
    extraction: Extraction | None = None
    findings: tuple[RedactionFinding, ...] = ()
    vectors: np.ndarray[Any, np.dtype[np.float32]] | None = None
    remaining: int = 0
    error: DocumentError | None = None

    @property
    def done(self) -> bool:
        return self.error is not None or self.remaining == 0


@dataclass(frozen=True)
class _Prepared:
    document: NewDocument
    texts: list[str]
    findings: tuple[RedactionFinding, ...] = ()
    cleaning: Extraction | None = None


@dataclass(frozen=True)
class _Excluded:
    """A document that redaction or chunking left nothing of."""

    reason: ExclusionReason
    counts: dict[RedactionKind, int]
    chars: int
    content_sha256: str
    findings: tuple[RedactionFinding, ...] = ()


@dataclass(frozen=True)
class _Context:
    """What deciding a document's fate needs besides the document."""

    tenant_id: str
    last_index: dict[str, int]
    stored: dict[str, StoredVersion]
    redaction: RedactionPolicy
    text_limit: int
    model_name: str
    info_error: DocumentError | None
    dry_run: bool


@dataclass
class _Counters:
    started: float
    total: int
    done: int = 0
    chunks_embedded: int = 0
    chunks_total: int = 0
    last_progress: float = field(default=0.0)


def _document_error(
    code: int, message: str, reason: str, violations: Sequence[FieldViolation] = ()
) -> DocumentError:
    return DocumentError(code, message, reason, tuple(violations))


# -- validation (pure, so unit tests can reach it) ------------------------------------


def _policy(request: IngestRequest, settings: RetrievalSettings) -> frozenset[RedactionKind]:
    if request.keep_kinds is None:
        return settings.default_keep_kinds
    keep: set[RedactionKind] = set()
    for position, value in enumerate(request.keep_kinds):
        name = f"redaction_policy.keep_kinds[{position}]"
        try:
            kind = RedactionKind(value)
        except ValueError:
            raise InvalidArgument.field(name, "is not a known redaction kind") from None
        if kind in SECRET_KINDS:
            raise InvalidArgument.field(
                name, f"{kind.name} is a secret kind; secrets are always redacted"
            )
        keep.add(kind)
    return frozenset(keep & PERSONAL_KINDS)


def check_ingest_request(
    request: IngestRequest, settings: RetrievalSettings
) -> frozenset[RedactionKind]:
    """Whole-call checks (tenant id, batch size, policy); returns the kinds to keep."""
    check_tenant_id(request.tenant_id)
    if not request.documents:
        raise InvalidArgument.field("documents", "must contain at least one document")
    limit = settings.max_batch_documents
    if len(request.documents) > limit:
        raise InvalidArgument.field(
            "documents",
            f"must contain at most {limit} documents, got {len(request.documents)}",
            reason="BATCH_TOO_LARGE",
            metadata={"limit": str(limit), "actual": str(len(request.documents))},
        )
    return _policy(request, settings)


def document_violations(
    index: int, doc: DocumentInput, settings: RetrievalSettings
) -> tuple[str, list[FieldViolation]]:
    """The reason and violations of one document's fields (empty when valid)."""
    prefix = f"documents[{index}]"
    found: list[tuple[str, FieldViolation]] = []
    if doc.document_id:
        problem = document_id_problem(doc.document_id)
        if problem:
            found.append(("INVALID_ARGUMENT", FieldViolation(f"{prefix}.document_id", problem)))
    elif not doc.uri:
        found.append(
            (
                "INVALID_ARGUMENT",
                FieldViolation(f"{prefix}.document_id", "one of document_id and uri is required"),
            )
        )
    if len(doc.uri) > MAX_URI_CHARS:
        found.append(
            (
                "INVALID_ARGUMENT",
                FieldViolation(f"{prefix}.uri", f"must be at most {MAX_URI_CHARS} characters"),
            )
        )
    if len(doc.title) > MAX_TITLE_CHARS:
        found.append(
            (
                "INVALID_ARGUMENT",
                FieldViolation(f"{prefix}.title", f"must be at most {MAX_TITLE_CHARS} characters"),
            )
        )
    if len(doc.category) > MAX_CATEGORY_CHARS:
        found.append(
            (
                "INVALID_ARGUMENT",
                FieldViolation(
                    f"{prefix}.category", f"must be at most {MAX_CATEGORY_CHARS} characters"
                ),
            )
        )
    if doc.content_type not in (0, *ContentType):
        found.append(
            (
                "INVALID_ARGUMENT",
                FieldViolation(f"{prefix}.content_type", "is not a known content type"),
            )
        )
    if not doc.text.strip():
        found.append(("EMPTY_TEXT", FieldViolation(f"{prefix}.text", "must not be empty or blank")))
    elif len(doc.text) > settings.max_document_chars:
        found.append(
            (
                "DOCUMENT_TOO_LARGE",
                FieldViolation(
                    f"{prefix}.text",
                    f"must be at most {settings.max_document_chars} characters, "
                    f"got {len(doc.text)}",
                ),
            )
        )
    if doc.metadata is not None:
        problem = metadata_problem(doc.metadata)
        if problem:
            found.append(("INVALID_METADATA", FieldViolation(f"{prefix}.metadata", problem)))
    found += [("INVALID_CHARACTER", v) for v in _control_characters(prefix, doc)]
    found += [
        ("INVALID_ARGUMENT", v)
        for v in acl_violations(f"{prefix}.acl", doc.acl_principals, doc.acl_groups)
    ]
    acl = DocumentAcl.of(doc.acl_principals, doc.acl_groups)
    if not found and acl is not None and not readable_by_caller(acl):
        found.append(("INVALID_ARGUMENT", FieldViolation(f"{prefix}.acl", LOCKS_OUT_CALLER)))
    if not found:
        return "", []
    return found[0][0], [v for _, v in found]


def _cleaning_note(removed: int) -> Extraction | None:
    """What cleaning a body sent as text changed, for the ingest report."""
    if not removed:
        return None
    return Extraction("", notes=(f"removed {removed} control character(s) and terminal escape(s)",))


def _control_characters(prefix: str, doc: DocumentInput) -> Iterator[FieldViolation]:
    """Control characters in the caller's text fields (services.common's rule: none in
    names, layout only in free text). A document's body is cleaned instead, in
    ``Ingestor._prepare``; text read from a file is the extractor's to clean."""
    for name, value in (
        ("uri", doc.uri),
        ("title", doc.title),
        ("category", doc.category),
        ("file_name", doc.file_name),
    ):
        problem = control_character_problem(value)
        if problem:
            yield FieldViolation(f"{prefix}.{name}", problem)
    if doc.metadata:
        violation = json_control_problem(doc.metadata, f"{prefix}.metadata")
        if violation:
            yield violation


class Ingestor:
    """Runs IngestDocuments; collaborators arrive through the constructor."""

    def __init__(
        self,
        repository: RetrievalRepository,
        embedder: EmbeddingClient,
        settings: RetrievalSettings,
        tracer: trace.Tracer,
        meter: metrics.Meter,
        *,
        extraction: ExtractionPool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repository = repository
        self._extraction = extraction
        self._embedder = embedder
        self._settings = settings
        self._budget = TenantBudget(settings.embed_concurrency)
        self._tracer = tracer
        self._clock = clock
        self._documents = meter.create_counter(
            "tandem.retrieval.ingest.documents", description="Documents ingested, by outcome"
        )
        self._metrics = TandemMetrics(meter)

    # -- preparation (runs in a worker thread) ----------------------------------------

    def _prepare(
        self,
        doc: DocumentInput,
        document_id: str,
        redactor: Redactor,
        text_limit: int,
        *,
        list_findings: bool = False,
    ) -> _Prepared | _Excluded:
        counts: dict[RedactionKind, int] = {}
        listed: list[RedactionFinding] = []

        def scrub(value: str, where: str = "metadata") -> str:
            redacted = redactor.redact(value)
            for kind, count in redacted.counts.items():
                counts[kind] = counts.get(kind, 0) + count
            if list_findings and redacted.spans and len(listed) < MAX_FINDINGS:
                listed.extend(findings(where, value, redacted)[: MAX_FINDINGS - len(listed)])
            return redacted.text

        with node_span(self._tracer, "retrieval.ingest.normalise", {CHARS: len(doc.text)}) as span:
            body, removed = clean_document_text(doc.text)
            normalised_text = normalise(body)
            normalised_title = normalise(doc.title)
            span.set_attribute("tandem.chars_out", len(normalised_text))
        with node_span(self._tracer, "retrieval.ingest.redact") as span:
            title = scrub(normalised_title, "title")
            uri = scrub(doc.uri, "uri")
            text = scrub(normalised_text, "text")
            metadata = _scrub_json(doc.metadata or {}, scrub)
            span.set_attributes(_redaction_attributes(counts))
        content_sha256 = hashlib.sha256(text.encode()).hexdigest()
        if not has_content(text):
            return _Excluded(
                ExclusionReason.EMPTY_AFTER_REDACTION,
                counts,
                len(text),
                content_sha256,
                tuple(listed),
            )
        content_type = ContentType(doc.content_type or ContentType.PLAIN_TEXT)
        with node_span(self._tracer, "retrieval.ingest.chunk", {CHARS: len(text)}) as span:
            chunks = chunk_text(
                text,
                content_type,
                chunk_chars=self._settings.chunk_chars,
                overlap_chars=self._settings.chunk_overlap_chars,
            )
            span.set_attributes({CHUNKS: len(chunks), "tandem.content_type": content_type.name})
        if not chunks:
            return _Excluded(
                ExclusionReason.NO_CHUNKS, counts, len(text), content_sha256, tuple(listed)
            )
        category = doc.category.strip()
        acl = DocumentAcl.of(doc.acl_principals, doc.acl_groups)
        shaping: list[Any] = [
            content_sha256,
            title,
            uri,
            category,
            metadata,
            int(content_type),
            self._settings.chunk_chars,
            self._settings.chunk_overlap_chars,
            CHUNKER_VERSION,
        ]
        if acl is not None:
            # Only a restricted document adds its ACL, so every fingerprint stored before
            # ACLs existed still matches (re-sending an old document stays UNCHANGED);
            # re-sending with other rights rewrites it (UpdateDocumentAcl re-embeds nothing).
            shaping.append([list(acl.principals), list(acl.groups)])
        fingerprint = hashlib.sha256(
            json.dumps(
                shaping,
                sort_keys=True,
                separators=(",", ":"),
            ).encode()
        ).hexdigest()
        with node_span(self._tracer, "retrieval.ingest.language") as span:
            language = document_language(text)
            span.set_attribute("tandem.language", language.code if language else "")
        document = NewDocument(
            document_id=document_id,
            title=title,
            uri=uri,
            category=category,
            metadata=metadata,
            content_type=content_type,
            content_sha256=content_sha256,
            fingerprint=fingerprint,
            char_count=len(text),
            redactions=dict(sorted(counts.items())),
            chunks=chunks,
            acl=acl,
            language=language.code if language else "",
        )
        texts = [embedding_text(title, c.section, c.text, text_limit) for c in chunks]
        return _Prepared(document, texts, tuple(listed), _cleaning_note(removed))

    # -- the call -----------------------------------------------------------------------

    async def ingest(self, request: IngestRequest) -> AsyncIterator[IngestEvent]:
        """Events: progress and per-document results, then exactly one summary."""
        started = self._clock()
        keep = check_ingest_request(request, self._settings)
        if not await self._repository.tenant_exists(request.tenant_id):
            raise InvalidArgument.field(
                "tenant_id", "is not a registered tenant", reason="UNKNOWN_TENANT"
            )
        ids = [
            doc.document_id or (derive_document_id(doc.uri) if doc.uri else "")
            for doc in request.documents
        ]
        stored = await self._repository.stored_versions(
            request.tenant_id, sorted({i for i in ids if i and not document_id_problem(i)})
        )
        with self._tracer.start_as_current_span("retrieval.ingest") as span:
            span.set_attribute("tandem.documents", len(request.documents))
            span.set_attribute("tandem.dry_run", request.dry_run)
            async for event in self._run(request, ids, stored, keep, started):
                if isinstance(event, IngestSummary):
                    for outcome in Outcome:
                        span.set_attribute(f"tandem.{outcome.name.lower()}", event.count(outcome))
                    span.set_attribute("tandem.chunks_written", event.chunks_written)
                yield event

    async def _run(
        self,
        request: IngestRequest,
        ids: list[str],
        stored: dict[str, StoredVersion],
        keep: frozenset[RedactionKind],
        started: float,
    ) -> AsyncIterator[IngestEvent]:
        counters = _Counters(started=started, total=len(request.documents))
        results: dict[int, DocumentResult] = {}
        yield self._progress(counters, IngestStage.PREPARING)

        info: EmbedderInfo | None = None
        info_error: DocumentError | None = None
        try:
            info = await self._embedder.model_info(timeout_s=_MODEL_INFO_TIMEOUT_S)
        except EmbeddingError as exc:
            info_error = _embedding_failure(exc)
        model_name = info.model_name if info else ""
        text_limit = info.max_text_chars if info else self._settings.chunk_chars * 2

        context = _Context(
            tenant_id=request.tenant_id,
            last_index={doc_id: i for i, doc_id in enumerate(ids) if doc_id},
            stored=stored,
            redaction=RedactionPolicy(
                keep, self._settings.redaction_allow, self._settings.keep_by_category
            ),
            text_limit=text_limit,
            model_name=model_name,
            info_error=info_error,
            dry_run=request.dry_run,
        )
        work: list[_Work] = []
        for index, doc in enumerate(request.documents):
            result, item = await self._decide(index, doc, ids[index], context)
            if item is not None:
                work.append(item)
                counters.chunks_total += len(item.texts)
                if not request.dry_run:
                    continue
                result = self._included(item, dry_run=True)
            assert result is not None
            results[index] = result
            counters.done += 1
            yield result
            progress = self._maybe_progress(counters, IngestStage.PREPARING)
            if progress:
                yield progress

        chunks_written = 0
        if work and not request.dry_run and info is not None:
            async for event in self._embed_and_write(request.tenant_id, work, info, counters):
                if isinstance(event, DocumentResult):
                    results[event.index] = event
                    counters.done += 1
                    if event.outcome is Outcome.INCLUDED:
                        chunks_written += event.chunk_count
                yield event

        summary = IngestSummary(
            dry_run=request.dry_run,
            documents=tuple(results[i] for i in range(len(request.documents))),
            chunks_written=chunks_written,
            model_name=model_name,
            duration_s=self._clock() - started,
        )
        for outcome in Outcome:
            if summary.count(outcome):
                self._documents.add(summary.count(outcome), {"outcome": outcome.name})
        self._metrics.chunks_written(chunks_written)
        yield self._progress(counters, IngestStage.WRITING)
        yield summary

    async def _decide(
        self, index: int, doc: DocumentInput, document_id: str, context: _Context
    ) -> tuple[DocumentResult | None, _Work | None]:
        """Settle a document without embedding it, or hand it on as work."""
        if document_id and context.last_index.get(document_id, index) != index:
            return (
                DocumentResult(
                    index,
                    document_id,
                    doc.uri,
                    Outcome.EXCLUDED,
                    exclusion_reason=ExclusionReason.DUPLICATE_IN_BATCH,
                ),
                None,
            )
        extracted = await extract_content(
            index,
            doc,
            tenant_id=context.tenant_id,
            pool=self._extraction,
            settings=self._settings,
            tracer=self._tracer,
        )
        if isinstance(extracted, DocumentError):
            _log.warning(
                "document not extractable",
                extra={"fields": {"index": index, "reason": extracted.reason}},
            )
            return (
                DocumentResult(index, document_id, doc.uri, Outcome.FAILED, error=extracted),
                None,
            )
        result, item = await self._settle(index, extracted, document_id, context)
        if extracted.extraction is not None:
            # What reading the file found goes into the report, whatever became of it.
            if result is not None:
                result = dataclasses.replace(result, extraction=extracted.extraction)
            if item is not None:
                item.extraction = extracted.extraction
        return result, item

    async def _settle(
        self, index: int, doc: DocumentInput, document_id: str, context: _Context
    ) -> tuple[DocumentResult | None, _Work | None]:
        """Validate, redact and chunk a document that has its text."""
        reason, violations = document_violations(index, doc, self._settings)
        if violations:
            _log.warning(
                "document rejected",
                extra={"fields": {"index": index, "reason": reason, "fields": len(violations)}},
            )
            error = _document_error(_INVALID, violations[0].description, reason, violations)
            return DocumentResult(index, document_id, doc.uri, Outcome.FAILED, error=error), None
        prepared = await asyncio.to_thread(
            self._prepare,
            doc,
            document_id,
            context.redaction.for_category(doc.category),
            context.text_limit,
            list_findings=context.dry_run,
        )
        if not isinstance(prepared, _Prepared):
            return (
                DocumentResult(
                    index,
                    document_id,
                    doc.uri,
                    Outcome.EXCLUDED,
                    exclusion_reason=prepared.reason,
                    char_count=prepared.chars,
                    redactions=prepared.counts,
                    content_sha256=prepared.content_sha256,
                    redaction_findings=prepared.findings,
                ),
                None,
            )
        new = prepared.document
        previous = context.stored.get(document_id)
        if context.info_error is not None and not context.dry_run:
            return (
                DocumentResult(
                    index,
                    document_id,
                    doc.uri,
                    Outcome.FAILED,
                    error=context.info_error,
                    chunk_count=len(new.chunks),
                    char_count=new.char_count,
                    redactions=new.redactions,
                    content_sha256=new.content_sha256,
                ),
                None,
            )
        if (
            previous is not None
            and previous.fingerprint == new.fingerprint
            and (
                previous.model_name == context.model_name
                or (context.dry_run and not context.model_name)
            )
        ):
            return (
                DocumentResult(
                    index,
                    document_id,
                    doc.uri,
                    Outcome.UNCHANGED,
                    chunk_count=previous.chunk_count,
                    char_count=new.char_count,
                    redactions=new.redactions,
                    content_sha256=new.content_sha256,
                ),
                None,
            )
        return None, _Work(
            index=index,
            document=new,
            uri=doc.uri,
            texts=prepared.texts,
            replaced=previous is not None,
            remaining=len(prepared.texts),
            findings=prepared.findings,
            extraction=prepared.cleaning,
        )

    def _included(
        self, item: _Work, *, dry_run: bool, replaced: bool | None = None
    ) -> DocumentResult:
        doc = item.document
        return DocumentResult(
            item.index,
            doc.document_id,
            item.uri,
            Outcome.INCLUDED,
            replaced=item.replaced if replaced is None else replaced,
            chunk_count=len(doc.chunks),
            char_count=doc.char_count,
            redactions=doc.redactions,
            content_sha256=doc.content_sha256,
            extraction=item.extraction,
            redaction_findings=item.findings,
        )

    def _failed(self, item: _Work, error: DocumentError) -> DocumentResult:
        doc = item.document
        _log.warning(
            "document failed",
            extra={"fields": {"index": item.index, "reason": error.reason, "code": error.code}},
        )
        return DocumentResult(
            item.index,
            doc.document_id,
            item.uri,
            Outcome.FAILED,
            error=error,
            chunk_count=len(doc.chunks),
            char_count=doc.char_count,
            redactions=doc.redactions,
            content_sha256=doc.content_sha256,
            extraction=item.extraction,
        )

    # -- embedding and writing --------------------------------------------------------

    def _batches(self, work: list[_Work], info: EmbedderInfo) -> Iterator[list[tuple[int, int]]]:
        """(work position, chunk position) pairs, cut by count and characters."""
        size = max(1, min(self._settings.embed_batch_size, info.max_batch_size or 1))
        budget = info.max_batch_chars or 1 << 30
        batch: list[tuple[int, int]] = []
        chars = 0
        for position, item in enumerate(work):
            for chunk, text in enumerate(item.texts):
                if batch and (len(batch) == size or chars + len(text) > budget):
                    yield batch
                    batch, chars = [], 0
                batch.append((position, chunk))
                chars += len(text)
        if batch:
            yield batch

    async def _embed_and_write(
        self, tenant_id: str, work: list[_Work], info: EmbedderInfo, counters: _Counters
    ) -> AsyncIterator[IngestEvent]:
        for item in work:
            item.vectors = np.empty((len(item.texts), info.dimension), dtype=np.float32)
        batches = self._batches(work, info)
        in_flight: deque[tuple[list[tuple[int, int]], asyncio.Task[Any]]] = deque()

        def refill() -> None:
            while len(in_flight) < self._settings.embed_concurrency:
                batch = next(batches, None)
                if batch is None:
                    return
                # Chunks of documents that already failed are not worth embedding.
                sent = [(p, c) for p, c in batch if work[p].error is None]
                if not sent:
                    continue
                task = asyncio.create_task(
                    self._embed_batch(
                        tenant_id, [work[p].texts[c] for p, c in sent], info.model_name
                    )
                )
                in_flight.append((sent, task))

        next_to_write = 0
        refill()
        try:
            while in_flight:
                sent, task = in_flight.popleft()
                try:
                    vectors = await task
                except EmbeddingError as exc:
                    error = _embedding_failure(exc)
                    for position in {p for p, _ in sent}:
                        work[position].error = work[position].error or error
                else:
                    # Documents that failed while this batch was in flight are skipped.
                    for row, (position, chunk) in zip(vectors, sent, strict=True):
                        item = work[position]
                        if item.error is None and item.vectors is not None:
                            item.vectors[chunk] = row
                            item.remaining -= 1
                    counters.chunks_embedded += len(sent)
                refill()
                while next_to_write < len(work) and work[next_to_write].done:
                    yield await self._finish(tenant_id, work[next_to_write], info.model_name)
                    work[next_to_write].vectors = None
                    next_to_write += 1
                progress = self._maybe_progress(
                    counters, IngestStage.EMBEDDING if in_flight else IngestStage.WRITING
                )
                if progress:
                    yield progress
            while next_to_write < len(work):
                yield await self._finish(tenant_id, work[next_to_write], info.model_name)
                next_to_write += 1
        finally:
            for _, task in in_flight:
                task.cancel()

    async def _embed_batch(
        self, tenant_id: str, texts: list[str], model_name: str
    ) -> np.ndarray[Any, np.dtype[np.float32]]:
        attributes = {COUNT: len(texts), CHARS: sum(len(t) for t in texts)}
        # The tenant's budget spans its concurrent calls: many calls are not more work.
        async with self._budget.slot(tenant_id):
            with node_span(self._tracer, "retrieval.ingest.embed", attributes):
                return await self._embedder.embed_passages(
                    texts, expected_model=model_name, timeout_s=self._settings.embed_timeout_s
                )

    async def _finish(self, tenant_id: str, item: _Work, model_name: str) -> DocumentResult:
        if item.error is not None or item.vectors is None:
            return self._failed(
                item,
                item.error or _document_error(_INTERNAL, "no vectors", "INTERNAL_ERROR"),
            )
        try:
            with node_span(
                self._tracer, "retrieval.ingest.write", {CHUNKS: len(item.document.chunks)}
            ) as span:
                replaced = await self._repository.write_document(
                    tenant_id, item.document, model_name, item.vectors
                )
                span.set_attribute("tandem.replaced", replaced)
        except Unavailable:
            return self._failed(
                item,
                _document_error(
                    _UNAVAILABLE, "retrieval database unavailable", DATABASE_UNAVAILABLE
                ),
            )
        except TandemError as exc:
            return self._failed(item, _document_error(exc.code.value[0], exc.message, exc.reason))
        except Exception as exc:  # one document's bug must not lose the rest of the batch
            _log.error(
                "document write failed",
                exc_info=exc,
                extra={"fields": {"index": item.index, "error.type": type(exc).__name__}},
            )
            return self._failed(
                item, _document_error(_INTERNAL, "internal error", "INTERNAL_ERROR")
            )
        return self._included(item, dry_run=False, replaced=replaced)

    # -- progress -----------------------------------------------------------------------

    def _progress(self, counters: _Counters, stage: IngestStage) -> IngestProgress:
        now = self._clock()
        counters.last_progress = now
        return IngestProgress(
            stage=stage,
            documents_done=counters.done,
            documents_total=counters.total,
            chunks_embedded=counters.chunks_embedded,
            chunks_total=counters.chunks_total,
            elapsed_s=now - counters.started,
        )

    def _maybe_progress(self, counters: _Counters, stage: IngestStage) -> IngestProgress | None:
        if self._clock() - counters.last_progress < PROGRESS_INTERVAL_S:
            return None
        return self._progress(counters, stage)


def _embedding_failure(exc: EmbeddingError) -> DocumentError:
    if exc.model_mismatch:
        return _document_error(
            _FAILED_PRECONDITION,
            "the embedding service changed model during the ingest",
            "MODEL_MISMATCH",
        )
    return _document_error(
        _UNAVAILABLE, f"embedding service unavailable ({exc.code.name})", "DEPENDENCY_UNAVAILABLE"
    )


def _redaction_attributes(counts: dict[RedactionKind, int]) -> dict[str, int]:
    """Redaction counts by kind (``tandem.redactions.<kind>``) and in all."""
    attributes = {f"tandem.redactions.{kind.name.lower()}": n for kind, n in counts.items()}
    attributes["tandem.redactions"] = sum(counts.values())
    return attributes


def _scrub_json(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrub_json(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_json(v, scrub) for v in value]
    return value


__all__ = [
    "CHUNKER_VERSION",
    "Ingestor",
    "check_ingest_request",
    "derive_document_id",
    "document_violations",
]
