"""A dead or silent collector never slows or fails a request, and shutdown stays bounded.

The real embedding service (real model, real gRPC on loopback) runs three times: with no
exporter, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` at a closed port, and at a port that
accepts TCP but never answers. Exports run often (50 ms batches, 100 ms metric
intervals) so they overlap the calls being timed.
"""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Iterator

import grpc
import pytest

from services.common import Telemetry, TelemetrySettings
from services.embedding import Embedder, EmbeddingEngine, MicroBatcher, QueryCache
from services.embedding._server import EmbeddingDeps, create_server, ready
from tandem.v1 import embedding_service_pb2 as pb
from tandem.v1 import embedding_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings

pytestmark = pytest.mark.integration

EXPORT_TIMEOUT_S = 1.0
CALLS = 40


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """Completes TCP handshakes (the kernel's backlog) but never reads or answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        yield sock.getsockname()[1]


async def _measure(embedder: Embedder, endpoint: str | None) -> tuple[list[float], float]:
    """Per-call latencies (s) of CALLS Embed RPCs, and how long telemetry shutdown took."""
    telemetry = Telemetry(
        TelemetrySettings("embedding", otlp_endpoint=endpoint, export_timeout_s=EXPORT_TIMEOUT_S)
    )
    engine = EmbeddingEngine(
        model=embedder,
        cache=QueryCache(0, 0),
        batcher=MicroBatcher(embedder, max_wait_s=0.001, max_batch=16),
        tracer=telemetry.tracer("tandem.embedding"),
        metrics=telemetry.metrics,
    )
    server, servicer = await create_server(server_settings("embedding"), telemetry)
    await ready(server, servicer, EmbeddingDeps(engine=engine))
    latencies: list[float] = []
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = pb_grpc.EmbeddingServiceStub(channel)
            request = pb.EmbedRequest(
                texts=["quarterly revenue by region"], input_type=pb.INPUT_TYPE_QUERY
            )
            await stub.Embed(request, timeout=10)  # warm the channel
            for _ in range(CALLS):
                started = time.perf_counter()
                reply = await stub.Embed(request, timeout=10)
                latencies.append(time.perf_counter() - started)
                assert reply.dimension == 384
    finally:
        await server.stop(0)
        await engine.close()
        started = time.perf_counter()
        telemetry.shutdown()
        shutdown_s = time.perf_counter() - started
    return latencies, shutdown_s


@pytest.mark.timeout(120)
async def test_a_dead_or_silent_collector_costs_requests_nothing(
    real_embedder: Embedder, closed_port: int, silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
    baseline, _ = await _measure(real_embedder, None)
    normal = statistics.median(baseline)
    for endpoint in (f"http://127.0.0.1:{closed_port}", f"http://127.0.0.1:{silent_port}"):
        latencies, shutdown_s = await _measure(real_embedder, endpoint)
        assert len(latencies) == CALLS, endpoint
        # generous: the same order as without an exporter, nowhere near an export timeout
        assert statistics.median(latencies) < normal * 3 + 0.02, (endpoint, normal, latencies)
        assert max(latencies) < EXPORT_TIMEOUT_S / 2, (endpoint, max(latencies))
        # spans and metrics flush side by side, bounded by the export timeout
        assert shutdown_s < EXPORT_TIMEOUT_S + 1.0, (endpoint, shutdown_s)
