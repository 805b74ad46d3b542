"""The internal services from the attacker's side, on the real processes.

Every RPC of every internal service (walked from the protos) is called the ways an
attacker inside the network could: plaintext, TLS without a certificate, a certificate
from another CA, a certificate of an identity that may not call the service, and an
allowed identity with no tenant token, a forged one, one signed for another tenant, or
one lifted from a call it was not issued for (a token is bound to the RPC the gateway
called and the calls that one makes onward). Each is refused before a handler runs, and
each refusal is checked for its reason (the server's handshake error in its log, the
ErrorInfo reason of a guard's refusal), never by its status code alone: UNAVAILABLE is
also what a port nobody listens on answers. In every test an allowed caller is served by
the same servers, with the same requests where they are valid, as the positive control
that the refusals are not an accident of the setup.
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
    Principal,
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
# Who may call whom, written out by hand from docs/security.md ("Zero trust inside"), never
# read from the production mapping: a widened or narrowed CALLERS fails here.
PINNED_CALLERS = {
    "tandem.v1.RouterService": {"gateway"},
    "tandem.v1.RetrievalService": {"gateway", "router"},
    "tandem.v1.SqlService": {"gateway", "router"},
    "tandem.v1.EmbeddingService": {"retrieval", "sql"},
}
# The tenant-scoped RPCs the router calls onward while answering an Ask, written out by
# hand from services.router._clients: the only ones a token forwarded to it opens.
PINNED_ROUTER_CALLS = {
    "tandem.v1.RetrievalService.Search",
    "tandem.v1.SqlService.AskQuestion",
    "tandem.v1.SqlService.ValidateSql",
}
ASK = "/tandem.v1.RouterService/Ask"
# For each identity, the entry RPC of a token it could hold legitimately: the gateway
# mints one per call (None: bound to the RPC called), the router holds the one its Ask
# arrived with, retrieval and SQL the one of their own RPC.
HELD_TOKEN_ENTRY: dict[str, str | None] = {
    "gateway": None,
    "router": ASK,
    "retrieval": "/tandem.v1.RetrievalService/Search",
    "sql": "/tandem.v1.SqlService/AskQuestion",
    "embedding": ASK,
    "supervisor": ASK,
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
        "TENANT_TOKEN_NOT_FOR_CALL",
        "PRINCIPAL_MISMATCH",
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
    """One way of calling: the channel credentials to present and the metadata to send
    (``token``: a tenant token per method path, sent after ``metadata``)."""

    name: str
    credentials: Callable[[Credentials], grpc.ChannelCredentials | None]
    metadata: tuple[tuple[str, str], ...] = ()
    token: Callable[[str], str] | None = None

    def metadata_for(self, path: str) -> tuple[tuple[str, str], ...]:
        if self.token is None:
            return self.metadata
        return (*self.metadata, (TENANT_TOKEN_HEADER, self.token(path)))


def held_token(signer: TenantSigner, identity: str, tenant: str = "") -> Callable[[str], str]:
    """The tenant token ``identity`` could hold legitimately, per method path it calls."""
    entry = HELD_TOKEN_ENTRY[identity]
    return lambda path: signer.token(tenant or VICTIM, entry or path)


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


def _tampered(token: Callable[[str], str]) -> Callable[[str], str]:
    return lambda path: token(path)[:-4] + "AAAA"


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
            path = f"/{method.containing_service.full_name}/{method.name}"
            outcomes[method.full_name] = await _call(
                channels[peer], method, attack.metadata_for(path), request
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
        "tandem.v1.RetrievalService.Search": retrieval_service_pb2.SearchRequest(
            tenant_id=VICTIM, query="companies"
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
        assert method.endswith(("RetrievalService.ListDocuments", "Search")), method


async def _served_as(stack: ProcessStack, identity: str, signer: TenantSigner) -> None:
    """The positive control: ``identity`` with the deployment's certificate and a token
    the gateway signed for a call that reaches it is answered by each service it may
    call (the router's Ask reaching retrieval and SQL with the token it forwards)."""
    attack = Attack(f"as {identity}", _certified, token=held_token(signer, identity))
    outcomes = await _outcomes(stack, attack, identity, _valid_requests())
    for method in _valid_requests():
        if identity == "router" and method not in PINNED_ROUTER_CALLS:
            continue
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
    token = held_token(signer, "gateway")
    stranger = load_credentials(outsider, "gateway")
    attacks = [
        Attack("plaintext", lambda _: None, token=token),
        Attack("TLS without a client certificate", lambda ours: _tls(ours.ca), token=token),
        Attack(
            "another CA's gateway certificate",
            lambda ours: _tls(ours.ca, stranger.key, stranger.cert),
            token=token,
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
        await _served_as(process_stack, identity, signer)


async def test_a_certified_identity_calls_only_the_services_it_may(
    process_stack: ProcessStack, signer: TenantSigner
) -> None:
    assert {service: set(callers) for service, callers in CALLERS.items()} == PINNED_CALLERS
    for identity in ("gateway", "router", "retrieval", "sql", "embedding", "supervisor"):
        attack = Attack(f"as {identity}", _certified, token=held_token(signer, identity))
        outcomes = await _outcomes(process_stack, attack, identity)
        for method, outcome in outcomes.items():
            service = method.rsplit(".", 1)[0]
            allowed = identity in PINNED_CALLERS[service]
            if allowed and identity == "router" and method not in PINNED_ROUTER_CALLS:
                # Its certificate may call the service, the token it holds not this RPC.
                assert (outcome.code, outcome.reason) == (
                    grpc.StatusCode.PERMISSION_DENIED,
                    "TENANT_TOKEN_NOT_FOR_CALL",
                ), (identity, method, outcome)
            elif allowed:
                # Past the guard: the handler answers or names the empty request's field.
                assert outcome.served(), (identity, method, outcome)
            else:
                assert (outcome.code, outcome.reason) == (
                    grpc.StatusCode.PERMISSION_DENIED,
                    "CALLER_NOT_ALLOWED",
                ), (identity, method, outcome)
                assert outcome.message == f"the {identity!r} identity may not call {service}"
        # The positive control: each service this identity may call answers it in full.
        await _served_as(process_stack, identity, signer)


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
    valid = _valid_requests()
    for identity in ("router", "gateway"):
        cases: dict[str, tuple[Callable[[str], str] | None, Any]] = {
            "no tenant token": (None, (unauthenticated, "TENANT_TOKEN_MISSING")),
            "a token another CA's gateway signed": (
                held_token(forger, identity),
                (unauthenticated, "TENANT_TOKEN_INVALID"),
            ),
            "a token for another tenant": (
                held_token(signer, identity, ATTACKER),
                (denied, "TENANT_MISMATCH"),
            ),
            "a tampered token": (
                _tampered(held_token(signer, identity)),
                (unauthenticated, "TENANT_TOKEN_INVALID"),
            ),
        }
        may_call = [
            m
            for m in tenant_field
            if identity in PINNED_CALLERS[m.containing_service.full_name]
            and (identity != "router" or m.full_name in PINNED_ROUTER_CALLS)
        ]
        assert may_call
        for case, (token, expected) in cases.items():
            attack = Attack(case, _certified, token=token)
            outcomes = await _outcomes(process_stack, attack, identity, valid)
            for method in may_call:
                found = outcomes[method.full_name]
                assert (found.code, found.reason) == expected, (identity, case, method.name, found)
        # The positive control, same identity, same requests: the victim's own token is
        # served, and the valid requests answered in full.
        right = Attack("the victim's token", _certified, token=held_token(signer, identity))
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
    execute = "/tandem.v1.SqlService/ExecuteSql"
    router = sql_as("router")
    for metadata, code, reason in (
        ((), grpc.StatusCode.UNAUTHENTICATED, "TENANT_TOKEN_MISSING"),
        (
            ((TENANT_TOKEN_HEADER, signer.token(ATTACKER, ASK)),),
            grpc.StatusCode.PERMISSION_DENIED,
            "TENANT_TOKEN_NOT_FOR_CALL",
        ),
        (
            ((TENANT_TOKEN_HEADER, signer.token(ATTACKER, execute)),),
            grpc.StatusCode.PERMISSION_DENIED,
            "TENANT_TOKEN_NOT_FOR_CALL",
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await router.ExecuteSql(request, metadata=metadata, timeout=TIMEOUT_S)
        details = error_details(refused.value)
        assert (details.code, details.reason) == (code, reason)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await sql_as("gateway").ExecuteSql(
            request,
            metadata=((TENANT_TOKEN_HEADER, signer.token(ATTACKER, execute)),),
            timeout=TIMEOUT_S,
        )
    assert error_details(refused.value).reason == "TENANT_MISMATCH"
    reply = await sql_as("gateway").ExecuteSql(
        request,
        metadata=((TENANT_TOKEN_HEADER, signer.token(VICTIM, execute)),),
        timeout=TIMEOUT_S,
    )
    assert len(reply.result.rows) == 1 and [c.name for c in reply.result.columns] == ["one"]


async def test_a_lifted_token_opens_only_what_the_call_it_came_with_could(
    process_stack: ProcessStack, signer: TenantSigner
) -> None:
    """Issue 46 item 9: the router's certificate and the token the gateway sent with a
    victim's Ask (what a compromised router holds) once opened every RPC of retrieval and
    SQL for the victim: deleting documents, ingesting, teaching, running any SQL. Now the
    token opens only the calls an Ask makes onward; the same token on a deletion, or a
    token lifted from another call, is refused before a handler runs."""
    ask = signer.token(VICTIM, ASK)
    search = signer.token(VICTIM, "/tandem.v1.RetrievalService/Search")
    doomed = retrieval_service_pb2.DeleteDocumentRequest(
        tenant_id=VICTIM, document_id="doc-1", allow_missing=True
    )
    lifted = {
        # (identity, token it presents, method, request)
        "the router deleting with an Ask's token": (
            "router", ask, "tandem.v1.RetrievalService.DeleteDocument", doomed,
        ),
        "the router ingesting with an Ask's token": (
            "router", ask, "tandem.v1.RetrievalService.IngestDocuments",
            retrieval_service_pb2.IngestDocumentsRequest(
                tenant_id=VICTIM,
                documents=[retrieval_service_pb2.DocumentInput(document_id="x", text="planted")],
            ),
        ),
        "the router teaching with an Ask's token": (
            "router", ask, "tandem.v1.SqlService.TeachSql",
            spb.TeachSqlRequest(tenant_id=VICTIM, question="q", sql="SELECT 1"),
        ),
        "the router running SQL with an Ask's token": (
            "router", ask, "tandem.v1.SqlService.ExecuteSql",
            spb.ExecuteSqlRequest(tenant_id=VICTIM, sql="SELECT 1"),
        ),
        "the router searching with the gateway's own Search token": (
            "router", search, "tandem.v1.RetrievalService.Search",
            retrieval_service_pb2.SearchRequest(tenant_id=VICTIM, query="q"),
        ),
        "the gateway's certificate deleting with an Ask's token": (
            "gateway", ask, "tandem.v1.RetrievalService.DeleteDocument", doomed,
        ),
    }  # fmt: skip
    pool = descriptor_pool.Default()
    for case, (identity, token, name, request) in lifted.items():
        method = pool.FindMethodByName(name)
        attack = Attack(case, _certified, ((TENANT_TOKEN_HEADER, token),))
        outcomes = await _outcomes(process_stack, attack, identity, {name: request})
        found = outcomes[name]
        assert (found.code, found.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "TENANT_TOKEN_NOT_FOR_CALL",
        ), (case, found)
        assert method.containing_service.full_name in {
            s for s, callers in PINNED_CALLERS.items() if identity in callers
        }, case  # the certificate alone would have been let through
    # The legitimate chain: the gateway's Ask reaches the router, whose Search and SQL
    # calls carry the token it forwards, and the answer cites the victim's documents;
    # the router's own onward calls with that token are served.
    asked = Attack("the gateway's Ask", _certified, token=held_token(signer, "gateway"))
    outcomes = await _outcomes(process_stack, asked, "gateway", _valid_requests())
    _assert_answered("tandem.v1.RouterService.Ask", outcomes["tandem.v1.RouterService.Ask"])
    forwarded = Attack("the router's onward calls", _certified, ((TENANT_TOKEN_HEADER, ask),))
    outcomes = await _outcomes(process_stack, forwarded, "router")
    for name in PINNED_ROUTER_CALLS:
        assert outcomes[name].served(), (name, outcomes[name])


async def test_principal_headers_must_be_the_principal_the_gateway_signed(
    process_stack: ProcessStack, signer: TenantSigner
) -> None:
    """Issue 47: the gateway signs the principal a call is made for into its tenant token;
    an internal service takes the principal from the headers only when they name exactly
    that one. A hop that swaps the person, drops the headers (to widen to the tenant's
    full view), adds some to a full-view token, or adds a group is refused before a
    handler runs, on every tenant-scoped RPC the gateway or the router may call."""
    alice = Principal.of("alice", {"sales"}, {"region": "EMEA"})
    bob = Principal.of("bob", {"sales"}, {"region": "EMEA"})
    wider = Principal.of("alice", {"sales", "hr"}, {"region": "EMEA"})
    valid = _valid_requests()
    for identity in ("gateway", "router"):
        entry = HELD_TOKEN_ENTRY[identity]

        def signed(principal: Principal | None, entry: str | None = entry) -> Any:
            canonical = "" if principal is None else principal.canonical()
            return lambda path: signer.token(VICTIM, entry or path, canonical)

        may_call = [
            m.full_name
            for m in _methods()
            if "tenant_id" in m.input_type.fields_by_name
            and identity in PINNED_CALLERS[m.containing_service.full_name]
            and (identity != "router" or m.full_name in PINNED_ROUTER_CALLS)
        ]
        assert may_call
        cases = {
            "another principal's headers": (signed(alice), bob.headers()),
            "the headers dropped": (signed(alice), ()),
            "headers added to a full-view token": (signed(None), alice.headers()),
            "a group added": (signed(alice), wider.headers()),
        }
        for case, (token, headers) in cases.items():
            attack = Attack(case, _certified, tuple(headers), token=token)
            outcomes = await _outcomes(process_stack, attack, identity, valid)
            for method in may_call:
                found = outcomes[method]
                assert (found.code, found.reason) == (
                    grpc.StatusCode.PERMISSION_DENIED,
                    "PRINCIPAL_MISMATCH",
                ), (identity, case, method, found)
        # The positive control: the signed principal's own headers (and a full-view token
        # without any) are served, the valid requests answered in full; so is the largest
        # principal the gateway admits (its headers and its token together stay under
        # gRPC's metadata limit on the internal hop).
        largest = Principal.of("p" * 256, {f"{i:03}" + "g" * 125 for i in range(12)},
                               {"region": "EMEA"})  # fmt: skip
        assert len(largest.canonical()) > 1800
        for token, headers in (
            (signed(alice), alice.headers()),
            (signed(None), ()),
            (signed(largest), largest.headers()),
        ):
            right = Attack("as signed", _certified, tuple(headers), token=token)
            outcomes = await _outcomes(process_stack, right, identity, valid)
            for method in may_call:
                assert outcomes[method].served(), (identity, method, outcomes[method])
                if method in valid:
                    _assert_answered(method, outcomes[method])
