"""Walks the service descriptors: every RPC of an implemented service has a contract test,
and reflection on a real server lists every v1 service."""

from __future__ import annotations

import ast
from pathlib import Path

from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from services.common import GrpcServer, create_channel
from services.rest import gateway_routes, rule_of
from tests.conftest import server_settings
from tests.contract._protos import rpc_names, services

HERE = Path(__file__).parent

# Services whose servers arrive with later issues. A service leaves this map in the
# change that implements it, and from then on every one of its RPCs needs a contract
# test; test_pending_services_are_not_implemented_yet keeps the map honest.
PENDING: dict[str, str] = {}
SERVICE_PACKAGES = {
    "tandem.v1.EmbeddingService": "services/embedding",
    "tandem.v1.RetrievalService": "services/retrieval",
    "tandem.v1.SqlService": "services/sql",
    "tandem.v1.RouterService": "services/router",
    "tandem.v1.GatewayService": "gateway",
}
ROOT = HERE.parents[1]
# The public service: every RPC of it is also served over HTTP/JSON (services.rest), at
# the path its google.api.http option binds; the internal services have no HTTP face.
PUBLIC_SERVICE = "tandem.v1.GatewayService"


def covered_rpcs() -> set[str]:
    """RPCs named by ``@pytest.mark.rpc(...)``: a string literal or a module constant."""
    covered: set[str] = set()
    for path in HERE.glob("test_*.py"):
        tree = ast.parse(path.read_text())
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "rpc"
                and node.args
            ):
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                covered.add(arg.value)
            elif isinstance(arg, ast.Name) and arg.id in constants:
                covered.add(constants[arg.id])
    return covered


def test_every_rpc_of_an_implemented_service_has_a_contract_test():
    required = {name for name in rpc_names() if name.split("/")[0] not in PENDING}
    missing = sorted(required - covered_rpcs())
    assert not missing, f"RPCs without a contract test (@pytest.mark.rpc): {missing}"


def test_every_public_rpc_has_an_http_binding_the_face_serves():
    """An RPC added without a google.api.http option would be missing from the HTTP face
    and its OpenAPI document; one with a binding the face cannot serve fails its start."""
    public = [m for s, _ in services() if s.full_name == PUBLIC_SERVICE for m in s.methods]
    missing = [m.full_name for m in public if rule_of(m) is None]
    assert not missing, f"RPCs without a google.api.http option: {missing}"
    routes = gateway_routes()  # RouteError for a binding the face cannot serve
    assert sorted(r.rpc.full_name for r in routes) == sorted(m.full_name for m in public)
    bound = [(r.verb, r.template) for r in routes]
    assert len(set(bound)) == len(bound), "two RPCs bound to one verb and path"


def test_internal_rpcs_have_no_http_binding():
    bound = [
        m.full_name
        for s, _ in services()
        if s.full_name != PUBLIC_SERVICE
        for m in s.methods
        if rule_of(m) is not None
    ]
    assert not bound, f"internal RPCs are reached through the gateway only: {bound}"


def test_contract_tests_name_only_real_rpcs():
    assert not sorted(covered_rpcs() - rpc_names())


def test_every_service_is_mapped_to_a_package():
    assert {s.full_name for s, _ in services()} == set(SERVICE_PACKAGES)


def test_pending_services_are_not_implemented_yet():
    implemented = [s for s in PENDING if (ROOT / SERVICE_PACKAGES[s] / "_server.py").exists()]
    assert not implemented, f"{implemented} have a server: remove them from PENDING"


def test_every_service_has_a_server_module():
    """A service is either implemented (a ``_server.py``) or explicitly PENDING."""
    missing = [
        s
        for s, package in SERVICE_PACKAGES.items()
        if s not in PENDING and not (ROOT / package / "_server.py").exists()
    ]
    assert not missing, f"{missing} have no _server.py and are not PENDING"


async def test_reflection_lists_every_v1_service(telemetry_sink, grpc_servers):
    server = GrpcServer(server_settings("all"), telemetry_sink().telemetry)
    for descriptor, grpc_module in services():
        name = descriptor.name
        base = getattr(grpc_module, f"{name}Servicer")()
        server.add_service(
            descriptor.full_name, getattr(grpc_module, f"add_{name}Servicer_to_server"), base
        )
    grpc_servers.append(server)
    port = await server.start()
    async with create_channel(f"127.0.0.1:{port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [reflection_pb2.ServerReflectionRequest(list_services="")]
        requests += [
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=s.full_name)
            for s, _ in services()
        ]
        replies = [reply async for reply in stub.ServerReflectionInfo(iter(requests), timeout=5)]
    listed = {s.name for s in replies[0].list_services_response.service}
    assert {s.full_name for s, _ in services()} <= listed
    assert {"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= listed
    for reply in replies[1:]:
        assert reply.file_descriptor_response.file_descriptor_proto, reply.error_response
