"""A real router stack on loopback: the embedding model, retrieval and SQL on the embedded
Postgres, and the router, each a real grpc.aio server. Retrieval and SQL are registered
behind thin recording servicers that delegate to the real ones, so a test can count the
calls each engine received (and hold one back to make it slow)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from services.common import GrpcServer, Telemetry, create_channel
from services.common.llm import LlmProvider
from services.retrieval import RetrievalSettings
from services.retrieval._server import (
    SERVICE_NAME as RETRIEVAL_SERVICE,
)
from services.retrieval._server import (
    RetrievalDeps,
    RetrievalServicer,
    build_servicer,
    extraction_pool,
    open_database,
)
from services.router import RouterSettings
from services.router._server import build_deps as build_router_deps
from services.router._server import create_server as create_router_server
from services.router._server import ready as router_ready
from services.sql import SqlSettings, TargetConfig, demo_glossary
from services.sql._server import SERVICE_NAME as SQL_SERVICE
from services.sql._server import SqlDeps, SqlServicer
from services.sql._server import build_deps as build_sql_deps
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tandem.v1 import router_service_pb2_grpc as pb_grpc
from tandem.v1 import sql_service_pb2 as spb
from tandem.v1 import sql_service_pb2_grpc as spb_grpc
from tests.conftest import server_settings


@dataclass
class CallLog:
    """Calls one server received: method, start, end, and whether it was cancelled."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    delays: dict[str, float] = field(default_factory=dict)

    def count(self, method: str) -> int:
        return sum(1 for c in self.calls if c["method"] == method)

    def of(self, method: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["method"] == method]

    async def record(self, method: str, call: Any, request: Any = None) -> Any:
        entry: dict[str, Any] = {
            "method": method,
            "start": time.monotonic(),
            "end": None,
            "cancelled": False,
            "request": request,
        }
        self.calls.append(entry)
        try:
            delay = self.delays.get(method, 0.0)
            if delay:
                await asyncio.sleep(delay)
            result = await call()
        except asyncio.CancelledError:
            entry["cancelled"] = True
            raise
        entry["end"] = time.monotonic()
        return result


class RecordingRetrieval(rpb_grpc.RetrievalServiceServicer):
    """Delegates Search to the real servicer, recording every call."""

    def __init__(self, real: RetrievalServicer, log: CallLog) -> None:
        self._real = real
        self._log = log

    async def Search(self, request: rpb.SearchRequest, context: Any) -> rpb.SearchResponse:
        result: rpb.SearchResponse = await self._log.record(
            "Search", lambda: self._real.Search(request, context), request
        )
        return result

    def IngestDocuments(self, request: Any, context: Any) -> Any:
        return self._real.IngestDocuments(request, context)

    async def DeleteDocument(self, request: Any, context: Any) -> Any:
        return await self._real.DeleteDocument(request, context)

    async def GetDocument(self, request: Any, context: Any) -> Any:
        return await self._real.GetDocument(request, context)

    async def ListDocuments(self, request: Any, context: Any) -> Any:
        return await self._real.ListDocuments(request, context)

    async def UpdateDocumentAcl(self, request: Any, context: Any) -> Any:
        return await self._real.UpdateDocumentAcl(request, context)


class RecordingSql(spb_grpc.SqlServiceServicer):
    """Delegates to the real SQL servicer, recording every call."""

    def __init__(self, real: SqlServicer, log: CallLog) -> None:
        self._real = real
        self._log = log

    async def AskQuestion(self, request: Any, context: Any) -> spb.AskQuestionResponse:
        result: spb.AskQuestionResponse = await self._log.record(
            "AskQuestion", lambda: self._real.AskQuestion(request, context), request
        )
        return result

    async def RunIntent(self, request: Any, context: Any) -> spb.RunIntentResponse:
        result: spb.RunIntentResponse = await self._log.record(
            "RunIntent", lambda: self._real.RunIntent(request, context)
        )
        return result

    async def ExecuteSql(self, request: Any, context: Any) -> Any:
        return await self._real.ExecuteSql(request, context)

    async def DescribeSchema(self, request: Any, context: Any) -> Any:
        return await self._real.DescribeSchema(request, context)

    async def ValidateSql(self, request: Any, context: Any) -> spb.ValidateSqlResponse:
        result: spb.ValidateSqlResponse = await self._log.record(
            "ValidateSql", lambda: self._real.ValidateSql(request, context)
        )
        return result

    # The answer memory's RPCs: the router never calls them; delegated unrecorded.
    async def TeachSql(self, request: Any, context: Any) -> Any:
        return await self._real.TeachSql(request, context)

    async def ListConfirmedPairs(self, request: Any, context: Any) -> Any:
        return await self._real.ListConfirmedPairs(request, context)

    async def DeleteConfirmedPair(self, request: Any, context: Any) -> Any:
        return await self._real.DeleteConfirmedPair(request, context)

    async def SubmitFeedback(self, request: Any, context: Any) -> Any:
        return await self._real.SubmitFeedback(request, context)


@dataclass
class Engines:
    """Retrieval and SQL servers with their call logs."""

    retrieval: GrpcServer
    sql: GrpcServer
    retrieval_log: CallLog
    sql_log: CallLog
    retrieval_stub: rpb_grpc.RetrievalServiceAsyncStub
    closers: list[Any] = field(default_factory=list)

    async def close(self) -> None:
        await self.retrieval.stop(0)
        await self.sql.stop(0)
        for closer in reversed(self.closers):
            await closer()


async def start_engines(
    pg_url: str,
    reader_url: str,
    embedding_addr: str,
    telemetry: Telemetry,
    *,
    extra_targets: tuple[TargetConfig, ...] = (),
    warehouse_tenants: frozenset[str] = frozenset({"*"}),
) -> Engines:
    settings = RetrievalSettings(embedding_addr=embedding_addr)
    database = await open_database(pg_url, settings, min_size=1, max_size=4, timeout_s=5.0)
    embedding_channel = create_channel(embedding_addr)
    # The stack owns its extraction workers and closes them (a pool the servicer made
    # for itself would outlive the test's event loop once a file is uploaded).
    extraction = extraction_pool(settings)
    real_retrieval = build_servicer(
        RetrievalDeps(settings, database, embedding_channel, None, extraction), telemetry
    )
    retrieval_log = CallLog()
    retrieval = GrpcServer(server_settings("retrieval"), telemetry)
    retrieval.add_service(
        RETRIEVAL_SERVICE,
        rpb_grpc.add_RetrievalServiceServicer_to_server,
        RecordingRetrieval(real_retrieval, retrieval_log),
    )
    await retrieval.start()
    await retrieval.set_serving(True)

    sql_deps: SqlDeps = await build_sql_deps(
        SqlSettings(),
        telemetry,
        configs=[
            TargetConfig(
                "warehouse", reader_url, tenants=warehouse_tenants, glossary=demo_glossary()
            ),
            *extra_targets,
        ],
    )
    sql_log = CallLog()
    sql = GrpcServer(server_settings("sql"), telemetry)
    sql.add_service(
        SQL_SERVICE,
        spb_grpc.add_SqlServiceServicer_to_server,
        RecordingSql(SqlServicer(sql_deps), sql_log),
    )
    await sql.start()
    await sql.set_serving(True)
    client = create_channel(retrieval.address)
    return Engines(
        retrieval,
        sql,
        retrieval_log,
        sql_log,
        rpb_grpc.RetrievalServiceStub(client),
        closers=[
            database.close,
            embedding_channel.close,
            extraction.close,
            sql_deps.close,
            client.close,
        ],
    )


@dataclass
class RouterStack:
    """The router server wired to the engines, and a stub to it."""

    server: GrpcServer
    stub: pb_grpc.RouterServiceAsyncStub
    channel: grpc.aio.Channel
    deps: Any

    @property
    def router(self) -> Any:
        return self.deps.router

    async def close(self) -> None:
        await self.server.stop(0)
        await self.channel.close()
        await self.deps.close()


async def start_router(
    engines: Engines, telemetry: Telemetry, llm: LlmProvider, **settings: Any
) -> RouterStack:
    router_settings = RouterSettings(
        retrieval_addr=engines.retrieval.address, sql_addr=engines.sql.address, **settings
    )
    deps = build_router_deps(router_settings, telemetry, llm=llm)
    server, servicer = await create_router_server(
        server_settings("router"), telemetry, router_settings
    )
    await router_ready(server, servicer, deps)
    channel = create_channel(server.address)
    return RouterStack(server, pb_grpc.RouterServiceStub(channel), channel, deps)
