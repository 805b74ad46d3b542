"""The RouterService servicer (protobuf <-> router) and its server bootstrap."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import grpc

from services.common import (
    DeadlineExceeded,
    GrpcServer,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    Trust,
    Unavailable,
    configure_logging,
    create_channel,
    remaining,
    serve,
)
from services.common.llm import (
    LlmProvider,
    LlmSettings,
    create_provider,
)
from services.router import _convert as convert
from services.router._clients import GrpcSearchTool, GrpcSqlTool
from services.router._engine import Router
from services.router._settings import DEFAULT_PORT, RouterSettings
from services.router.offline import DeterministicProvider
from tandem.v1 import router_service_pb2 as pb
from tandem.v1 import router_service_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["RouterService"].full_name
_log = logging.getLogger("tandem.router")


@dataclass
class RouterDeps:
    """What the servicer needs: the router and what must be closed with it."""

    router: Router
    channels: list[grpc.aio.Channel] = field(default_factory=list)
    llm: LlmProvider | None = None

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()
        if self.llm is not None:
            await self.llm.aclose()


class RouterServicer(pb_grpc.RouterServiceServicer):
    """Thin: validates and converts the request, runs the router, converts the answer."""

    def __init__(self, settings: RouterSettings, deps: RouterDeps | None = None) -> None:
        self._settings = settings
        self._deps = deps

    def attach(self, deps: RouterDeps) -> None:
        self._deps = deps

    def _router(self) -> Router:
        if self._deps is None:
            raise Unavailable("the router is starting")
        return self._deps.router

    def _check_deadline(self) -> None:
        left = remaining()
        if left is not None and left < self._settings.min_deadline_s:
            raise DeadlineExceeded(
                "the deadline is too short to answer", reason="DEADLINE_TOO_SHORT"
            )

    async def Ask(
        self, request: pb.AskRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.AskResponse:
        router = self._router()
        ask = convert.ask_input(request, self._settings)
        self._check_deadline()
        await router.precheck(ask)
        request_id = uuid.uuid4().hex
        resolved = await router.follow_ups.resolve(ask.question, ask.history)
        resolution, took, usage = resolved.resolution, resolved.took_s, resolved.usage
        if not resolution.resolved:
            answer = convert.unresolved_answer(ask, request_id, resolution)
        else:
            standalone = replace(ask, question=resolution.question, builds_on=resolution.builds_on)
            result = await router.ask(standalone, request_id=request_id, checked=True)
            answer = convert.answer(result, ask.options.include_trajectory)
        return pb.AskResponse(
            answer=convert.with_conversation(answer, ask, resolution, took, usage)
        )

    async def StreamAsk(
        self, request: pb.StreamAskRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.StreamAskResponse]:
        started = time.monotonic()
        router = self._router()
        ask = convert.ask_input(request, self._settings)
        self._check_deadline()
        await router.precheck(ask)
        request_id = uuid.uuid4().hex
        queue: asyncio.Queue[pb.StreamAskResponse | None] = asyncio.Queue()

        def emit(item: Any) -> None:
            queue.put_nowait(convert.event(item, time.monotonic() - started))

        yield pb.StreamAskResponse(
            accepted=pb.AskAccepted(
                request_id=request_id,
                mode=convert.mode_pb(ask.mode),
                conversation_id=ask.conversation_id,
            ),
            elapsed=convert.elapsed(time.monotonic() - started),
        )
        resolved = await router.follow_ups.resolve(ask.question, ask.history)
        resolution, took, usage = resolved.resolution, resolved.took_s, resolved.usage
        if not resolution.resolved:
            answer = convert.unresolved_answer(ask, request_id, resolution)
            yield pb.StreamAskResponse(
                answer_delta=pb.AnswerDelta(text=answer.text),
                elapsed=convert.elapsed(time.monotonic() - started),
            )
            yield pb.StreamAskResponse(
                final_answer=convert.with_conversation(answer, ask, resolution, took, usage),
                elapsed=convert.elapsed(time.monotonic() - started),
            )
            return
        standalone = replace(ask, question=resolution.question, builds_on=resolution.builds_on)
        task = asyncio.create_task(
            router.ask(standalone, request_id=request_id, emit=emit, checked=True)
        )
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            result = await task
            answer = convert.answer(result, ask.options.include_trajectory)
            yield pb.StreamAskResponse(
                final_answer=convert.with_conversation(answer, ask, resolution, took, usage),
                elapsed=convert.elapsed(time.monotonic() - started),
            )
        finally:
            # The client went away or the deadline passed: stop every outstanding step.
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def create_server(
    settings: ServerSettings,
    telemetry: Telemetry,
    router_settings: RouterSettings | None = None,
    deps: RouterDeps | None = None,
    *,
    trust: Trust | None = None,
) -> tuple[GrpcServer, RouterServicer]:
    """Build and start the server NOT_SERVING; ``ready`` flips it once the router is wired."""
    server = GrpcServer(settings, telemetry, trust=trust)
    servicer = RouterServicer(router_settings or RouterSettings(), deps)
    server.add_service(SERVICE_NAME, pb_grpc.add_RouterServiceServicer_to_server, servicer)
    await server.start()
    return server, servicer


async def ready(server: GrpcServer, servicer: RouterServicer, deps: RouterDeps) -> None:
    """Attach the router, then report SERVING."""
    servicer.attach(deps)
    await server.set_serving(True)
    _log.info("ready", extra={"fields": {"port": server.port}})


def build_deps(
    settings: RouterSettings,
    telemetry: Telemetry,
    *,
    llm: LlmProvider | None = None,
    trust: Trust | None = None,
) -> RouterDeps:
    """Channels to both engines (mutual TLS with ``trust`` secure; they carry the tenant
    token each request arrived with) and the LLM provider (LLM_PROVIDER's model, else rules)."""
    interceptors = telemetry.client_interceptors()
    retrieval = create_channel(
        settings.retrieval_addr, interceptors=interceptors, trust=trust, peer="retrieval"
    )
    sql = create_channel(settings.sql_addr, interceptors=interceptors, trust=trust, peer="sql")
    llm_settings = LlmSettings.from_env()
    offline = DeterministicProvider()
    provider = llm or create_provider(
        llm_settings,
        offline=offline,
        tracer=telemetry.tracer("tandem.router.llm"),
        metrics=telemetry.metrics,
    )
    router = Router(
        settings,
        search=GrpcSearchTool(retrieval),
        sql=GrpcSqlTool(sql),
        llm=provider,
        offline=offline,
        tracer=telemetry.tracer("tandem.router"),
        meter=telemetry.meter("tandem.router"),
        observe=telemetry.metrics,
        prompt_guards=llm_settings.prompt_guards(),
    )
    return RouterDeps(router=router, channels=[retrieval, sql], llm=provider)


async def run_until_signalled() -> None:
    """Process entry point: bind, wire the engines' channels, serve until SIGTERM."""
    telemetry_settings = TelemetrySettings.from_env("router")
    configure_logging("router", telemetry_settings.log_level)
    server_settings = ServerSettings.from_env("router", DEFAULT_PORT)
    settings = RouterSettings.from_env()
    trust = Trust.from_env("router")
    telemetry = Telemetry(telemetry_settings)
    server = GrpcServer(server_settings, telemetry, trust=trust)
    servicer = RouterServicer(settings)
    server.add_service(SERVICE_NAME, pb_grpc.add_RouterServiceServicer_to_server, servicer)
    opened: list[RouterDeps] = []

    async def load() -> None:
        deps = build_deps(settings, telemetry, trust=trust)
        opened.append(deps)
        await ready(server, servicer, deps)

    async def close() -> None:
        for deps in opened:
            await deps.close()

    await serve(server, on_start=load, on_stop=close)
