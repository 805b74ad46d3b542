"""The RetrievalService servicer (protobuf <-> logic) and its server bootstrap."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2

from services.common import (
    LSN_HEADER,
    Database,
    DatabaseSettings,
    GrpcServer,
    ReadRouting,
    ReadSettings,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    Trust,
    configure_logging,
    create_channel,
    embedded_pgvector_is_portable,
    report_on_error,
    resolve_url,
    serve,
)
from services.retrieval._documents import DocumentCatalog
from services.retrieval._embedding_client import EmbeddingClient
from services.retrieval._extract_pool import ExtractionPool
from services.retrieval._ingest import Ingestor
from services.retrieval._repository import (
    RetrievalRepository,
    app_conninfo,
    app_read_conninfo,
    migrations,
)
from services.retrieval._search import FastembedReranker, Reranker, Searcher
from services.retrieval._settings import DEFAULT_PORT, RetrievalSettings, cpu_flags
from services.retrieval._types import (
    DocumentAcl,
    DocumentInput,
    DocumentResult,
    Hit,
    IngestEvent,
    IngestProgress,
    IngestRequest,
    IngestSummary,
    JsonObject,
    Outcome,
    RedactionKind,
    SearchQuery,
    SearchResult,
    StoredChunk,
    StoredDocument,
)
from tandem.v1 import common_pb2
from tandem.v1 import retrieval_service_pb2 as pb
from tandem.v1 import retrieval_service_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["RetrievalService"].full_name
_log = logging.getLogger("tandem.retrieval")


@dataclass(frozen=True)
class RetrievalDeps:
    """What the service needs: an opened database, a channel to the embedding service,
    its settings, a reranker when one is configured, the extraction workers (a pool
    of its own from the settings when not given; whoever passes one closes it), and where
    staleness-tolerant reads go (the database alone when not given)."""

    settings: RetrievalSettings
    database: Database
    embedding_channel: grpc.aio.Channel
    reranker: Reranker | None = None
    extraction: ExtractionPool | None = None
    reads: ReadRouting | None = None


# -- protobuf <-> plain objects -------------------------------------------------------


def _value_to_python(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _struct_to_dict(value.struct_value)
    if kind == "list_value":
        return [_value_to_python(v) for v in value.list_value.values]
    if kind == "number_value":
        return value.number_value
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None


def _struct_to_dict(struct: struct_pb2.Struct) -> JsonObject:
    # Not json_format: NaN must reach validation to be refused there, not raise here.
    return {key: _value_to_python(value) for key, value in struct.fields.items()}


def _dict_to_struct(data: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(data)
    return struct


def _duration(seconds: float) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromNanoseconds(int(max(seconds, 0.0) * 1e9))
    return duration


def _timestamp(moment: datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def _redactions(counts: Mapping[RedactionKind, int]) -> list[pb.RedactionCount]:
    return [
        pb.RedactionCount(kind=int(kind), count=count)  # type: ignore[arg-type]
        for kind, count in sorted(counts.items())
    ]


def ingest_request_from_proto(request: pb.IngestDocumentsRequest) -> IngestRequest:
    return IngestRequest(
        tenant_id=request.tenant_id,
        documents=tuple(
            DocumentInput(
                document_id=d.document_id,
                title=d.title,
                uri=d.uri,
                category=d.category,
                metadata=_struct_to_dict(d.metadata) if d.HasField("metadata") else None,
                text=d.text,
                content_type=int(d.content_type),
                content=d.content,
                file_name=d.file_name,
                acl_principals=tuple(d.acl.principals),
                acl_groups=tuple(d.acl.groups),
            )
            for d in request.documents
        ),
        dry_run=request.dry_run,
        keep_kinds=(
            tuple(int(k) for k in request.redaction_policy.keep_kinds)
            if request.HasField("redaction_policy")
            else None
        ),
    )


def _document_result(result: DocumentResult) -> pb.DocumentResult:
    message = pb.DocumentResult(
        index=result.index,
        document_id=result.document_id,
        uri=result.uri,
        outcome=int(result.outcome),  # type: ignore[arg-type]
        replaced=result.replaced,
        chunk_count=result.chunk_count,
        char_count=result.char_count,
        redactions=_redactions(result.redactions),
        content_sha256=result.content_sha256,
    )
    message.redaction_findings.extend(
        pb.RedactionFinding(
            kind=int(f.kind),  # type: ignore[arg-type]
            field=f.field,
            line=f.line,
            preview=f.preview,
        )
        for f in result.redaction_findings
    )
    if result.extraction is not None:
        message.detected_type = result.extraction.detected_type
        message.encoding = result.extraction.encoding
        message.extraction_notes.extend(result.extraction.notes)
    if result.exclusion_reason is not None:
        message.exclusion_reason = int(result.exclusion_reason)  # type: ignore[assignment]
    if result.error is not None:
        message.error.CopyFrom(
            pb.DocumentError(
                code=result.error.code,
                message=result.error.message,
                reason=result.error.reason,
                field_violations=[
                    pb.FieldViolation(field=v.field, description=v.description)
                    for v in result.error.field_violations
                ],
            )
        )
    return message


def ingest_event_to_proto(event: IngestEvent) -> pb.IngestDocumentsResponse:
    if isinstance(event, IngestProgress):
        return pb.IngestDocumentsResponse(
            progress=pb.IngestProgress(
                stage=int(event.stage),  # type: ignore[arg-type]
                documents_done=event.documents_done,
                documents_total=event.documents_total,
                chunks_embedded=event.chunks_embedded,
                chunks_total=event.chunks_total,
                elapsed=_duration(event.elapsed_s),
            )
        )
    if isinstance(event, DocumentResult):
        return pb.IngestDocumentsResponse(document_finished=_document_result(event))
    summary: IngestSummary = event
    return pb.IngestDocumentsResponse(
        summary=pb.IngestSummary(
            dry_run=summary.dry_run,
            documents_total=len(summary.documents),
            documents_included=summary.count(Outcome.INCLUDED),
            documents_unchanged=summary.count(Outcome.UNCHANGED),
            documents_excluded=summary.count(Outcome.EXCLUDED),
            documents_failed=summary.count(Outcome.FAILED),
            chunks_written=summary.chunks_written,
            chunks_total=summary.chunks_total,
            redactions=_redactions(summary.redactions),
            documents=[_document_result(d) for d in summary.documents],
            model_name=summary.model_name,
            duration=_duration(summary.duration_s),
        )
    )


def _document(doc: StoredDocument) -> pb.Document:
    return pb.Document(
        document_id=doc.document_id,
        title=doc.title,
        uri=doc.uri,
        category=doc.category,
        metadata=_dict_to_struct(doc.metadata),
        content_type=int(doc.content_type),  # type: ignore[arg-type]
        content_sha256=doc.content_sha256,
        chunk_count=doc.chunk_count,
        char_count=doc.char_count,
        model_name=doc.model_name,
        redactions=_redactions(doc.redactions),
        create_time=_timestamp(doc.create_time),
        update_time=_timestamp(doc.update_time),
        acl=_acl(doc.acl),
        language=doc.language,
    )


def _acl(acl: DocumentAcl | None) -> pb.DocumentAcl:
    if acl is None:
        return pb.DocumentAcl()
    return pb.DocumentAcl(principals=acl.principals, groups=acl.groups)


def _chunk(chunk: StoredChunk) -> pb.Chunk:
    return pb.Chunk(
        chunk_id=chunk.chunk_id,
        document_id=chunk.document_id,
        ordinal=chunk.ordinal,
        section=chunk.section,
        text=chunk.text,
        char_count=len(chunk.text),
    )


def search_query_from_proto(request: pb.SearchRequest) -> SearchQuery:
    return SearchQuery(
        tenant_id=request.tenant_id,
        query=request.query,
        mode=int(request.mode),
        top_k=request.top_k,
        categories=tuple(request.filter.categories),
        document_ids=tuple(request.filter.document_ids),
        metadata=(
            _struct_to_dict(request.filter.metadata)
            if request.filter.HasField("metadata")
            else None
        ),
        candidate_depth=request.candidate_depth,
        ef_search=request.ef_search,
        min_score=request.min_score,
        rerank=request.rerank,
    )


def _hit(hit: Hit) -> pb.SearchHit:
    message = pb.SearchHit(
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
        title=hit.title,
        uri=hit.uri,
        category=hit.category,
        section=hit.section,
        text=hit.text,
        score=hit.score,
        fused_score=hit.fused_score,
        dense_rank=hit.dense_rank,
        sparse_rank=hit.sparse_rank,
        dense_score=hit.dense_score,
        sparse_score=hit.sparse_score,
        ordinal=hit.ordinal,
        metadata=_dict_to_struct(hit.metadata),
    )
    if hit.rerank_score is not None:
        message.rerank_score = hit.rerank_score
    return message


def search_result_to_proto(result: SearchResult) -> pb.SearchResponse:
    return pb.SearchResponse(
        hits=[_hit(h) for h in result.hits],
        degraded=result.degraded,
        degradations=[
            common_pb2.Degradation(
                reason=int(d.reason),  # type: ignore[arg-type]
                component=d.component,
                message=d.message,
            )
            for d in result.degradations
        ],
        model_name=result.model_name,
        mode=int(result.mode),  # type: ignore[arg-type]
        reranked=result.reranked,
        timings=[
            common_pb2.Timing(stage=stage, duration=_duration(seconds))
            for stage, seconds in result.timings.items()
        ],
    )


# -- the servicer ---------------------------------------------------------------------


class RetrievalServicer(pb_grpc.RetrievalServiceServicer):
    """Thin: converts protobuf to plain objects, delegates, converts back."""

    def __init__(
        self,
        ingestor: Ingestor,
        catalog: DocumentCatalog,
        searcher: Searcher,
        reads: ReadRouting | None = None,
    ) -> None:
        self._ingestor = ingestor
        self._catalog = catalog
        self._searcher = searcher
        self._reads = reads

    def _written(self, context: grpc.aio.ServicerContext[Any, Any], tenant_id: str) -> None:
        """Hand the tenant's last write position back in the ``x-tandem-lsn`` trailer (only
        with a standby), for the caller to send with its next read."""
        lsn = self._reads.written(tenant_id) if self._reads is not None else 0
        if lsn:
            trailer = tuple(context.trailing_metadata() or ())
            context.set_trailing_metadata((*trailer, (LSN_HEADER, str(lsn))))

    async def IngestDocuments(
        self, request: pb.IngestDocumentsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.IngestDocumentsResponse]:
        # Cut midway, the status lists what was settled (the caller re-sends the rest).
        settled = pb.IngestCheckpoint(documents_total=len(request.documents))
        report_on_error(lambda: settled if settled.documents else None)
        async for event in self._ingestor.ingest(ingest_request_from_proto(request)):
            reply = ingest_event_to_proto(event)
            if reply.HasField("document_finished"):
                settled.documents.append(reply.document_finished)
            yield reply
        self._written(context, request.tenant_id)

    async def DeleteDocument(
        self, request: pb.DeleteDocumentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.DeleteDocumentResponse:
        deleted, chunks = await self._catalog.delete(
            request.tenant_id, request.document_id, allow_missing=request.allow_missing
        )
        self._written(context, request.tenant_id)
        return pb.DeleteDocumentResponse(
            document_id=request.document_id, deleted=deleted, chunks_deleted=chunks
        )

    async def GetDocument(
        self, request: pb.GetDocumentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetDocumentResponse:
        document, chunks = await self._catalog.get(
            request.tenant_id, request.document_id, include_chunks=request.include_chunks
        )
        return pb.GetDocumentResponse(
            document=_document(document), chunks=[_chunk(c) for c in chunks]
        )

    async def ListDocuments(
        self, request: pb.ListDocumentsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListDocumentsResponse:
        page = await self._catalog.list(
            request.tenant_id,
            page_size=request.page_size,
            page_token=request.page_token,
            categories=tuple(request.categories),
        )
        return pb.ListDocumentsResponse(
            documents=[_document(d) for d in page.documents],
            next_page_token=page.next_page_token,
        )

    async def Search(
        self, request: pb.SearchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SearchResponse:
        result = await self._searcher.search(search_query_from_proto(request))
        return search_result_to_proto(result)

    async def UpdateDocumentAcl(
        self, request: pb.UpdateDocumentAclRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.UpdateDocumentAclResponse:
        acl, chunks = await self._catalog.update_acl(
            request.tenant_id,
            request.document_id,
            tuple(request.acl.principals),
            tuple(request.acl.groups),
            allow_missing=request.allow_missing,
        )
        self._written(context, request.tenant_id)
        if chunks is None:
            return pb.UpdateDocumentAclResponse(document_id=request.document_id)
        return pb.UpdateDocumentAclResponse(
            document_id=request.document_id, acl=_acl(acl), chunks_updated=chunks, updated=True
        )


# -- bootstrap ------------------------------------------------------------------------


def extraction_pool(settings: RetrievalSettings) -> ExtractionPool:
    """The worker processes files are extracted in (started at the first file, or by
    ``start``); its workers end with the pool, or with this process."""
    return ExtractionPool(
        workers=settings.extract_workers,
        per_tenant=settings.extract_workers_per_tenant,
        memory_bytes=settings.extract_memory_mb * 1024 * 1024,
    )


def build_servicer(deps: RetrievalDeps, telemetry: Telemetry) -> RetrievalServicer:
    """Wire the logic classes from their collaborators."""
    repository = RetrievalRepository(deps.database, deps.reads)
    embedder = EmbeddingClient(deps.embedding_channel)
    tracer = telemetry.tracer("tandem.retrieval")
    meter = telemetry.meter("tandem.retrieval")
    return RetrievalServicer(
        Ingestor(
            repository,
            embedder,
            deps.settings,
            tracer,
            meter,
            extraction=deps.extraction or extraction_pool(deps.settings),
        ),
        DocumentCatalog(repository),
        Searcher(repository, embedder, deps.settings, tracer, meter, reranker=deps.reranker),
        repository.reads,
    )


async def prepare_store(database: Database, settings: RetrievalSettings, *, embedded: bool) -> None:
    """Apply migrations, open the pool, and bring the HNSW index in line with settings."""
    await database.open(migrations())
    enabled = settings.hnsw_enabled(
        embedded_database=embedded,
        cpu_flags=cpu_flags(),
        portable_pgvector=embedded and embedded_pgvector_is_portable(),
    )
    change = await RetrievalRepository(database).ensure_vector_index(
        enabled=enabled, m=settings.hnsw_m, ef_construction=settings.hnsw_ef_construction
    )
    _log.info(
        "vector index",
        extra={
            "fields": {
                "hnsw": enabled,
                "change": change,
                "m": settings.hnsw_m,
                "ef_construction": settings.hnsw_ef_construction,
            }
        },
    )


async def open_database(
    conninfo: str, settings: RetrievalSettings, *, embedded: bool = True, **pool: Any
) -> Database:
    """A ready Database for ``conninfo`` (tests, benchmarks and the eval use this):
    migrated as ``conninfo``'s role, queried as the row-level-security role."""
    database = Database(
        app_conninfo(conninfo, settings.app_database_url), owner_conninfo=conninfo, **pool
    )
    await prepare_store(database, settings, embedded=embedded)
    return database


def read_routing(
    database: Database,
    reads: ReadSettings,
    settings: RetrievalSettings,
    db_settings: DatabaseSettings | None = None,
) -> ReadRouting:
    """Where Search and the document reads go: ``DATABASE_READ_URL``'s standby (as the
    row-level-security role, like the primary pool) within ``DB_READ_MAX_LAG_S``, else
    the primary pool alone. Opened by ``ReadRouting.open`` after the primary's pool."""
    if reads.url is None:
        return ReadRouting(database)
    sizes = db_settings or DatabaseSettings(url=None, data_dir=Path("."))
    standby = Database(
        app_read_conninfo(reads.url, settings.app_database_url),
        min_size=sizes.pool_min_size,
        max_size=sizes.pool_max_size,
        timeout_s=sizes.connect_timeout_s,
    )
    return ReadRouting(database, standby, max_lag_s=reads.max_lag_s)


def server_settings_for(server: ServerSettings, settings: RetrievalSettings) -> ServerSettings:
    """A message limit that carries the largest file ingest accepts as bytes."""
    needed = settings.max_file_bytes + 1024 * 1024
    return replace(server, max_message_bytes=max(server.max_message_bytes, needed))


async def create_server(
    settings: ServerSettings,
    telemetry: Telemetry,
    deps: RetrievalDeps,
    *,
    trust: Trust | None = None,
) -> tuple[GrpcServer, RetrievalServicer]:
    """Build and start the server NOT_SERVING; ``ready`` flips it to SERVING."""
    server = GrpcServer(server_settings_for(settings, deps.settings), telemetry, trust=trust)
    servicer = build_servicer(deps, telemetry)
    server.add_service(SERVICE_NAME, pb_grpc.add_RetrievalServiceServicer_to_server, servicer)
    await server.start()
    return server, servicer


async def ready(server: GrpcServer) -> None:
    """Report SERVING (the database was opened and migrated before the deps were built)."""
    await server.set_serving(True)
    _log.info("ready", extra={"fields": {"port": server.port}})


def load_reranker(settings: RetrievalSettings) -> Reranker | None:
    """The configured cross-encoder, or None (searches asking to rerank are then degraded)."""
    if not settings.reranker_model:
        return None
    try:
        return FastembedReranker(settings.reranker_model)
    except Exception as exc:  # a missing model degrades reranking, it does not stop the service
        _log.error(
            "reranker unavailable",
            extra={"fields": {"model": settings.reranker_model, "error.type": type(exc).__name__}},
        )
        return None


async def run_until_signalled() -> None:
    """Process entry point: bind, open and migrate the store, serve until SIGTERM."""
    telemetry_settings = TelemetrySettings.from_env("retrieval")
    configure_logging("retrieval", telemetry_settings.log_level)
    server_settings = ServerSettings.from_env("retrieval", DEFAULT_PORT)
    settings = RetrievalSettings.from_env()
    db_settings = DatabaseSettings.from_env()
    trust = Trust.from_env("retrieval")
    telemetry = Telemetry(telemetry_settings)
    url = await asyncio.to_thread(resolve_url, db_settings)
    database = Database(
        app_conninfo(url, settings.app_database_url),
        owner_conninfo=url,
        min_size=db_settings.pool_min_size,
        max_size=db_settings.pool_max_size,
        timeout_s=db_settings.connect_timeout_s,
    )
    channel = create_channel(
        settings.embedding_addr,
        interceptors=telemetry.client_interceptors(),
        trust=trust,
        peer="embedding",
    )
    reranker = await asyncio.to_thread(load_reranker, settings)
    extraction = extraction_pool(settings)
    reads = read_routing(database, ReadSettings.from_env(), settings, db_settings)
    deps = RetrievalDeps(settings, database, channel, reranker, extraction, reads)
    server = GrpcServer(server_settings_for(server_settings, settings), telemetry, trust=trust)
    server.add_service(
        SERVICE_NAME,
        pb_grpc.add_RetrievalServiceServicer_to_server,
        build_servicer(deps, telemetry),
    )

    async def start() -> None:
        extraction.start()  # warm workers, so the first file waits for no imports
        await prepare_store(database, settings, embedded=db_settings.url is None)
        await reads.open()
        server.watch_dependencies({"postgres": database.ping})

    async def stop() -> None:
        await extraction.close()
        await channel.close()
        await reads.close()
        await database.close()

    await serve(server, on_start=start, on_stop=stop)
