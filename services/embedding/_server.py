"""The EmbeddingService servicer (protobuf <-> engine) and its server bootstrap."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import duration_pb2

from services.common import (
    FailedPrecondition,
    GrpcServer,
    InvalidArgument,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    Trust,
    Unavailable,
    configure_logging,
    current_principal,
    serve,
)
from services.embedding._errors import EmbeddingInputError
from services.embedding._logic import EmbeddingEngine, create_engine
from services.embedding._model import Embedder
from services.embedding._settings import EmbeddingSettings
from services.embedding._types import EmbedKind, ModelOrigin
from tandem.v1 import embedding_service_pb2 as pb
from tandem.v1 import embedding_service_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["EmbeddingService"].full_name
DEFAULT_PORT = 50054
_log = logging.getLogger("tandem.embedding")

_KINDS = {pb.INPUT_TYPE_QUERY: EmbedKind.QUERY, pb.INPUT_TYPE_PASSAGE: EmbedKind.PASSAGE}


@dataclass(frozen=True)
class EmbeddingDeps:
    """What the servicer needs: the engine, attached once it is warm."""

    engine: EmbeddingEngine


_SOURCES = {
    ModelOrigin.LOCAL_DIRECTORY: pb.MODEL_SOURCE_LOCAL_DIRECTORY,
    ModelOrigin.HUB: pb.MODEL_SOURCE_HUB,
}


class EmbeddingServicer(pb_grpc.EmbeddingServiceServicer):
    """Thin: validates enums, converts to and from protobuf, delegates to the engine.

    The server binds before the model loads (health answers NOT_SERVING meanwhile), so
    the engine arrives later through ``attach``; until then calls get UNAVAILABLE.

    Whose query cache serves a call is the tenant (and the principal inside it) its
    forwarded token was signed for
    (retrieval and SQL forward the gateway's token on every call), never a request field:
    a call without a token is served without the cache. In plaintext (development only:
    no tokens, every caller trusted with every tenant) all calls share one cache.
    """

    def __init__(self, deps: EmbeddingDeps | None = None, *, trust: Trust | None = None) -> None:
        self._deps = deps
        self._trust = trust or Trust.plaintext()

    def attach(self, deps: EmbeddingDeps) -> None:
        self._deps = deps

    def _ready_deps(self) -> EmbeddingDeps:
        if self._deps is None or not self._deps.engine.ready:
            raise Unavailable("embedding model is loading", reason="MODEL_NOT_READY")
        return self._deps

    async def Embed(
        self, request: pb.EmbedRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.EmbedResponse:
        kind = _KINDS.get(request.input_type)
        if kind is None:
            raise InvalidArgument.field(
                "input_type", "must be INPUT_TYPE_QUERY or INPUT_TYPE_PASSAGE"
            )
        engine = self._ready_deps().engine
        info = engine.model_info()
        if request.expected_model_name and request.expected_model_name != info.name:
            raise FailedPrecondition(
                f"loaded model is {info.name}, request expects another",
                reason="MODEL_MISMATCH",
                metadata={"loaded_model": info.name},
            )
        tenant: str | None
        if self._trust.secure:
            # The signed token, not the headers: the caller guard checks principal headers
            # only on calls that name a tenant, and an Embed call names none.
            grant = self._trust.call_grant(context)
            tenant, view = (None, "") if grant is None else (grant.tenant, grant.principal)
        else:
            principal = current_principal.get()
            tenant, view = "", "" if principal is None else principal.canonical()
        try:
            result = await engine.embed(list(request.texts), kind, tenant=tenant, view=view)
        except EmbeddingInputError as exc:
            raise _invalid(exc) from None
        return pb.EmbedResponse(
            embeddings=[pb.Embedding(values=row.tolist()) for row in result.vectors],
            model_name=result.model,
            dimension=result.dim,
            cache_hits=result.cache_hits,
        )

    async def GetModelInfo(
        self, request: pb.GetModelInfoRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetModelInfoResponse:
        deps = self._ready_deps()
        info = deps.engine.model_info()
        ttl = duration_pb2.Duration()
        ttl.FromMilliseconds(int(info.query_cache_ttl_s * 1000))
        return pb.GetModelInfoResponse(
            model_name=info.name,
            dimension=info.dim,
            max_batch_size=info.max_batch,
            max_text_chars=info.max_text_chars,
            max_batch_chars=info.max_batch_chars,
            source=_SOURCES.get(info.origin, pb.MODEL_SOURCE_UNSPECIFIED),
            normalized=info.normalized,
            pooling=info.pooling,
            query_cache_capacity=info.query_cache_capacity,
            query_cache_ttl=ttl,
            query_cache_capacity_per_tenant=info.query_cache_capacity_per_tenant,
        )


def _invalid(exc: EmbeddingInputError) -> InvalidArgument:
    """The engine's input error as INVALID_ARGUMENT with the reason the proto documents."""
    return InvalidArgument.field(
        exc.field, exc.description, reason=exc.reason, metadata=exc.metadata
    )


async def create_server(
    settings: ServerSettings,
    telemetry: Telemetry,
    deps: EmbeddingDeps | None = None,
    *,
    trust: Trust | None = None,
) -> tuple[GrpcServer, EmbeddingServicer]:
    """Build and start the server NOT_SERVING; ``ready`` flips it once the engine is warm."""
    server = GrpcServer(settings, telemetry, trust=trust)
    servicer = EmbeddingServicer(deps, trust=trust)
    server.add_service(SERVICE_NAME, pb_grpc.add_EmbeddingServiceServicer_to_server, servicer)
    await server.start()
    return server, servicer


async def ready(server: GrpcServer, servicer: EmbeddingServicer, deps: EmbeddingDeps) -> None:
    """Embed the probe through the engine, attach it, then report SERVING."""
    info = await deps.engine.warm_up()
    servicer.attach(deps)
    await server.set_serving(True)
    _log.info("ready", extra={"fields": {"model": info.name, "dim": info.dim}})


async def run_until_signalled() -> None:
    """Process entry point: bind, load the model off the loop, warm up, serve until SIGTERM."""
    telemetry_settings = TelemetrySettings.from_env("embedding")
    configure_logging("embedding", telemetry_settings.log_level)
    server_settings = ServerSettings.from_env("embedding", DEFAULT_PORT)
    settings = EmbeddingSettings.from_env()
    trust = Trust.from_env("embedding")
    telemetry = Telemetry(telemetry_settings)
    server = GrpcServer(server_settings, telemetry, trust=trust)
    servicer = EmbeddingServicer(trust=trust)
    server.add_service(SERVICE_NAME, pb_grpc.add_EmbeddingServiceServicer_to_server, servicer)
    engines: list[EmbeddingEngine] = []

    async def load() -> None:
        model = await asyncio.to_thread(Embedder.from_settings, settings)
        engine = create_engine(
            settings, model, tracer=telemetry.tracer("tandem.embedding"), metrics=telemetry.metrics
        )
        engines.append(engine)
        await ready(server, servicer, EmbeddingDeps(engine))

    async def close() -> None:
        for engine in engines:
            await engine.close()

    await serve(server, on_start=load, on_stop=close)
