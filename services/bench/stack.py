"""An in-process stack for evals and benchmarks: the embedding model, retrieval on a
scratch database of the embedded Postgres (documents ingested), SQL on the demo warehouse
(with its glossary) and the router with the deterministic provider, each a real grpc.aio
server on loopback. The one place that assembles them, so evals and benchmarks measure
the same stack."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import grpc
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from services.common import (
    Database,
    DatabaseSettings,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    create_channel,
    resolve_url,
)
from services.demo import DemoDocument, load_demo_documents
from services.embedding import (
    Embedder,
    EmbeddingDeps,
    EmbeddingEngine,
    EmbeddingSettings,
    MicroBatcher,
    QueryCache,
)
from services.embedding import create_server as create_embedding_server
from services.embedding import ready as embedding_ready
from services.retrieval import ExtractionPool, RetrievalDeps, RetrievalSettings, prepare_store
from services.retrieval import create_server as create_retrieval_server
from services.retrieval import ready as retrieval_ready
from services.router import RouterSettings
from services.router import build_deps as build_router_deps
from services.router import create_server as create_router_server
from services.router import ready as router_ready
from services.router.offline import DeterministicProvider
from services.sql import (
    GrpcQuestionEmbedder,
    SqlSettings,
    TargetConfig,
    demo_glossary,
    ensure_warehouse,
)
from services.sql import build_deps as build_sql_deps
from services.sql import create_server as create_sql_server
from services.sql import ready as sql_ready
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tandem.v1 import router_service_pb2_grpc as pb_grpc


@dataclass(frozen=True)
class EvalStack:
    """The router's stub, the tenant holding the documents, the warehouse's owner URL
    (for gold queries), and the retrieval service's stub (for evals that ingest files
    themselves or search directly)."""

    router: pb_grpc.RouterServiceAsyncStub
    tenant: str
    warehouse_url: str
    retrieval: rpb_grpc.RetrievalServiceAsyncStub


@asynccontextmanager
async def eval_stack(
    documents: Sequence[DemoDocument],
    tenant: str,
    *,
    query_cache: bool = True,
    tenant_database: bool = True,
    databases: Sequence[TargetConfig] = (),
    extra_tenants: Sequence[str] = (),
) -> AsyncIterator[EvalStack]:
    """Start everything, ingest ``documents`` for ``tenant``, and tear it all down after.
    ``query_cache=False`` makes every request embed its question (latency benchmarks);
    ``tenant_database=False`` keeps the warehouse closed to the tenant, as it is to every
    tenant a user adds (documents-only evals). ``databases`` are further SQL targets (a
    dev set's databases); with them the SQL service reads words by meaning through the
    embedding service, as deployed. ``extra_tenants`` are registered too (empty), for an
    eval that compares two versions of a collection side by side."""
    telemetry = Telemetry(TelemetrySettings("eval"))
    model = await asyncio.to_thread(Embedder.from_settings, EmbeddingSettings.from_env())
    server_url = await asyncio.to_thread(resolve_url, DatabaseSettings.from_env())
    warehouse = await ensure_warehouse(server_url)
    scratch = f"tandem_eval_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    database = Database(make_conninfo(server_url, dbname=scratch), min_size=1, max_size=4)
    closers: list[Callable[[], Awaitable[object]]] = []
    channels: list[grpc.aio.Channel] = []
    try:
        engine = EmbeddingEngine(
            model=model,
            cache=QueryCache(1024, 600) if query_cache else QueryCache(0, 0),
            batcher=MicroBatcher(model, max_wait_s=0.001, max_batch=64),
        )
        embedding, servicer = await create_embedding_server(
            ServerSettings("embedding", port=0, grace_period_s=0.5), telemetry
        )
        await embedding_ready(embedding, servicer, EmbeddingDeps(engine))
        closers.append(lambda: embedding.stop(0))
        retrieval_settings = RetrievalSettings(embedding_addr=embedding.address, hnsw="off")
        await prepare_store(database, retrieval_settings, embedded=True)
        async with database.connection() as conn:
            for name in (tenant, *extra_tenants):
                await conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (name,))
        channels.append(create_channel(embedding.address))
        # Its own extraction workers, closed here after the server stops: a pool the
        # server made itself would outlive this event loop.
        extraction = ExtractionPool(
            workers=retrieval_settings.extract_workers,
            per_tenant=retrieval_settings.extract_workers_per_tenant,
            memory_bytes=retrieval_settings.extract_memory_mb * 1024 * 1024,
        )
        closers.append(extraction.close)
        retrieval, _ = await create_retrieval_server(
            ServerSettings("retrieval", port=0, grace_period_s=0.5),
            telemetry,
            RetrievalDeps(retrieval_settings, database, channels[-1], None, extraction),
        )
        await retrieval_ready(retrieval)
        closers.append(lambda: retrieval.stop(0))
        sql_deps = await build_sql_deps(
            SqlSettings.from_env(),
            telemetry,
            # channels[0] reaches the embedding service
            phrase_embedder=GrpcQuestionEmbedder(channels[0]) if databases else None,
            configs=[
                *databases,
                TargetConfig(
                    "warehouse",
                    warehouse.reader_url,
                    tenants=frozenset({tenant}) if tenant_database else frozenset(),
                    glossary=demo_glossary(),
                ),
            ],
        )
        closers.append(sql_deps.close)
        sql_server, sql_servicer = await create_sql_server(
            ServerSettings("sql", port=0, grace_period_s=0.5), telemetry
        )
        await sql_ready(sql_server, sql_servicer, sql_deps)
        closers.append(lambda: sql_server.stop(0))
        router_settings = RouterSettings(
            retrieval_addr=retrieval.address, sql_addr=sql_server.address
        )
        router_deps = build_router_deps(router_settings, telemetry, llm=DeterministicProvider())
        closers.append(router_deps.close)
        router, router_servicer = await create_router_server(
            ServerSettings("router", port=0, grace_period_s=0.5), telemetry, router_settings
        )
        await router_ready(router, router_servicer, router_deps)
        closers.append(lambda: router.stop(0))
        channels.append(create_channel(retrieval.address))
        retrieval_stub: rpb_grpc.RetrievalServiceAsyncStub = rpb_grpc.RetrievalServiceStub(
            channels[-1]
        )
        if documents:
            report = await load_demo_documents(retrieval_stub, tenant, documents=documents)
            if report.failed:
                raise RuntimeError(f"{report.failed} demo documents failed to ingest")
        channels.append(create_channel(router.address))
        owner = make_conninfo(server_url, dbname=warehouse.database)
        yield EvalStack(pb_grpc.RouterServiceStub(channels[-1]), tenant, owner, retrieval_stub)
    finally:
        for channel in channels:
            await channel.close()
        for closer in reversed(closers):
            await closer()
        await database.close()
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch))
            )
        telemetry.shutdown()
