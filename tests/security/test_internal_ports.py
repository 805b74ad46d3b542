"""The internal services from the attacker's side, on the real processes.

Every RPC of every internal service (walked from the protos) is called the ways an
attacker inside the network could: plaintext, TLS without a certificate, a certificate
from another CA, a certificate of an identity that may not call the service, and an
allowed identity with no tenant token, a forged one, or one signed for another tenant.
Each is refused before a handler runs; the gateway's own credentials with the right
tenant are the positive control that the refusals are not an accident of the setup.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import MethodDescriptor

from services.common import (
    CALLERS,
    TENANT_TOKEN_HEADER,
    Credentials,
    TenantSigner,
    create_channel,
    ensure_directory,
    load_credentials,
)
from tandem.v1 import (  # noqa: F401  (registers every service in the default pool)
    embedding_service_pb2,
    retrieval_service_pb2,
    router_service_pb2,
    sql_service_pb2,
)
from tandem.v1 import sql_service_pb2 as spb
from tandem.v1 import sql_service_pb2_grpc as spb_grpc
from tests.processes import ProcessStack
from tests.security.corpora.stacks import error_details

pytestmark = pytest.mark.e2e

SERVICE_OF = {
    "tandem.v1.RouterService": "router",
    "tandem.v1.RetrievalService": "retrieval",
    "tandem.v1.SqlService": "sql",
    "tandem.v1.EmbeddingService": "embedding",
}
VICTIM = "acme-victim"
ATTACKER = "mallory"
TIMEOUT_S = 10.0


def _methods() -> list[MethodDescriptor]:
    pool = descriptor_pool.Default()
    return [method for name in SERVICE_OF for method in pool.FindServiceByName(name).methods]


def _request(method: MethodDescriptor) -> Any:
    message = message_factory.GetMessageClass(method.input_type)()
    if "tenant_id" in method.input_type.fields_by_name:
        setattr(message, "tenant_id", VICTIM)  # noqa: B010  (a field only some messages have)
    return message


async def _call(
    channel: grpc.aio.Channel, method: MethodDescriptor, metadata: tuple[tuple[str, str], ...]
) -> grpc.StatusCode:
    """The status the call ends with (OK when it answered)."""
    path = f"/{method.containing_service.full_name}/{method.name}"
    response = message_factory.GetMessageClass(method.output_type)
    request = _request(method)
    try:
        if method.server_streaming:
            call = channel.unary_stream(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response.FromString,
            )
            async for _ in call(request, metadata=metadata, timeout=TIMEOUT_S):
                pass
        else:
            unary = channel.unary_unary(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response.FromString,
            )
            await unary(request, metadata=metadata, timeout=TIMEOUT_S)
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


@dataclass
class Attack:
    """One way of calling: the channel credentials to present and the metadata to send."""

    name: str
    credentials: Callable[[Credentials], grpc.ChannelCredentials | None]
    metadata: tuple[tuple[str, str], ...] = ()


def _tls(ca: bytes, key: bytes | None = None, cert: bytes | None = None) -> Any:
    return grpc.ssl_channel_credentials(ca, key, cert)


@pytest.fixture(scope="module")
def outsider(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another CA with the same identities: well-formed, but not the deployment's."""
    directory = tmp_path_factory.mktemp("other-ca")
    ensure_directory(directory)
    return directory


def _open(address: str, peer: str, credentials: grpc.ChannelCredentials | None) -> Any:
    if credentials is None:
        return grpc.aio.insecure_channel(address)
    return grpc.aio.secure_channel(
        address, credentials, options=[("grpc.ssl_target_name_override", peer)]
    )


async def _codes(stack: ProcessStack, attack: Attack, identity: str) -> dict[str, grpc.StatusCode]:
    ours = load_credentials(stack.tls_dir, identity)
    codes: dict[str, grpc.StatusCode] = {}
    channels: dict[str, grpc.aio.Channel] = {}
    try:
        for method in _methods():
            peer = SERVICE_OF[method.containing_service.full_name]
            if peer not in channels:
                channels[peer] = _open(stack.address(peer), peer, attack.credentials(ours))
            codes[method.full_name] = await _call(channels[peer], method, attack.metadata)
    finally:
        for channel in channels.values():
            await channel.close()
    return codes


@pytest.fixture(scope="module")
def signer(process_stack: ProcessStack) -> TenantSigner:
    return TenantSigner(load_credentials(process_stack.tls_dir, "gateway").key)


async def test_without_a_certificate_of_the_deployment_no_internal_rpc_answers(
    process_stack: ProcessStack, outsider: Path, signer: TenantSigner
) -> None:
    token = ((TENANT_TOKEN_HEADER, signer.token(VICTIM)),)
    stranger = load_credentials(outsider, "gateway")
    attacks = [
        Attack("plaintext", lambda _: None, token),
        Attack("TLS without a client certificate", lambda ours: _tls(ours.ca), token),
        Attack(
            "another CA's gateway certificate",
            lambda ours: _tls(ours.ca, stranger.key, stranger.cert),
            token,
        ),
    ]
    assert len(_methods()) >= 18  # every RPC of the four internal services today
    for attack in attacks:
        codes = await _codes(process_stack, attack, "gateway")
        # The handshake fails: nothing reaches a handler, the caller sees UNAVAILABLE.
        assert set(codes.values()) == {grpc.StatusCode.UNAVAILABLE}, (attack.name, codes)


async def test_a_certified_identity_calls_only_the_services_it_may(
    process_stack: ProcessStack, signer: TenantSigner
) -> None:
    token = ((TENANT_TOKEN_HEADER, signer.token(VICTIM)),)
    for identity in ("gateway", "router", "retrieval", "sql", "embedding", "supervisor"):
        attack = Attack(f"as {identity}", lambda ours: _tls(ours.ca, ours.key, ours.cert), token)
        codes = await _codes(process_stack, attack, identity)
        for method, code in codes.items():
            service = method.rsplit(".", 1)[0]
            if identity in CALLERS[service]:
                assert code != grpc.StatusCode.PERMISSION_DENIED, (identity, method, code)
                assert code != grpc.StatusCode.UNAUTHENTICATED, (identity, method, code)
            else:
                assert code == grpc.StatusCode.PERMISSION_DENIED, (identity, method, code)


async def test_a_valid_certificate_never_picks_the_tenant(
    process_stack: ProcessStack, outsider: Path, signer: TenantSigner
) -> None:
    forger = TenantSigner(load_credentials(outsider, "gateway").key)
    tenant_field = [m for m in _methods() if "tenant_id" in m.input_type.fields_by_name]
    assert {m.containing_service.name for m in tenant_field} == {
        "RouterService",
        "RetrievalService",
        "SqlService",
    }
    cases = {
        "no tenant token": ((), grpc.StatusCode.UNAUTHENTICATED),
        "a token another CA's gateway signed": (
            ((TENANT_TOKEN_HEADER, forger.token(VICTIM)),),
            grpc.StatusCode.UNAUTHENTICATED,
        ),
        "a token for another tenant": (
            ((TENANT_TOKEN_HEADER, signer.token(ATTACKER)),),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        "a tampered token": (
            ((TENANT_TOKEN_HEADER, signer.token(VICTIM)[:-4] + "AAAA"),),
            grpc.StatusCode.UNAUTHENTICATED,
        ),
    }
    for identity in ("router", "gateway"):
        for case, (metadata, expected) in cases.items():
            attack = Attack(case, lambda ours: _tls(ours.ca, ours.key, ours.cert), metadata)
            codes = await _codes(process_stack, attack, identity)
            for method in tenant_field:
                service = method.containing_service.full_name
                if identity in CALLERS[service]:
                    assert codes[method.full_name] == expected, (identity, case, method.name)


@pytest.fixture
async def sql_as(process_stack: ProcessStack) -> AsyncIterator[Callable[[str], Any]]:
    channels: list[grpc.aio.Channel] = []

    def open_as(identity: str) -> spb_grpc.SqlServiceAsyncStub:
        trust = process_stack.trust(identity)
        channel = create_channel(process_stack.address("sql"), trust=trust, peer="sql")
        channels.append(channel)
        return spb_grpc.SqlServiceStub(channel)

    yield open_as
    for channel in channels:
        await channel.close()


async def test_the_issues_reproduction_reads_nothing_and_the_gateways_own_call_answers(
    process_stack: ProcessStack, sql_as: Callable[[str], Any], signer: TenantSigner
) -> None:
    """``ExecuteSql(tenant_id=victim)`` straight on the SQL port: refused as the router
    with the attacker's token and without one; answered only with the victim's token."""
    request = spb.ExecuteSqlRequest(tenant_id=VICTIM, sql="SELECT 1 AS one")
    router = sql_as("router")
    for metadata, code, reason in (
        ((), grpc.StatusCode.UNAUTHENTICATED, "TENANT_TOKEN_MISSING"),
        (
            ((TENANT_TOKEN_HEADER, signer.token(ATTACKER)),),
            grpc.StatusCode.PERMISSION_DENIED,
            "TENANT_MISMATCH",
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await router.ExecuteSql(request, metadata=metadata, timeout=TIMEOUT_S)
        details = error_details(refused.value)
        assert (details.code, details.reason) == (code, reason)
    reply = await sql_as("gateway").ExecuteSql(
        request, metadata=((TENANT_TOKEN_HEADER, signer.token(VICTIM)),), timeout=TIMEOUT_S
    )
    assert len(reply.result.rows) == 1 and [c.name for c in reply.result.columns] == ["one"]
