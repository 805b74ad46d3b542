"""The gateway in front of real internal services for tests: the embedded Postgres, the
real embedding model over gRPC, the real retrieval, SQL and router servers on loopback,
and the gateway on port 0 driven through its stub."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import grpc

from gateway import ALL_SCOPES, ApiKeys, GatewaySettings, Scope, TokenBuckets
from gateway._audit import AuditLog
from gateway._audit import app_conninfo as audit_conninfo
from gateway._conversations import ConversationStore, app_conninfo
from gateway._schema import migrations
from gateway._server import GatewayDeps, create_server, ready
from gateway._upload import internal_message_bytes
from services.common import (
    Database,
    GrpcServer,
    RuntimeInterceptor,
    ServerSettings,
    Telemetry,
    create_channel,
)
from services.retrieval import RetrievalSettings
from services.retrieval._server import RetrievalDeps, build_servicer, open_database
from services.router import RouterDeps, RouterSettings
from services.router import build_deps as build_router_deps
from services.router import create_server as create_router_server
from services.router import ready as router_ready
from services.sql import SqlSettings, TargetConfig, ensure_warehouse
from services.sql._server import SqlDeps, build_deps
from services.sql._server import create_server as create_sql_server
from services.sql._server import ready as sql_ready
from services.sql.memory._answers import MemorySettings, open_memory
from services.sql.memory._store import GrpcQuestionEmbedder
from services.sql.verify import VerifyMode
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tests.conftest import server_settings

PEPPER = b"gateway-test-pepper-0123456789ab"


def bearer(key: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``key``."""
    return (("authorization", f"Bearer {key}"),)


@dataclass
class Gateway:
    server: GrpcServer
    stub: gpb_grpc.GatewayServiceAsyncStub
    keys: ApiKeys
    database: Database
    channels: list[grpc.aio.Channel] = field(default_factory=list)
    conversations: ConversationStore | None = None
    audit: AuditLog | None = None

    @property
    def address(self) -> str:
        return self.server.address

    async def key(self, tenant: str, scopes: tuple[Scope, ...] = ALL_SCOPES) -> str:
        """A fresh API key for ``tenant`` (registering the tenant), with every scope unless
        ``scopes`` says otherwise."""
        return (await self.keys.create(tenant, label="test", scopes=scopes)).secret

    async def close(self) -> None:
        await self.server.stop(0)
        for channel in self.channels:
            await channel.close()
        if self.conversations is not None:
            await self.conversations.close()
        if self.audit is not None:
            await self.audit.close()
        await self.database.close()


async def start_gateway(
    pg_url: str,
    telemetry: Telemetry,
    *,
    router_addr: str,
    retrieval_addr: str,
    sql_addr: str,
    settings: GatewaySettings | None = None,
    conversations: bool = True,
) -> Gateway:
    """The gateway with its stores as in production (conversations and the audit trail
    each as their own row-level-security role; ``settings.audit.enabled`` False: no
    trail)."""
    settings = replace(
        settings or GatewaySettings(rate_per_s=1000.0, burst=1000.0),
        router_addr=router_addr,
        retrieval_addr=retrieval_addr,
        sql_addr=sql_addr,
    )
    database = Database(pg_url, min_size=1, max_size=4, vector=False)
    await database.open(migrations())
    keys = ApiKeys(database, PEPPER)
    store: ConversationStore | None = None
    if conversations:
        # As in production: the row-level-security role, never the owner.
        store = ConversationStore(
            Database(app_conninfo(pg_url), owner_conninfo=pg_url, max_size=2, vector=False),
            retention_days=settings.conversation_retention_days,
        )
        await store.open()
    audit: AuditLog | None = None
    if settings.audit.enabled:
        audit = AuditLog(
            Database(audit_conninfo(pg_url), owner_conninfo=pg_url, max_size=2, vector=False),
            settings.audit,
            meter=telemetry.meter("tandem"),
            recent_tenant=keys.recent_tenant,
        )
        await audit.start()
    # As open_channels does: the retrieval channel carries an uploaded file whole.
    upload = internal_message_bytes(
        settings.limits.max_upload_bytes, ServerSettings.max_message_bytes
    )
    channels = [
        create_channel(router_addr),
        create_channel(retrieval_addr, max_message_bytes=upload),
        create_channel(sql_addr),
    ]
    deps = GatewayDeps(
        settings=settings,
        keys=keys,
        quota=TokenBuckets(settings.rate_per_s, settings.burst),
        router_channel=channels[0],
        retrieval_channel=channels[1],
        sql_channel=channels[2],
        conversations=store,
        audit=audit,
    )
    server, servicer = await create_server(server_settings("gateway"), telemetry, deps)
    await ready(server, servicer, deps)
    client = grpc.aio.insecure_channel(server.address)
    return Gateway(
        server,
        gpb_grpc.GatewayServiceStub(client),
        keys,
        database,
        [*channels, client],
        store,
        audit,
    )


@dataclass
class Sql:
    server: GrpcServer
    deps: SqlDeps
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.server.address

    async def close(self) -> None:
        await self.server.stop(0)
        await self.deps.close()
        for channel in self.channels:
            await channel.close()


_WAREHOUSE_LOCK = asyncio.Lock()


async def start_sql(
    pg_url: str,
    telemetry: Telemetry,
    *,
    as_configured: bool = False,
    embedding_addr: str | None = None,
    verify: VerifyMode | None = VerifyMode.ENFORCE,
) -> Sql:
    """The real SQL service over the demo warehouse in the embedded server, open to every
    tenant; ``as_configured``: set up exactly as the service does it from its settings
    (the demo warehouse then serves tenant ``demo`` only); ``embedding_addr``: with the
    answer memory on, in ``pg_url``'s database, embedding through that service."""
    async with _WAREHOUSE_LOCK:
        warehouse = await ensure_warehouse(pg_url)
    settings = SqlSettings(admin_url=pg_url, reference_date=date(2025, 6, 30), verify=verify)
    everyone = [TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({"*"}))]
    memory = None
    channels: list[grpc.aio.Channel] = []
    if embedding_addr is not None:
        channels.append(create_channel(embedding_addr))
        store = await open_memory(pg_url, settings.data_dir, MemorySettings())
        memory = (store, GrpcQuestionEmbedder(channels[0]))
    deps = await build_deps(
        settings, telemetry, configs=None if as_configured else everyone, memory=memory
    )
    server, servicer = await create_sql_server(server_settings("sql"), telemetry)
    await sql_ready(server, servicer, deps)
    return Sql(server, deps, channels)


# -- a retrieval server that records what reached it ------------------------------------


@dataclass
class Seen:
    """What the recording interceptor saw of each internal call."""

    remaining: list[float | None] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


class Recorder(grpc.aio.ServerInterceptor):
    """Records each call's remaining deadline and whether its handler was cancelled."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None or not handler_call_details.method.startswith("/tandem."):
            return handler
        seen = self.seen
        if handler.unary_unary:
            inner = handler.unary_unary

            async def unary(request: Any, context: Any) -> Any:
                seen.remaining.append(context.time_remaining())
                try:
                    return await inner(request, context)
                except asyncio.CancelledError:
                    seen.cancelled.set()
                    raise

            return grpc.unary_unary_rpc_method_handler(
                unary, handler.request_deserializer, handler.response_serializer
            )
        inner_stream = handler.unary_stream

        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            seen.remaining.append(context.time_remaining())
            try:
                async for item in inner_stream(request, context):
                    yield item
            except asyncio.CancelledError:
                seen.cancelled.set()
                raise

        return grpc.unary_stream_rpc_method_handler(
            stream, handler.request_deserializer, handler.response_serializer
        )


@dataclass
class RecordedRetrieval:
    server: grpc.aio.Server
    address: str
    seen: Seen
    database: Database
    channel: grpc.aio.Channel

    async def close(self) -> None:
        await self.server.stop(0)
        await self.channel.close()
        await self.database.close()


async def start_recorded_retrieval(
    pg_url: str, embedding_addr: str, telemetry: Telemetry
) -> RecordedRetrieval:
    """The real retrieval servicer on a server whose outermost interceptor records."""
    settings = RetrievalSettings(embedding_addr=embedding_addr)
    database = await open_database(pg_url, settings, min_size=1, max_size=4)
    channel = create_channel(embedding_addr)
    seen = Seen()
    server = grpc.aio.server(interceptors=[Recorder(seen), RuntimeInterceptor(30.0)])
    rpb_grpc.add_RetrievalServiceServicer_to_server(
        build_servicer(RetrievalDeps(settings, database, channel), telemetry), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return RecordedRetrieval(server, f"127.0.0.1:{port}", seen, database, channel)


@dataclass
class Router:
    server: GrpcServer
    deps: RouterDeps

    @property
    def address(self) -> str:
        return self.server.address

    async def close(self) -> None:
        await self.server.stop(0)
        await self.deps.close()


async def start_router(retrieval_addr: str, sql_addr: str, telemetry: Telemetry) -> Router:
    """The real router (deterministic provider unless GEMINI_API_KEY is set) on port 0."""
    settings = RouterSettings(retrieval_addr=retrieval_addr, sql_addr=sql_addr)
    server, servicer = await create_router_server(server_settings("router"), telemetry, settings)
    deps = build_router_deps(settings, telemetry)
    await router_ready(server, servicer, deps)
    return Router(server, deps)
