"""The internal services from the attacker's side, on the real processes.

Every RPC of every internal service (walked from the protos) is called the ways an
attacker inside the network could: plaintext, TLS without a certificate, a certificate
from another CA, a certificate of an identity that may not call the service, and an
allowed identity with no tenant token, a forged one, or one signed for another tenant.
Each is refused before a handler runs, and each refusal is checked for its reason (the
server's handshake error in its log, the ErrorInfo reason of a guard's refusal), never
by its status code alone: UNAVAILABLE is also what a port nobody listens on answers. In
every test an allowed caller is served by the same servers, with the same requests where
they are valid, as the positive control that the refusals are not an accident of the
setup.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
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
# Who may call whom, written out by hand from the README ("Zero trust inside"), never
# read from the production mapping: a widened or narrowed CALLERS fails here.
PINNED_CALLERS = {
    "tandem.v1.RouterService": {"gateway"},
    "tandem.v1.RetrievalService": {"gateway", "router"},
    "tandem.v1.SqlService": {"gateway", "router"},
    "tandem.v1.EmbeddingService": {"retrieval", "sql"},
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


@dataclass(frozen=True)
class Outcome:
    """How a call ended: its status, the ErrorInfo reason and BadRequest fields of a
    refusal, the status message, and the reply when it answered."""

    code: grpc.StatusCode
    reason: str = ""
    fields: tuple[str, ...] = ()
    message: str = ""
    replies: list[Any] = field(default_factory=list)

    def served(self) -> bool:
        """Reached the handler: answered, or refused by the handler's own validation
        naming a field of the (empty) request, never by the guard in front of it."""
        return self.code == grpc.StatusCode.OK or (
            self.code == grpc.StatusCode.INVALID_ARGUMENT
            and bool(self.fields)
            and self.reason not in GUARD_REASONS
        )


# Every reason the guard in front of the handlers refuses with (services.common._mtls).
GUARD_REASONS = frozenset(
    {
        "PEER_CERTIFICATE_MISSING",
        "CALLER_NOT_ALLOWED",
        "TENANT_MISMATCH",
        "TENANT_TOKEN_MISSING",
        "TENANT_TOKEN_INVALID",
        "TENANT_TOKEN_EXPIRED",
    }
)


async def _call(
    channel: grpc.aio.Channel,
    method: MethodDescriptor,
    metadata: tuple[tuple[str, str], ...],
    request: Any = None,
) -> Outcome:
    """How the call ends (OK with its replies when it answered)."""
    path = f"/{method.containing_service.full_name}/{method.name}"
    response = message_factory.GetMessageClass(method.output_type)
    request = _request(method) if request is None else request
    replies: list[Any] = []
    try:
        if method.server_streaming:
            call = channel.unary_stream(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response.FromString,
            )
            async for reply in call(request, metadata=metadata, timeout=TIMEOUT_S):
                replies.append(reply)
        else:
            unary = channel.unary_unary(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=response.FromString,
            )
            replies.append(await unary(request, metadata=metadata, timeout=TIMEOUT_S))
    except grpc.aio.AioRpcError as exc:
        found = error_details(exc)
        return Outcome(found.code, found.reason, tuple(found.fields), found.message)
    return Outcome(grpc.StatusCode.OK, replies=replies)


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


async def _outcomes(
    stack: ProcessStack,
    attack: Attack,
    identity: str,
    requests: dict[str, Any] | None = None,
) -> dict[str, Outcome]:
    """Every internal RPC called as ``attack`` says (with the empty request, or the one
    ``requests`` gives by full method name)."""
    ours = load_credentials(stack.tls_dir, identity)
    outcomes: dict[str, Outcome] = {}
    channels: dict[str, grpc.aio.Channel] = {}
    try:
        for method in _methods():
            peer = SERVICE_OF[method.containing_service.full_name]
            if peer not in channels:
                channels[peer] = _open(stack.address(peer), peer, attack.credentials(ours))
            request = (requests or {}).get(method.full_name)
            outcomes[method.full_name] = await _call(
                channels[peer], method, attack.metadata, request
            )
    finally:
        for channel in channels.values():
            await channel.close()
    return outcomes


def _certified(ours: Credentials) -> Any:
    return _tls(ours.ca, ours.key, ours.cert)


# One valid request per internal service: the positive control, answered in full.
QUESTION = "How many companies are there?"


def _valid_requests() -> dict[str, Any]:
    return {
        "tandem.v1.RouterService.Ask": router_service_pb2.AskRequest(
            tenant_id=VICTIM, question=QUESTION
        ),
        "tandem.v1.RetrievalService.ListDocuments": retrieval_service_pb2.ListDocumentsRequest(
            tenant_id=VICTIM
        ),
        "tandem.v1.SqlService.DescribeSchema": spb.DescribeSchemaRequest(tenant_id=VICTIM),
        "tandem.v1.EmbeddingService.GetModelInfo": embedding_service_pb2.GetModelInfoRequest(),
    }


def _assert_answered(method: str, outcome: Outcome) -> None:
    """The control's reply is a real answer of that service, not merely no error."""
    assert outcome.code == grpc.StatusCode.OK, (method, outcome)
    (reply,) = outcome.replies
    if method.endswith("RouterService.Ask"):
        assert reply.answer.text and reply.answer.citations, reply
    elif method.endswith("SqlService.DescribeSchema"):
        assert "companies" in {t.name for t in reply.tables}, reply
    elif method.endswith("EmbeddingService.GetModelInfo"):
        assert (reply.model_name, reply.dimension) != ("", 0), reply
    else:
        assert method.endswith("RetrievalService.ListDocuments"), method


async def _served_as(stack: ProcessStack, identity: str, token: str) -> None:
    """The positive control: ``identity`` with the deployment's certificate and a token
    the gateway signed is answered by each service it may call."""
    attack = Attack(f"as {identity}", _certified, ((TENANT_TOKEN_HEADER, token),))
    outcomes = await _outcomes(stack, attack, identity, _valid_requests())
    for method in _valid_requests():
        if identity in PINNED_CALLERS[method.rsplit(".", 1)[0]]:
            _assert_answered(method, outcomes[method])


class Logs:
    """What the services write to their logs from now on (the handshake's refusals are
    logged by the server, the only side that knows why it hung up)."""

    def __init__(self, stack: ProcessStack) -> None:
        self._stack = stack
        self._start = {p: stack.log_path(p).stat().st_size for p in SERVICE_OF.values()}

    def new(self, peer: str) -> str:
        with self._stack.log_path(peer).open("rb") as log:
            log.seek(self._start[peer])
            return log.read().decode("utf-8", errors="replace")

    async def wait_for(self, peer: str, text: str, count: int) -> list[str]:
        """The new lines of ``peer``'s log naming ``text``, once there are ``count``."""
        for _ in range(100):
            found = [line for line in self.new(peer).splitlines() if text in line]
            if len(found) >= count:
                return found
            await asyncio.sleep(0.05)
        return found


@pytest.fixture(scope="module")
def signer(process_stack: ProcessStack) -> TenantSigner:
    return TenantSigner(load_credentials(process_stack.tls_dir, "gateway").key)


# What the server logs when it refuses each handshake (BoringSSL's error, via gRPC core).
HANDSHAKE_REFUSALS = {
    "plaintext": "WRONG_VERSION_NUMBER",
    "TLS without a client certificate": "PEER_DID_NOT_RETURN_A_CERTIFICATE",
    "another CA's gateway certificate": "certificate signature failure",
}


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
        logs = Logs(process_stack)
        outcomes = await _outcomes(process_stack, attack, "gateway")
        # The handshake fails: nothing reaches a handler, the caller sees UNAVAILABLE
        # because the server hung up on it (a port nobody listens on refuses the
        # connection instead) ...
        for method, outcome in outcomes.items():
            assert outcome.code == grpc.StatusCode.UNAVAILABLE, (attack.name, method, outcome)
            assert "Connection refused" not in outcome.message, (attack.name, method, outcome)
        # ... and every server says why in its log.
        for peer in SERVICE_OF.values():
            reason = HANDSHAKE_REFUSALS[attack.name]
            assert await logs.wait_for(peer, reason, 1), (attack.name, peer, logs.new(peer))
    # The positive control: the same servers answer the deployment's own callers.
    for identity in ("gateway", "retrieval"):
        await _served_as(process_stack, identity, signer.token(VICTIM))


async def test_a_certified_identity_calls_only_the_services_it_may(
    process_stack: ProcessStack, signer: TenantSigner
) -> None:
    assert {service: set(callers) for service, callers in CALLERS.items()} == PINNED_CALLERS
    token = ((TENANT_TOKEN_HEADER, signer.token(VICTIM)),)
    for identity in ("gateway", "router", "retrieval", "sql", "embedding", "supervisor"):
        attack = Attack(f"as {identity}", _certified, token)
        outcomes = await _outcomes(process_stack, attack, identity)
        for method, outcome in outcomes.items():
            service = method.rsplit(".", 1)[0]
            if identity in PINNED_CALLERS[service]:
                # Past the guard: the handler answers or names the empty request's field.
                assert outcome.served(), (identity, method, outcome)
            else:
                assert (outcome.code, outcome.reason) == (
                    grpc.StatusCode.PERMISSION_DENIED,
                    "CALLER_NOT_ALLOWED",
                ), (identity, method, outcome)
                assert outcome.message == f"the {identity!r} identity may not call {service}"
        # The positive control: each service this identity may call answers it in full.
        await _served_as(process_stack, identity, signer.token(VICTIM))


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
    unauthenticated, denied = grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED
    cases = {
        "no tenant token": ((), (unauthenticated, "TENANT_TOKEN_MISSING")),
        "a token another CA's gateway signed": (
            ((TENANT_TOKEN_HEADER, forger.token(VICTIM)),),
            (unauthenticated, "TENANT_TOKEN_INVALID"),
        ),
        "a token for another tenant": (
            ((TENANT_TOKEN_HEADER, signer.token(ATTACKER)),),
            (denied, "TENANT_MISMATCH"),
        ),
        "a tampered token": (
            ((TENANT_TOKEN_HEADER, signer.token(VICTIM)[:-4] + "AAAA"),),
            (unauthenticated, "TENANT_TOKEN_INVALID"),
        ),
    }
    valid = _valid_requests()
    for identity in ("router", "gateway"):
        may_call = [
            m for m in tenant_field if identity in PINNED_CALLERS[m.containing_service.full_name]
        ]
        assert may_call
        for case, (metadata, expected) in cases.items():
            attack = Attack(case, _certified, metadata)
            outcomes = await _outcomes(process_stack, attack, identity, valid)
            for method in may_call:
                found = outcomes[method.full_name]
                assert (found.code, found.reason) == expected, (identity, case, method.name, found)
        # The positive control, same identity, same requests: the victim's own token is
        # served, and the valid requests answered in full.
        right = Attack(
            "the victim's token", _certified, ((TENANT_TOKEN_HEADER, signer.token(VICTIM)),)
        )
        outcomes = await _outcomes(process_stack, right, identity, valid)
        for method in may_call:
            assert outcomes[method.full_name].served(), (identity, method.name)
            if method.full_name in valid:
                _assert_answered(method.full_name, outcomes[method.full_name])


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
