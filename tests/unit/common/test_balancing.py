"""Replicas behind one internal channel, on real loopback servers: ``create_channel`` over
a list of addresses spreads calls over every replica (round robin) and watches each one's
process-wide health (gRFC A17), so a replica that is starting or draining — NOT_SERVING —
gets no new calls while another serves, and gets them again once it is back."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from services.common import GrpcServer, create_channel
from tests.conftest import server_settings

SERVICE = "tandem.test.WhoService"


def _identity(data: bytes) -> bytes:
    return data


def _replica(name: str, telemetry: Any) -> GrpcServer:
    server = GrpcServer(server_settings(name), telemetry)

    def register(_servicer: object, grpc_server: grpc.aio.Server) -> None:
        async def who(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            return name.encode()

        grpc_server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICE,
                    {
                        "Who": grpc.unary_unary_rpc_method_handler(
                            who, request_deserializer=_identity, response_serializer=_identity
                        )
                    },
                ),
            )
        )

    server.add_service(SERVICE, register, None)
    return server


@pytest.fixture
async def replicas(
    grpc_servers, telemetry_sink
) -> AsyncIterator[tuple[dict[str, GrpcServer], grpc.aio.Channel]]:
    servers = {name: _replica(name, telemetry_sink(name).telemetry) for name in ("a", "b")}
    ports = []
    for server in servers.values():
        grpc_servers.append(server)
        ports.append(await server.start())
        await server.set_serving(True)
    channel = create_channel("ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports))
    async with channel:
        yield servers, channel


async def _answered_by(channel: grpc.aio.Channel, calls: int = 24) -> Counter[str]:
    who = channel.unary_unary(
        f"/{SERVICE}/Who", request_serializer=_identity, response_deserializer=_identity
    )
    seen: Counter[str] = Counter()
    for _ in range(calls):
        seen[(await who(b"", timeout=5)).decode()] += 1
    return seen


async def _settled(channel: grpc.aio.Channel, want: set[str]) -> Counter[str]:
    """Calls until the health watch has caught up (a status change reaches the client
    within milliseconds; a few rounds bound it), then the distribution of one round."""
    for _ in range(50):
        seen = await _answered_by(channel)
        if set(seen) == want:
            return seen
    return seen


async def test_calls_are_spread_over_every_replica(replicas):
    _, channel = replicas
    seen = await _settled(channel, {"a", "b"})
    assert set(seen) == {"a", "b"} and min(seen.values()) >= 8


async def test_a_draining_replica_gets_no_new_calls_until_it_serves_again(replicas):
    servers, channel = replicas
    await _settled(channel, {"a", "b"})
    await servers["b"].set_serving(False)  # what SIGTERM's drain and a start do first
    assert await _settled(channel, {"a"}) == Counter({"a": 24})
    # Every call of several more rounds too: not one slipped through to the drained one.
    for _ in range(3):
        assert await _answered_by(channel) == Counter({"a": 24})
    await servers["b"].set_serving(True)
    assert set(await _settled(channel, {"a", "b"})) == {"a", "b"}


async def test_a_stopped_replica_leaves_the_calls_to_the_other(replicas):
    servers, channel = replicas
    await _settled(channel, {"a", "b"})
    await servers["a"].server.stop(None)
    assert await _settled(channel, {"b"}) == Counter({"b": 24})


@pytest.mark.parametrize(
    ("target", "several"),
    [
        ("ipv4:127.0.0.1:1,127.0.0.1:2", True),
        ("dns:///router.tandem.svc.cluster.local:50052", True),  # a headless Service
        ("127.0.0.1:50052", False),
        ("ipv4:127.0.0.1:1", False),
        ("router:50052", False),  # compose: one container per name
    ],
)
def test_only_a_target_naming_replicas_is_health_checked(target: str, several: bool) -> None:
    from services.common._channels import names_replicas

    assert names_replicas(target) is several


async def test_one_replica_is_called_whatever_its_health(grpc_servers, telemetry_sink):
    # Nowhere else to send the call: a starting dependency answers for itself.
    server = _replica("only", telemetry_sink("only").telemetry)
    grpc_servers.append(server)
    port = await server.start()  # NOT_SERVING until set_serving
    async with create_channel(f"127.0.0.1:{port}") as channel:
        assert await _answered_by(channel, calls=3) == Counter({"only": 3})


def test_every_rpc_kept_from_retries_exists_in_the_contracts() -> None:
    from services.common._channels import NOT_RETRIED
    from tandem.v1 import router_service_pb2, sql_service_pb2

    files = (router_service_pb2.DESCRIPTOR, sql_service_pb2.DESCRIPTOR)
    methods = {
        (service.full_name, method.name)
        for file in files
        for service in file.services_by_name.values()
        for method in service.methods
    }
    assert methods >= NOT_RETRIED


async def test_unavailable_is_retried_except_for_what_a_repeat_would_change(
    grpc_servers, telemetry_sink
) -> None:
    # A server that answers UNAVAILABLE to everything, counting the tries per method.
    tries: Counter[str] = Counter()

    def register(_servicer: object, grpc_server: grpc.aio.Server) -> None:
        def handler(method: str) -> Any:
            async def unavailable(
                request: bytes, context: grpc.aio.ServicerContext[Any, Any]
            ) -> bytes:
                tries[method] += 1
                await context.abort(grpc.StatusCode.UNAVAILABLE, "draining")
                return b""

            return grpc.unary_unary_rpc_method_handler(
                unavailable, request_deserializer=_identity, response_serializer=_identity
            )

        grpc_server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "tandem.v1.SqlService",
                    {m: handler(m) for m in ("AskQuestion", "SubmitFeedback")},
                ),
            )
        )

    server = GrpcServer(server_settings("sql"), telemetry_sink("sql").telemetry)
    server.add_service("tandem.v1.SqlService", register, None)
    grpc_servers.append(server)
    port = await server.start()
    await server.set_serving(True)
    async with create_channel(f"127.0.0.1:{port}") as channel:
        for method in ("AskQuestion", "SubmitFeedback"):
            call = channel.unary_unary(
                f"/tandem.v1.SqlService/{method}",
                request_serializer=_identity,
                response_deserializer=_identity,
            )
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await call(b"", timeout=5)
            assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert tries == Counter({"AskQuestion": 3, "SubmitFeedback": 1})
