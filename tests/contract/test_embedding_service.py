"""EmbeddingService through its generated stubs: every RPC, every documented error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import numpy as np
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from services.common import (
    GrpcServer,
    Principal,
    Trust,
    create_channel,
    current_token,
    ensure_directory,
)
from services.embedding import EmbeddingEngine, EmbeddingLimits, MicroBatcher, QueryCache
from services.embedding._server import EmbeddingDeps, create_server, ready
from tandem.v1 import embedding_service_pb2 as pb
from tandem.v1 import embedding_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings

EMBED = "tandem.v1.EmbeddingService/Embed"
INFO = "tandem.v1.EmbeddingService/GetModelInfo"


@dataclass
class Running:
    server: GrpcServer
    stub: pb_grpc.EmbeddingServiceStub
    engine: EmbeddingEngine
    health: health_pb2_grpc.HealthStub


@pytest.fixture
async def running(real_embedder, telemetry_sink, channel_to) -> AsyncIterator[Running]:
    engine = EmbeddingEngine(
        model=real_embedder,
        cache=QueryCache(100, 60),
        batcher=MicroBatcher(real_embedder, max_wait_s=0.002, max_batch=64),
        limits=EmbeddingLimits(max_batch=4, max_text_chars=50, max_batch_chars=120),
    )
    server, servicer = await create_server(server_settings("embedding"), telemetry_sink().telemetry)
    await ready(server, servicer, EmbeddingDeps(engine=engine))
    channel = channel_to(server.address)
    yield Running(
        server, pb_grpc.EmbeddingServiceStub(channel), engine, health_pb2_grpc.HealthStub(channel)
    )
    await server.stop(0)
    await engine.close()


async def _error(call) -> tuple[grpc.StatusCode, error_details_pb2.BadRequest, dict[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    status = await rpc_status.aio.from_call(call)
    bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
    for detail in status.details if status else []:
        if detail.Is(bad.DESCRIPTOR):
            detail.Unpack(bad)
        elif detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
    return err.value.code(), bad, {"reason": info.reason, **dict(info.metadata)}


@pytest.mark.rpc(EMBED)
async def test_embed_queries_and_passages(running):
    for input_type in (pb.INPUT_TYPE_QUERY, pb.INPUT_TYPE_PASSAGE):
        reply = await running.stub.Embed(
            pb.EmbedRequest(texts=["renewal risk", "pricing call"], input_type=input_type),
            timeout=10,
        )
        assert reply.dimension == 384
        assert reply.model_name == running.engine.model_info().name
        vectors = np.array([e.values for e in reply.embeddings])
        assert vectors.shape == (2, 384)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


@pytest.mark.rpc(EMBED)
async def test_embed_query_cache_hit_is_reported(running):
    request = pb.EmbedRequest(texts=["healthcare accounts"], input_type=pb.INPUT_TYPE_QUERY)
    first = await running.stub.Embed(request, timeout=10)
    calls_before = running.engine.stats().batcher.batches
    second = await running.stub.Embed(request, timeout=10)
    assert (first.cache_hits, second.cache_hits) == (0, 1)
    assert running.engine.stats().batcher.batches == calls_before
    assert list(first.embeddings[0].values) == list(second.embeddings[0].values)


@pytest.mark.rpc(EMBED)
async def test_the_query_cache_is_the_tokens_tenants_alone(real_embedder, telemetry_sink, tmp_path):
    """Over mutual TLS as deployed: whose cache serves a call is the tenant its forwarded
    token names. Another tenant's cached phrase is a miss; a call without a token is
    served without the cache."""
    ensure_directory(tmp_path)
    engine = EmbeddingEngine(
        model=real_embedder,
        cache=QueryCache(100, 60),
        batcher=MicroBatcher(real_embedder, max_wait_s=0.002, max_batch=8),
    )
    server, servicer = await create_server(
        server_settings("embedding"),
        telemetry_sink().telemetry,
        trust=Trust.load(tmp_path, "embedding"),
    )
    signer = Trust.load(tmp_path, "gateway").signer
    assert signer is not None
    channel = create_channel(
        server.address, trust=Trust.load(tmp_path, "retrieval"), peer="embedding"
    )
    stub = pb_grpc.EmbeddingServiceStub(channel)
    request = pb.EmbedRequest(texts=["confidential merger"], input_type=pb.INPUT_TYPE_QUERY)

    async def hits(tenant: str | None, principal: str = "") -> int:
        token = current_token.set(
            signer.token(tenant, "/tandem.v1.RetrievalService/Search", principal)
            if tenant
            else None
        )
        try:
            return (await stub.Embed(request, timeout=10)).cache_hits
        finally:
            current_token.reset(token)

    alice = Principal.of("alice", ["hr"]).canonical()
    bob = Principal.of("bob", ["sales"]).canonical()
    try:
        await ready(server, servicer, EmbeddingDeps(engine=engine))
        assert [await hits("victim"), await hits("victim")] == [0, 1]
        assert [await hits("attacker"), await hits("attacker")] == [0, 1]
        assert [await hits(None), await hits(None)] == [0, 0]
        # Inside a tenant, one person's searches never warm another's (issue 47).
        assert [await hits("victim", alice), await hits("victim", alice)] == [0, 1]
        assert [await hits("victim", bob), await hits("victim", bob)] == [0, 1]
    finally:
        await channel.close()
        await server.stop(0)
        await engine.close()


@pytest.mark.rpc(EMBED)
@pytest.mark.parametrize(
    ("texts", "input_type", "field", "reason"),
    [
        ([], pb.INPUT_TYPE_QUERY, "texts", None),
        (["a", "b", "c", "d", "e"], pb.INPUT_TYPE_QUERY, "texts", "BATCH_TOO_LARGE"),
        (["x" * 40, "y" * 40, "z" * 45], pb.INPUT_TYPE_PASSAGE, "texts", "BATCH_TOO_LARGE"),
        (["ok", "   "], pb.INPUT_TYPE_QUERY, "texts[1]", "EMPTY_TEXT"),
        (["ok", ""], pb.INPUT_TYPE_PASSAGE, "texts[1]", "EMPTY_TEXT"),
        (["x" * 51], pb.INPUT_TYPE_QUERY, "texts[0]", "TEXT_TOO_LONG"),
        (["fine"], pb.INPUT_TYPE_UNSPECIFIED, "input_type", None),
    ],
)
async def test_embed_invalid_argument_names_the_field(running, texts, input_type, field, reason):
    call = running.stub.Embed(pb.EmbedRequest(texts=texts, input_type=input_type), timeout=10)
    code, bad, info = await _error(call)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in bad.field_violations] == [field]
    if reason:
        assert info["reason"] == reason


@pytest.mark.rpc(EMBED)
async def test_embed_model_mismatch_is_failed_precondition(running):
    call = running.stub.Embed(
        pb.EmbedRequest(
            texts=["q"], input_type=pb.INPUT_TYPE_QUERY, expected_model_name="other/model"
        ),
        timeout=10,
    )
    code, _, info = await _error(call)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert info["reason"] == "MODEL_MISMATCH"


@pytest.mark.rpc(INFO)
async def test_get_model_info(running):
    reply = await running.stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=10)
    assert (reply.dimension, reply.max_batch_size, reply.max_text_chars) == (384, 4, 50)
    assert reply.max_batch_chars == 120
    assert reply.model_name == running.engine.model_info().name
    assert reply.source == pb.MODEL_SOURCE_LOCAL_DIRECTORY
    assert reply.normalized
    assert reply.query_cache_capacity == 100
    assert reply.query_cache_ttl.seconds == 60
    assert reply.query_cache_capacity_per_tenant == 100


@pytest.mark.rpc(EMBED)
@pytest.mark.rpc(INFO)
async def test_not_ready_is_unavailable_and_health_flips_only_after_warm_up(
    real_embedder, telemetry_sink, channel_to
):
    server, servicer = await create_server(server_settings("embedding"), telemetry_sink().telemetry)
    try:
        channel = channel_to(server.address)
        stub, health = pb_grpc.EmbeddingServiceStub(channel), health_pb2_grpc.HealthStub(channel)
        check = health_pb2.HealthCheckRequest(service="tandem.v1.EmbeddingService")
        assert (
            await health.Check(check, timeout=5)
        ).status == health_pb2.HealthCheckResponse.NOT_SERVING
        for call in (
            stub.Embed(pb.EmbedRequest(texts=["q"], input_type=pb.INPUT_TYPE_QUERY), timeout=5),
            stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=5),
        ):
            code, _, info = await _error(call)
            assert (code, info["reason"]) == (grpc.StatusCode.UNAVAILABLE, "MODEL_NOT_READY")
        engine = EmbeddingEngine(
            model=real_embedder,
            cache=QueryCache(10, 60),
            batcher=MicroBatcher(real_embedder, max_wait_s=0.002, max_batch=8),
        )
        await ready(server, servicer, EmbeddingDeps(engine=engine))
        assert engine.stats().batcher.texts >= 1  # the probe really ran through the model
        assert (
            await health.Check(check, timeout=5)
        ).status == health_pb2.HealthCheckResponse.SERVING
        reply = await stub.Embed(pb.EmbedRequest(texts=["q"], input_type=pb.INPUT_TYPE_QUERY))
        assert reply.dimension == 384
        await engine.close()
    finally:
        await server.stop(0)
