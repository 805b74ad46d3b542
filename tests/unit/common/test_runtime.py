"""The shared gRPC runtime on real loopback servers: errors, deadlines, health, tracing."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from opentelemetry import trace

from services.common import (
    GrpcServer,
    InvalidArgument,
    JsonFormatter,
    Unavailable,
    create_channel,
    remaining,
)
from services.common._errors import INTERNAL_MESSAGE
from tests.conftest import server_settings

SERVICE = "tandem.test.ProbeService"
Handler = Callable[[bytes, grpc.aio.ServicerContext[Any, Any]], Awaitable[bytes]]


def _identity(data: bytes) -> bytes:
    return data


def probe_server(telemetry: Any, handlers: dict[str, Handler], **settings: Any) -> GrpcServer:
    """A real GrpcServer with raw-bytes handlers: the runtime under test, no protos needed."""
    server = GrpcServer(server_settings("probe", **settings), telemetry)
    generic = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            name: grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=_identity, response_serializer=_identity
            )
            for name, fn in handlers.items()
        },
    )

    def register(_servicer: object, srv: grpc.aio.Server) -> None:
        srv.add_generic_rpc_handlers((generic,))

    server.add_service(SERVICE, register, None)
    return server


def call(channel: grpc.aio.Channel, name: str) -> Any:
    return channel.unary_unary(
        f"/{SERVICE}/{name}", request_serializer=_identity, response_deserializer=_identity
    )


async def _server_spans(sink: Any, suffix: str) -> list[Any]:
    """The server's finished spans of a method. The server ends its span after the reply
    has left, so the client can be back first: wait (bounded) for the span to finish."""
    for _ in range(500):
        spans = [s for s in sink.spans.get_finished_spans() if s.name.endswith(suffix)]
        if spans:
            return spans
        await asyncio.sleep(0.01)
    return []


async def test_unexpected_error_is_internal_with_sanitised_message_and_error_span(
    telemetry_sink, grpc_servers
):
    sink = telemetry_sink("probe")

    async def boom(request: bytes, context: Any) -> bytes:
        raise RuntimeError("secret customer text must not leak")

    server = probe_server(sink.telemetry, {"Boom": boom})
    grpc_servers.append(server)
    port = await server.start()
    async with create_channel(f"127.0.0.1:{port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(channel, "Boom")(b"x", timeout=5)
    trailers = dict(err.value.trailing_metadata() or ())
    assert len(trailers["x-trace-id"]) == 32
    assert err.value.code() == grpc.StatusCode.INTERNAL
    assert err.value.details() == INTERNAL_MESSAGE
    assert "secret" not in (err.value.details() or "")
    spans = await _server_spans(sink, "/Boom")
    assert len(spans) == 1
    assert spans[0].status.status_code == trace.StatusCode.ERROR
    assert any(e.name == "exception" for e in spans[0].events)


async def test_validation_error_is_invalid_argument_with_bad_request_naming_the_field(
    telemetry_sink, grpc_servers
):
    async def invalid(request: bytes, context: Any) -> bytes:
        raise InvalidArgument.field("texts[2]", "must not be empty")

    server = probe_server(telemetry_sink().telemetry, {"Invalid": invalid})
    grpc_servers.append(server)
    port = await server.start()
    async with create_channel(f"127.0.0.1:{port}") as channel:
        rpc = call(channel, "Invalid")(b"x", timeout=5)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await rpc
        status = await rpc_status.aio.from_call(rpc)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert status is not None
    bad = error_details_pb2.BadRequest()
    assert any(d.Unpack(bad) for d in status.details if d.Is(bad.DESCRIPTOR))
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("texts[2]", "must not be empty")
    ]


async def test_unavailable_carries_retry_info(telemetry_sink, grpc_servers):
    async def down(request: bytes, context: Any) -> bytes:
        raise Unavailable("dependency down", retry_after_s=2.5)

    server = probe_server(telemetry_sink().telemetry, {"Down": down})
    grpc_servers.append(server)
    port = await server.start()
    # A plain channel: the retrying one would turn one call into three attempts.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        rpc = call(channel, "Down")(b"x", timeout=5)
        with pytest.raises(grpc.aio.AioRpcError):
            await rpc
        status = await rpc_status.aio.from_call(rpc)
    info = error_details_pb2.RetryInfo()
    assert status is not None
    assert any(d.Unpack(info) for d in status.details if d.Is(info.DESCRIPTOR))
    assert info.retry_delay.ToMilliseconds() == 2500


async def test_health_is_not_serving_until_ready(telemetry_sink, grpc_servers):
    async def ok(request: bytes, context: Any) -> bytes:
        return request

    server = probe_server(telemetry_sink().telemetry, {"Ok": ok})
    grpc_servers.append(server)
    port = await server.start()
    async with create_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE):
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
        await server.set_serving(True)
        for name in ("", SERVICE):
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_service_health_follows_its_dependencies_while_the_process_stays_live(
    telemetry_sink, grpc_servers
):
    async def ok(request: bytes, context: Any) -> bytes:
        return request

    database_up = True

    async def database() -> bool:
        return database_up

    async def broken() -> bool:
        raise OSError("a check that raises counts as down")

    server = probe_server(telemetry_sink().telemetry, {"Ok": ok})
    grpc_servers.append(server)
    port = await server.start()
    await server.set_serving(True)

    async def statuses(stub: Any) -> tuple[int, int]:
        replies = [
            await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            for name in ("", SERVICE)
        ]
        return replies[0].status, replies[1].status

    async def settle(stub: Any, wanted: tuple[int, int]) -> tuple[int, int]:
        for _ in range(200):
            got = await statuses(stub)
            if got == wanted:
                return got
            await asyncio.sleep(0.01)
        return got

    serving, not_serving = (
        health_pb2.HealthCheckResponse.SERVING,
        health_pb2.HealthCheckResponse.NOT_SERVING,
    )
    server.watch_dependencies({"postgres": database}, interval_s=0.02)
    async with create_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        assert await settle(stub, (serving, serving)) == (serving, serving)
        database_up = False
        assert await settle(stub, (serving, not_serving)) == (serving, not_serving)
        assert server.unavailable_dependencies == {"postgres"}
        database_up = True
        assert await settle(stub, (serving, serving)) == (serving, serving)
        with pytest.raises(RuntimeError, match="already watched"):
            server.watch_dependencies({"other": broken})


async def test_a_check_that_raises_or_hangs_marks_its_dependency_down(telemetry_sink, grpc_servers):
    async def broken() -> bool:
        raise OSError("unreachable")

    async def hung() -> bool:
        await asyncio.Event().wait()
        return True

    server = probe_server(telemetry_sink().telemetry, {})
    grpc_servers.append(server)
    await server.start()
    await server.set_serving(True)
    server.watch_dependencies({"embedding": broken, "postgres": hung}, interval_s=0.02)
    for _ in range(300):
        if len(server.unavailable_dependencies) == 2:
            break
        await asyncio.sleep(0.01)
    assert server.unavailable_dependencies == {"embedding", "postgres"}


async def test_client_trace_id_appears_in_server_span(telemetry_sink, grpc_servers):
    server_sink, client_sink = telemetry_sink("server"), telemetry_sink("client")

    async def ok(request: bytes, context: Any) -> bytes:
        return request

    server = probe_server(server_sink.telemetry, {"Ok": ok})
    grpc_servers.append(server)
    port = await server.start()
    tracer = client_sink.telemetry.tracer("test")
    channel = create_channel(
        f"127.0.0.1:{port}", interceptors=client_sink.telemetry.client_interceptors()
    )
    async with channel:
        with tracer.start_as_current_span("client-root") as root:
            rpc = call(channel, "Ok")(b"x", timeout=5)
            await rpc
            trace_id = root.get_span_context().trace_id
        returned = dict(await rpc.trailing_metadata())["x-trace-id"]
    assert returned == format(trace_id, "032x")
    server_spans = await _server_spans(server_sink, "/Ok")
    assert len(server_spans) == 1
    assert server_spans[0].context.trace_id == trace_id
    assert server_spans[0].kind == trace.SpanKind.SERVER


async def test_deadline_propagates_to_downstream_call(telemetry_sink, grpc_servers):
    seen: dict[str, float] = {}

    async def leaf(request: bytes, context: Any) -> bytes:
        seen["leaf"] = context.time_remaining()
        return request

    leaf_server = probe_server(telemetry_sink().telemetry, {"Leaf": leaf})
    grpc_servers.append(leaf_server)
    leaf_port = await leaf_server.start()
    downstream = create_channel(f"127.0.0.1:{leaf_port}")

    async def hop(request: bytes, context: Any) -> bytes:
        seen["hop"] = context.time_remaining()
        seen["hop_contextvar"] = remaining() or -1.0
        await asyncio.sleep(0.2)
        # No timeout passed here: the runtime gives the call what is left of ours.
        return await call(downstream, "Leaf")(request)  # type: ignore[no-any-return]

    hop_server = probe_server(telemetry_sink().telemetry, {"Hop": hop})
    grpc_servers.append(hop_server)
    hop_port = await hop_server.start()
    async with create_channel(f"127.0.0.1:{hop_port}") as channel:
        await call(channel, "Hop")(b"x", timeout=3.0)
    await downstream.close()
    # The hop runs under the client's deadline (not the server's 30 s default), and the
    # runtime's scope holds that same deadline: two readings of it at the same moment.
    # (gRPC sends the timeout rounded up to its wire units, so allow a little over 3 s.)
    assert 0 < seen["hop"] <= 3.1
    assert abs(seen["hop_contextvar"] - seen["hop"]) < 0.1
    # The leaf gets what is left after the hop's 0.2 s of work, not a fresh budget.
    assert seen["leaf"] < seen["hop"] - 0.15


async def test_call_without_deadline_gets_the_default_and_is_cut_off(telemetry_sink, grpc_servers):
    cancelled = asyncio.Event()

    async def slow(request: bytes, context: Any) -> bytes:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return request

    server = probe_server(telemetry_sink().telemetry, {"Slow": slow}, default_deadline_s=0.3)
    grpc_servers.append(server)
    port = await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(channel, "Slow")(b"x")
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert cancelled.is_set()


async def test_channel_retries_unavailable_but_not_invalid_argument(telemetry_sink, grpc_servers):
    attempts = {"Flaky": 0, "Bad": 0}

    async def flaky(request: bytes, context: Any) -> bytes:
        attempts["Flaky"] += 1
        if attempts["Flaky"] <= 2:
            raise Unavailable("warming up", retry_after_s=0.01)
        return b"ok"

    async def bad(request: bytes, context: Any) -> bytes:
        attempts["Bad"] += 1
        raise InvalidArgument.field("question", "must not be empty")

    server = probe_server(telemetry_sink().telemetry, {"Flaky": flaky, "Bad": bad})
    grpc_servers.append(server)
    port = await server.start()
    async with create_channel(f"127.0.0.1:{port}") as channel:
        assert await call(channel, "Flaky")(b"x", timeout=5) == b"ok"
        with pytest.raises(grpc.aio.AioRpcError):
            await call(channel, "Bad")(b"x", timeout=5)
    assert attempts == {"Flaky": 3, "Bad": 1}


async def test_access_log_is_json_with_trace_id_and_no_payload(
    telemetry_sink, grpc_servers, caplog
):
    sink = telemetry_sink("probe")
    lines: list[str] = []
    formatter = JsonFormatter("probe")

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(formatter.format(record))

    handler = Capture()
    logging.getLogger("tandem.rpc").addHandler(handler)
    logging.getLogger("tandem.rpc").setLevel(logging.INFO)

    async def ok(request: bytes, context: Any) -> bytes:
        return b"answer text"

    server = probe_server(sink.telemetry, {"Ok": ok})
    grpc_servers.append(server)
    port = await server.start()
    try:
        async with create_channel(f"127.0.0.1:{port}") as channel:
            await call(channel, "Ok")(b"private question text", timeout=5)
    finally:
        logging.getLogger("tandem.rpc").removeHandler(handler)
    entries = [json.loads(line) for line in lines]
    access = [e for e in entries if e.get("rpc.method") == f"/{SERVICE}/Ok"]
    assert len(access) == 1
    assert access[0]["rpc.code"] == "OK"
    assert len(access[0]["trace_id"]) == 32
    assert all("private" not in line and "answer" not in line for line in lines)


async def test_rpc_latency_histogram_by_method_and_code(telemetry_sink, grpc_servers):
    sink = telemetry_sink("probe")

    async def ok(request: bytes, context: Any) -> bytes:
        return request

    async def bad(request: bytes, context: Any) -> bytes:
        raise InvalidArgument.field("question", "must not be empty")

    server = probe_server(sink.telemetry, {"Ok": ok, "Bad": bad})
    grpc_servers.append(server)
    port = await server.start()
    async with create_channel(f"127.0.0.1:{port}") as channel:
        await call(channel, "Ok")(b"x", timeout=5)
        await call(channel, "Ok")(b"x", timeout=5)
        with pytest.raises(grpc.aio.AioRpcError):
            await call(channel, "Bad")(b"x", timeout=5)
    expected = {
        (f"/{SERVICE}/Ok", "OK"): 2,
        (f"/{SERVICE}/Bad", "INVALID_ARGUMENT"): 1,
    }
    points: dict[tuple[Any, Any], int] = {}
    for _ in range(500):  # the server records a call after its reply has left
        data = sink.metrics.get_metrics_data()
        points = {
            (p.attributes["rpc.method"], p.attributes["rpc.code"]): p.count
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == "tandem.rpc.server.duration"
            for p in m.data.data_points
        }
        if sum(points.values()) >= sum(expected.values()):
            break
        await asyncio.sleep(0.01)
    assert points == expected
