"""A real grpc.aio server whose calls take a planned time and fail on a planned schedule."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from tandem.v1 import embedding_service_pb2 as embedding_pb
from tandem.v1 import retrieval_service_pb2 as retrieval_pb

Context = grpc.aio.ServicerContext[Any, Any]


@dataclass
class PlannedServer:
    """``delay_for(n)`` seconds for the n-th call (0-based); every ``fail_every``-th fails;
    with ``hold``, every call waits until it is set. ``held_s``: how long the server itself
    spent on each answered call (same clock as the driver's, in the same process)."""

    delay_for: Callable[[int], float] = lambda _n: 0.0
    fail_every: int = 0
    stream_messages: int = 3
    hold: asyncio.Event | None = None
    calls: int = 0
    texts: list[str] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)
    held_s: list[float] = field(default_factory=list)
    address: str = ""

    async def _planned(self, context: Context) -> None:
        number = self.calls
        self.calls += 1
        self.metadata.append({k: str(v) for k, v in context.invocation_metadata() or ()})
        if self.hold is not None:
            await self.hold.wait()
        await asyncio.sleep(self.delay_for(number))
        if self.fail_every and (number + 1) % self.fail_every == 0:
            await context.abort(grpc.StatusCode.INTERNAL, "planned failure")

    async def get_model_info(
        self, request: embedding_pb.GetModelInfoRequest, context: Context
    ) -> embedding_pb.GetModelInfoResponse:
        began = time.perf_counter()
        await self._planned(context)
        self.held_s.append(time.perf_counter() - began)
        return embedding_pb.GetModelInfoResponse(model_name="planned")

    async def embed(
        self, request: embedding_pb.EmbedRequest, context: Context
    ) -> embedding_pb.EmbedResponse:
        self.texts.extend(request.texts)
        await self._planned(context)
        return embedding_pb.EmbedResponse()

    async def ingest(
        self, request: retrieval_pb.IngestDocumentsRequest, context: Context
    ) -> AsyncIterator[retrieval_pb.IngestDocumentsResponse]:
        began = time.perf_counter()
        await self._planned(context)
        for i in range(self.stream_messages):
            await asyncio.sleep(0.005)
            if i == self.stream_messages - 1:
                self.held_s.append(time.perf_counter() - began)
            yield retrieval_pb.IngestDocumentsResponse()


def _handlers(planned: PlannedServer) -> list[grpc.GenericRpcHandler]:
    embedding = grpc.method_handlers_generic_handler(
        "tandem.v1.EmbeddingService",
        {
            "GetModelInfo": grpc.unary_unary_rpc_method_handler(
                planned.get_model_info,
                request_deserializer=embedding_pb.GetModelInfoRequest.FromString,
                response_serializer=embedding_pb.GetModelInfoResponse.SerializeToString,
            ),
            "Embed": grpc.unary_unary_rpc_method_handler(
                planned.embed,
                request_deserializer=embedding_pb.EmbedRequest.FromString,
                response_serializer=embedding_pb.EmbedResponse.SerializeToString,
            ),
        },
    )
    retrieval = grpc.method_handlers_generic_handler(
        "tandem.v1.RetrievalService",
        {
            "IngestDocuments": grpc.unary_stream_rpc_method_handler(
                planned.ingest,
                request_deserializer=retrieval_pb.IngestDocumentsRequest.FromString,
                response_serializer=retrieval_pb.IngestDocumentsResponse.SerializeToString,
            ),
        },
    )
    return [embedding, retrieval]


@pytest.fixture
async def planned_server() -> AsyncIterator[Callable[..., Awaitable[PlannedServer]]]:
    """Starts ``PlannedServer``s on loopback port 0; all are stopped at teardown."""
    servers: list[grpc.aio.Server] = []

    async def start(**plan: object) -> PlannedServer:
        planned = PlannedServer(**plan)  # type: ignore[arg-type]
        server = grpc.aio.server()
        server.add_generic_rpc_handlers(_handlers(planned))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        planned.address = f"127.0.0.1:{port}"
        return planned

    yield start
    for server in servers:
        await server.stop(grace=None)
