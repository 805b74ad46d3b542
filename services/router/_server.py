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
    Unavailable,
    configure_logging,
    create_channel,
    remaining,
    serve,
)
from services.common.llm import (
    DETERMINISTIC_MODEL,
    FollowUpKind,
    FollowUpRewrite,
    LlmError,
    LlmProvider,
    LlmSettings,
    Resolution,
    ResolveFollowUpRequest,
    Usage,
    create_provider,
    resolve,
)
from services.router import _convert as convert
from services.router._clients import GrpcSearchTool, GrpcSqlTool
from services.router._engine import Router
from services.router._settings import DEFAULT_PORT, RouterSettings
from services.router._types import AskInput
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
        resolution, took, usage = await _resolve(ask, router)
        if not resolution.resolved:
            answer = convert.unresolved_answer(ask, request_id, resolution)
        else:
            result = await router.ask(
                replace(ask, question=resolution.question), request_id=request_id, checked=True
            )
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
        resolution, took, usage = await _resolve(ask, router)
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
        resolved = replace(ask, question=resolution.question)
        task = asyncio.create_task(
            router.ask(resolved, request_id=request_id, emit=emit, checked=True)
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


async def _resolve(ask: AskInput, router: Router) -> tuple[Resolution, float, Usage | None]:
    """The follow-up read as a standalone question, the time that took, and the model's
    usage when one proposed the rewrite. The span carries the kind, the source and sizes,
    never the question or its rewrite."""
    started = time.perf_counter()
    with router.tracer.start_as_current_span("router.resolve_follow_up") as span:
        resolution = resolve(ask.question, ask.history)
        source, usage = "rules", None
        if ask.history and router.llm.name != DETERMINISTIC_MODEL:
            try:
                result = await router.llm.resolve_follow_up(
                    ResolveFollowUpRequest(ask.question, ask.history)
                )
            except LlmError as exc:
                span.set_attribute("router.follow_up_model_error", exc.cause)
            else:
                usage = result.usage
                # A degraded result is the rules' own answer (the model failed twice).
                span.set_attribute("router.follow_up_model_degraded", result.degraded)
                if not result.degraded:
                    resolution, source = enforce(result.output, ask.question, resolution)
        span.set_attribute("router.follow_up_kind", resolution.kind.value)
        span.set_attribute("router.follow_up_source", source)
        span.set_attribute("router.history_turns", len(ask.history))
        span.set_attribute("router.resolved_question_chars", len(resolution.question))
    return resolution, time.perf_counter() - started, usage


def enforce(proposed: FollowUpRewrite, asked: str, rules: Resolution) -> tuple[Resolution, str]:
    """The model proposes, code enforces: a reference the rules proved points at nothing
    (an ordinal past the list's end, no list at all) stays unresolved whatever the model
    wrote; a standalone question is answered exactly as asked; an unknown kind or an empty
    rewrite falls back to the rules."""
    if rules.kind is FollowUpKind.UNRESOLVED:
        return rules, "rules"
    try:
        kind = FollowUpKind(proposed.kind)
    except ValueError:
        return rules, "rules"
    if kind is FollowUpKind.STANDALONE:
        return Resolution(kind, asked), "model"
    if kind is FollowUpKind.UNRESOLVED:
        reason = proposed.reason.strip()[:300] or "the conversation does not contain it"
        return Resolution(kind, asked, reason), "model"
    question = " ".join(proposed.question.split())
    if not question:
        return rules, "rules"
    return Resolution(kind, question), "model"


async def create_server(
    settings: ServerSettings,
    telemetry: Telemetry,
    router_settings: RouterSettings | None = None,
    deps: RouterDeps | None = None,
) -> tuple[GrpcServer, RouterServicer]:
    """Build and start the server NOT_SERVING; ``ready`` flips it once the router is wired."""
    server = GrpcServer(settings, telemetry)
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
) -> RouterDeps:
    """Channels to both engines and the LLM provider (Gemini when keyed, else rules)."""
    interceptors = telemetry.client_interceptors()
    retrieval = create_channel(settings.retrieval_addr, interceptors=interceptors)
    sql = create_channel(settings.sql_addr, interceptors=interceptors)
    llm_settings = LlmSettings.from_env()
    provider = llm or create_provider(
        llm_settings,
        tracer=telemetry.tracer("tandem.router.llm"),
        metrics=telemetry.metrics,
    )
    router = Router(
        settings,
        search=GrpcSearchTool(retrieval),
        sql=GrpcSqlTool(sql),
        llm=provider,
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
    telemetry = Telemetry(telemetry_settings)
    server = GrpcServer(server_settings, telemetry)
    servicer = RouterServicer(settings)
    server.add_service(SERVICE_NAME, pb_grpc.add_RouterServiceServicer_to_server, servicer)
    opened: list[RouterDeps] = []

    async def load() -> None:
        deps = build_deps(settings, telemetry)
        opened.append(deps)
        await ready(server, servicer, deps)

    async def close() -> None:
        for deps in opened:
            await deps.close()

    await serve(server, on_start=load, on_stop=close)
