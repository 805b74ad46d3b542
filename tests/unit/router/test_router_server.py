"""A bug in the router's own code is INTERNAL with the fixed message on both RPCs, its
text never sent (the documented INTERNAL of RouterService). A real provider cannot be
made to have a bug, so the planner here is a plain fake of our own LLM interface; the
router's real server answers on loopback, its engines unreachable (never called)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from services.common import create_channel
from services.common._errors import INTERNAL_MESSAGE
from services.common.llm import PlanRequest
from services.router import RouterSettings
from services.router._server import build_deps, create_server, ready
from services.router.offline import DeterministicProvider
from tandem.v1 import router_service_pb2 as pb
from tandem.v1 import router_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings

COMPOUND = "How many opportunities are there, and summarize the onboarding call notes?"


class _Broken(DeterministicProvider):
    """A planner with a bug whose message holds private details."""

    async def plan(self, request: PlanRequest) -> Any:
        raise RuntimeError("a bug with private details: SELECT secret")


async def test_bugs_are_internal_and_sanitised(telemetry_sink: Any) -> None:
    settings = RouterSettings(retrieval_addr="127.0.0.1:1", sql_addr="127.0.0.1:1")
    telemetry = telemetry_sink("router").telemetry
    deps = build_deps(settings, telemetry, llm=_Broken())
    server, servicer = await create_server(server_settings("router"), telemetry, settings)
    try:
        await ready(server, servicer, deps)
        async with create_channel(server.address) as channel:
            stub = pb_grpc.RouterServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as unary:
                await stub.Ask(pb.AskRequest(tenant_id="acme", question=COMPOUND), timeout=20)
            stream = stub.StreamAsk(
                pb.StreamAskRequest(tenant_id="acme", question=COMPOUND), timeout=20
            )
            with pytest.raises(grpc.aio.AioRpcError) as streamed:
                async for _ in stream:
                    pass
    finally:
        await server.stop(0)
        await deps.close()
    for caught in (unary, streamed):
        assert caught.value.code() == grpc.StatusCode.INTERNAL
        assert caught.value.details() == INTERNAL_MESSAGE
        assert "secret" not in str(caught.value.trailing_metadata())
