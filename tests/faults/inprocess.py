"""The whole stack in one process for fault tests that need to see inside each hop:
every GrpcServer started while ``recording_hops`` is active gets a runtime interceptor
that records, per call, the method, the remaining deadline it arrived with and how the
handler ended (ok, cancelled, aborted) — and can delay a method to script a slow
dependency. Fixtures here are imported by the test modules that use them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

import services.common._server as runtime_server
from gateway import GatewaySettings
from services.common import RuntimeInterceptor, embedded_server_url
from services.embedding import Embedder
from tests.conftest import TelemetrySink
from tests.integration.gateway.stack import Gateway, start_gateway, start_router, start_sql
from tests.integration.retrieval.stack import new_tenant, start_embedding, start_retrieval

__all__ = [
    "Hop",
    "HopLog",
    "Stack",
    "hops",
    "pg_url",
    "recorded",
    "stack",
    "start_stack",
]


@dataclass
class Hop:
    """One call as a server saw it."""

    method: str
    remaining: float | None
    arrived: float
    outcome: str = "running"
    ended: float | None = None

    @property
    def deadline(self) -> float | None:
        """The absolute (monotonic) deadline the call arrived with."""
        return None if self.remaining is None else self.arrived + self.remaining

    @property
    def service(self) -> str:
        return self.method.split("/")[1].split(".")[-1]


@dataclass
class HopLog:
    hops: list[Hop] = field(default_factory=list)
    delays: dict[str, float] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, hop: Hop) -> None:
        self.hops.append(hop)
        self._touch()

    def _touch(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def finished(self, hop: Hop, outcome: str) -> None:
        hop.outcome = outcome
        hop.ended = time.monotonic()
        self._touch()

    def of(self, service: str) -> list[Hop]:
        return [hop for hop in self.hops if hop.service == service]

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> None:
        """Wait (bounded) until ``predicate`` holds over the log."""
        async with asyncio.timeout(timeout_s):
            while not predicate():
                await self.changed.wait()

    def clear(self) -> None:
        self.hops.clear()


def _recording_interceptor(log: HopLog) -> type[RuntimeInterceptor]:
    class Recording(RuntimeInterceptor):
        async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
            handler = await super().intercept_service(continuation, handler_call_details)
            method: str = handler_call_details.method
            if handler is None or not method.startswith("/tandem."):
                return handler

            def enter(context: Any) -> Hop:
                hop = Hop(method, context.time_remaining(), time.monotonic())
                log.add(hop)
                return hop

            async def delay() -> None:
                seconds = log.delays.get(method.rsplit("/", 1)[1], log.delays.get(method))
                if seconds:
                    await asyncio.sleep(seconds)

            def outcome(exc: BaseException, context: Any) -> str:
                if isinstance(exc, asyncio.CancelledError):
                    return "cancelled"
                code = context.code()
                return f"aborted:{code.name}" if isinstance(code, grpc.StatusCode) else "error"

            if handler.unary_unary or handler.stream_unary:
                inner = handler.unary_unary or handler.stream_unary
                assert inner is not None

                async def unary(request: Any, context: Any) -> Any:
                    hop = enter(context)
                    try:
                        await delay()
                        reply = await inner(request, context)
                    except BaseException as exc:
                        log.finished(hop, outcome(exc, context))
                        raise
                    log.finished(hop, "ok")
                    return reply

                make = (
                    grpc.unary_unary_rpc_method_handler
                    if handler.unary_unary
                    else grpc.stream_unary_rpc_method_handler
                )
                return make(unary, handler.request_deserializer, handler.response_serializer)

            inner_stream: Any = handler.unary_stream or handler.stream_stream

            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                hop = enter(context)
                try:
                    await delay()
                    async for item in inner_stream(request, context):
                        yield item
                except BaseException as exc:
                    log.finished(hop, outcome(exc, context))
                    raise
                log.finished(hop, "ok")

            make_stream = (
                grpc.unary_stream_rpc_method_handler
                if handler.unary_stream
                else grpc.stream_stream_rpc_method_handler
            )
            return make_stream(stream, handler.request_deserializer, handler.response_serializer)

    return Recording


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> Iterator[HopLog]:
    """Servers started while this fixture is active record every call into the log."""
    log = HopLog()
    monkeypatch.setattr(runtime_server, "RuntimeInterceptor", _recording_interceptor(log))
    yield log


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private embedded Postgres for this session's in-process fault tests."""
    return embedded_server_url(tmp_path_factory.mktemp("tandem-faults"))


@dataclass
class Stack:
    """The gateway over the real router, retrieval, SQL and embedding servers."""

    gateway: Gateway
    pg_url: str
    tenant: str
    key: str
    addresses: dict[str, str]
    gateway_settings: GatewaySettings

    @property
    def stub(self) -> Any:
        return self.gateway.stub

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.key}"),)


async def start_stack(
    exit_stack: AsyncExitStack,
    pg_url: str,
    embedder: Embedder,
    settings: GatewaySettings | None = None,
) -> Stack:
    sinks = {n: TelemetrySink(n) for n in ("embedding", "retrieval", "sql", "router", "gateway")}
    for sink in sinks.values():
        exit_stack.callback(sink.telemetry.shutdown)
    embedding = await start_embedding(embedder, sinks["embedding"].telemetry)
    exit_stack.push_async_callback(embedding.close)
    retrieval = await start_retrieval(
        pg_url, embedding.server.address, sinks["retrieval"].telemetry
    )
    exit_stack.push_async_callback(retrieval.close)
    sql = await start_sql(pg_url, sinks["sql"].telemetry)
    exit_stack.push_async_callback(sql.close)
    router = await start_router(retrieval.server.address, sql.address, sinks["router"].telemetry)
    exit_stack.push_async_callback(router.close)
    gateway = await start_gateway(
        pg_url,
        sinks["gateway"].telemetry,
        router_addr=router.address,
        retrieval_addr=retrieval.server.address,
        sql_addr=sql.address,
        settings=settings,
    )
    exit_stack.push_async_callback(gateway.close)
    tenant = new_tenant(pg_url, "fault")
    key = await gateway.key(tenant)
    addresses = {
        "embedding": embedding.server.address,
        "retrieval": retrieval.server.address,
        "sql": sql.address,
        "router": router.address,
        "gateway": gateway.address,
    }
    return Stack(gateway, pg_url, tenant, key, addresses, settings or GatewaySettings())


@pytest.fixture
async def stack(pg_url: str, real_embedder: Embedder) -> AsyncIterator[Stack]:
    """A fresh in-process stack with its own tenant and key."""
    async with AsyncExitStack() as exit_stack:
        yield await start_stack(exit_stack, pg_url, real_embedder)


@pytest.fixture
async def recorded(
    hops: HopLog, pg_url: str, real_embedder: Embedder
) -> AsyncIterator[tuple[Stack, HopLog]]:
    """A fresh in-process stack whose every server records into ``hops``."""
    async with AsyncExitStack() as exit_stack:
        yield await start_stack(exit_stack, pg_url, real_embedder), hops
