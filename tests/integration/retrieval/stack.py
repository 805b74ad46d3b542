"""A real retrieval stack for tests: embedded Postgres, the real embedding model served over
gRPC in-process, and the retrieval server on port 0 driven through its stub."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import psycopg
from psycopg.conninfo import conninfo_to_dict

from services.bench.retrieval_eval import DEFAULT_DATASET, Dataset, read_beir
from services.common import (
    Database,
    GrpcServer,
    ReadRouting,
    ReadSettings,
    Telemetry,
    create_channel,
)
from services.embedding import Embedder, EmbeddingEngine, MicroBatcher, QueryCache
from services.embedding._server import EmbeddingDeps
from services.embedding._server import create_server as create_embedding_server
from services.embedding._server import ready as embedding_ready
from services.retrieval import ExtractionPool, Reranker, RetrievalSettings
from services.retrieval._server import (
    RetrievalDeps,
    create_server,
    extraction_pool,
    open_database,
    read_routing,
    ready,
)
from tandem.v1 import retrieval_service_pb2 as pb
from tandem.v1 import retrieval_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings


@dataclass
class EmbeddingService:
    server: GrpcServer
    engine: EmbeddingEngine

    async def close(self) -> None:
        await self.server.stop(0)
        await self.engine.close()


async def start_embedding(model: Embedder, telemetry: Telemetry) -> EmbeddingService:
    engine = EmbeddingEngine(
        model=model,
        cache=QueryCache(1000, 600),
        batcher=MicroBatcher(model, max_wait_s=0.002, max_batch=64),
    )
    server, servicer = await create_embedding_server(server_settings("embedding"), telemetry)
    await embedding_ready(server, servicer, EmbeddingDeps(engine=engine))
    return EmbeddingService(server, engine)


@dataclass
class Retrieval:
    server: GrpcServer
    stub: pb_grpc.RetrievalServiceAsyncStub
    database: Database
    channels: list[grpc.aio.Channel] = field(default_factory=list)
    extraction: ExtractionPool | None = None
    reads: ReadRouting | None = None

    async def close(self) -> None:
        await self.server.stop(0)
        if self.extraction is not None:
            await self.extraction.close()
        for channel in self.channels:
            await channel.close()
        if self.reads is not None:
            await self.reads.close()
        await self.database.close()


async def start_retrieval(
    conninfo: str,
    embedding_addr: str,
    telemetry: Telemetry,
    *,
    settings: RetrievalSettings | None = None,
    reranker: Reranker | None = None,
    pool_timeout_s: float = 2.0,
    server: dict[str, Any] | None = None,
    reads: ReadSettings | None = None,
) -> Retrieval:
    """``server``: ServerSettings overrides (a short default deadline, a connection age);
    ``reads``: a standby for Search and the document reads (``DATABASE_READ_URL``)."""
    settings = settings or RetrievalSettings(embedding_addr=embedding_addr)
    database = await open_database(
        conninfo, settings, min_size=1, max_size=4, timeout_s=pool_timeout_s
    )
    routing = read_routing(database, reads or ReadSettings(), settings)
    await routing.open()
    embedding_channel = create_channel(embedding_addr)
    extraction = extraction_pool(settings)
    grpc_server, _ = await create_server(
        server_settings("retrieval", **(server or {})),
        telemetry,
        RetrievalDeps(settings, database, embedding_channel, reranker, extraction, routing),
    )
    await ready(grpc_server)
    client = create_channel(grpc_server.address)
    return Retrieval(
        grpc_server,
        pb_grpc.RetrievalServiceStub(client),
        database,
        [client, embedding_channel],
        extraction,
        routing,
    )


def new_tenant(pg_url: str, prefix: str = "t") -> str:
    """Register a fresh tenant: every test owns its data."""
    tenant = f"{prefix}-{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", (tenant,)
        )
    return tenant


@contextlib.contextmanager
def held_document(pg_url: str, tenant: str, document_id: str) -> Iterator[None]:
    """Hold a stored document's row locked in another transaction: the next write of it
    waits until the block ends (an ingest cut midway, at a place the test chooses)."""
    with psycopg.connect(pg_url) as holder:
        found = holder.execute(
            "SELECT 1 FROM retrieval_documents WHERE tenant_id = %s AND document_id = %s"
            " FOR UPDATE",
            (tenant, document_id),
        ).fetchone()
        assert found, f"{document_id} is not stored for {tenant}"
        try:
            yield
        finally:
            holder.rollback()


def stored_documents(pg_url: str, tenant: str) -> dict[str, str]:
    """Each stored document of ``tenant`` and its content hash."""
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT document_id, content_sha256 FROM retrieval_documents WHERE tenant_id = %s",
            (tenant,),
        ).fetchall()
    return {row[0]: row[1] for row in rows}


def query_one(pg_url: str, statement: str, params: tuple[Any, ...] = ()) -> Any:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(statement, params).fetchone()
    return row[0] if row else None


async def ingest(
    stub: pb_grpc.RetrievalServiceAsyncStub,
    tenant: str,
    documents: list[pb.DocumentInput],
    metadata: tuple[tuple[str, str], ...] | None = None,
    **options: Any,
) -> tuple[list[pb.IngestDocumentsResponse], pb.IngestSummary]:
    """``metadata``: request headers (a principal's, ``Principal.headers()``)."""
    request = pb.IngestDocumentsRequest(tenant_id=tenant, documents=documents, **options)
    call = stub.IngestDocuments(request, timeout=60, metadata=metadata)
    events = [event async for event in call]
    assert events[-1].HasField("summary")
    assert sum(e.HasField("summary") for e in events) == 1
    return events, events[-1].summary


async def ingest_golden_set(
    stub: pb_grpc.RetrievalServiceAsyncStub, pg_url: str
) -> tuple[Dataset, str]:
    """The retrieval golden set's corpus, ingested whole into a fresh tenant."""
    dataset = read_beir(DEFAULT_DATASET)
    tenant = new_tenant(pg_url, "golden")
    documents = [
        pb.DocumentInput(document_id=d["_id"], title=d["title"], text=d["text"])
        for d in dataset.corpus
    ]
    _, summary = await ingest(stub, tenant, documents)
    assert summary.documents_included == len(documents)
    return dataset, tenant


class PgProxy:
    """TCP -> Unix-socket relay in front of the embedded Postgres; ``cut`` makes the
    database unreachable the way a network failure or a crash does."""

    def __init__(self, pg_url: str) -> None:
        params = conninfo_to_dict(pg_url)
        self._socket = f"{params['host']}/.s.PGSQL.{params.get('port') or 5432}"
        self._user = params.get("user") or "postgres"
        self._dbname = params.get("dbname") or "postgres"
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"postgresql://{self._user}@127.0.0.1:{self.port}/{self._dbname}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(self._socket)
        self._writers += [writer, upstream_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()
