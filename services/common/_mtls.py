"""Zero trust inside: mutual TLS between services, who may call whom, and signed tenants.

Every internal port accepts only callers presenting a certificate from the deployment's CA
(``services.common._pki``); the TLS handshake refuses anyone else before a byte of a
request is read. Past the handshake, the caller's identity (its certificate's common name)
must be one that may call the service (``CALLERS``), and a request that names a tenant
must carry a tenant token the gateway signed for that same tenant
(``services.common._tenant_token``): a valid certificate alone never picks a tenant.
The token is bound to the internal RPC the gateway called with it; it opens only that
call and the ones its handler makes onward (``ONWARD``), each by the identity that
serves the RPC before it, so a token lifted from one call (with the certificate of a
service it reached) does nothing the call it came with could not have done.

Plaintext is a development switch only (``TANDEM_INSECURE_INTERNAL=true``), logged loudly
at start; with neither it nor ``TANDEM_TLS_DIR`` set, a service refuses to start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from services.common._errors import PermissionDenied, Unauthenticated
from services.common._pki import Credentials, load_credentials
from services.common._principal import Principal, current_principal, parse_principal
from services.common._settings import Env, SettingsError
from services.common._tenant_token import (
    SIGNER_IDENTITY,
    TENANT_TOKEN_HEADER,
    Grant,
    TenantSigner,
    TenantVerifier,
    current_tenant,
    current_token,
    method_name,
)

_log = logging.getLogger("tandem.trust")

TLS_DIR_VARIABLE = "TANDEM_TLS_DIR"
PLAINTEXT_VARIABLE = "TANDEM_INSECURE_INTERNAL"

# Who may call each internal service, by certificate identity. The gateway calls the
# router, retrieval and SQL; the router calls retrieval and SQL; retrieval and SQL call
# the embedding service. Health and reflection answer any certified peer (probes).
CALLERS: Mapping[str, frozenset[str]] = {
    "tandem.v1.RouterService": frozenset({"gateway"}),
    "tandem.v1.RetrievalService": frozenset({"gateway", "router"}),
    "tandem.v1.SqlService": frozenset({"gateway", "router"}),
    "tandem.v1.EmbeddingService": frozenset({"retrieval", "sql"}),
}
_ANY_PEER = ("grpc.health.", "grpc.reflection.")

# The identity that serves each internal service: who makes a handler's onward calls.
SERVED_BY: Mapping[str, str] = {
    "tandem.v1.RouterService": "router",
    "tandem.v1.RetrievalService": "retrieval",
    "tandem.v1.SqlService": "sql",
    "tandem.v1.EmbeddingService": "embedding",
}
_ROUTER_CALLS = frozenset(
    {
        "tandem.v1.RetrievalService/Search",
        "tandem.v1.SqlService/AskQuestion",
        "tandem.v1.SqlService/ValidateSql",
    }
)
# The tenant-scoped RPCs each internal RPC's handler calls onward with the token it got
# (services.router._clients). RPCs not listed call none (the embedding service's are
# not tenant-scoped: its caller's certificate is their guard).
ONWARD: Mapping[str, frozenset[str]] = {
    "tandem.v1.RouterService/Ask": _ROUTER_CALLS,
    "tandem.v1.RouterService/StreamAsk": _ROUTER_CALLS,
}

Hop = tuple[str, str]


def reach(entry: str, onward: Mapping[str, frozenset[str]] = ONWARD) -> frozenset[Hop]:
    """Every (caller identity, RPC) a token bound to ``entry`` may be presented for: the
    gateway's call of ``entry``, then each onward call by the identity serving the RPC
    that makes it."""
    hops: set[Hop] = {(SIGNER_IDENTITY, entry)}
    pending = [entry]
    while pending:
        method = pending.pop()
        caller = SERVED_BY.get(method.split("/", 1)[0])
        for nxt in onward.get(method, frozenset()):
            if caller is not None and (caller, nxt) not in hops:
                hops.add((caller, nxt))
                pending.append(nxt)
    return frozenset(hops)


def tls_directory(environ: Mapping[str, str]) -> Path | None:
    """Where a local deployment keeps its CA and certificates: ``TANDEM_TLS_DIR``, else
    ``<TANDEM_DATA_DIR or .tandem>/tls``; None when the development switch turns mutual
    TLS off. ``tandem run`` issues into it; operator tools read it."""
    env = Env(environ)
    if env.get_bool(PLAINTEXT_VARIABLE, False):
        return None
    data_dir = Path(env.get_str("TANDEM_DATA_DIR", ".tandem"))
    return Path(env.get_str(TLS_DIR_VARIABLE, str(data_dir / "tls"))).resolve()


def peer_identity(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The common name of the certificate the caller presented, or None without TLS."""
    names = context.auth_context().get("x509_common_name") or []
    for name in names:
        return name.decode("utf-8", errors="replace")
    return None


def _metadata_value(context: grpc.aio.ServicerContext[Any, Any], key: str) -> str | None:
    for name, value in context.invocation_metadata() or ():
        if name == key:
            return value if isinstance(value, str) else value.decode("ascii", errors="replace")
    return None


class CallerGuard:
    """Runs before every handler of a TLS server: the caller's identity may call this
    service, and a request's ``tenant_id`` is the tenant its token was signed for.

    The token is kept as the request's ``current_token`` so the calls the handler makes
    onward (the router's to retrieval and SQL) carry it; it must have been signed for a
    chain that reaches this RPC from this caller (``reach``).
    """

    def __init__(
        self,
        callers: Mapping[str, frozenset[str]],
        verifier: TenantVerifier,
        onward: Mapping[str, frozenset[str]] = ONWARD,
    ) -> None:
        self._callers = callers
        self._verifier = verifier
        self._onward = onward
        # Per entry RPC, worked out once: entries come only from tokens the gateway signed.
        self._reach: dict[str, frozenset[Hop]] = {}

    def __call__(
        self, method: str, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        service = method.lstrip("/").split("/", 1)[0]
        if service.startswith(_ANY_PEER):
            return
        peer = peer_identity(context)
        if peer is None:
            raise Unauthenticated(
                "internal calls need a client certificate from the deployment's CA",
                reason="PEER_CERTIFICATE_MISSING",
            )
        if peer not in self._callers.get(service, frozenset()):
            raise PermissionDenied(
                f"the {peer!r} identity may not call {service}",
                reason="CALLER_NOT_ALLOWED",
                metadata={"caller": peer, "service": service},
            )
        descriptor = getattr(request, "DESCRIPTOR", None)
        if descriptor is None or "tenant_id" not in descriptor.fields_by_name:
            return
        token = _metadata_value(context, TENANT_TOKEN_HEADER)
        grant = self._verifier.grant(token)
        hops = self._reach.get(grant.entry)
        if hops is None:
            hops = self._reach[grant.entry] = reach(grant.entry, self._onward)
        called = method_name(method)
        if (peer, called) not in hops:
            raise PermissionDenied(
                f"the tenant token was issued for a call of {grant.entry}; it does not "
                f"let {peer!r} call {called}",
                reason="TENANT_TOKEN_NOT_FOR_CALL",
                metadata={"caller": peer, "method": called, "entry": grant.entry},
            )
        signed = grant.tenant
        claimed = parse_principal(context.invocation_metadata())
        if (claimed.canonical() if claimed is not None else "") != grant.principal:
            raise PermissionDenied(
                "the principal headers are not the principal the gateway signed for this call",
                reason="PRINCIPAL_MISMATCH",
            )
        # An empty tenant_id is left to the handler, which names the field.
        if request.tenant_id and request.tenant_id != signed:
            raise PermissionDenied(
                "tenant_id is not the tenant the gateway signed for this call",
                reason="TENANT_MISMATCH",
                metadata={"field": "tenant_id"},
            )
        current_token.set(token)


@dataclass(frozen=True)
class Trust:
    """How one process authenticates itself and its callers.

    ``credentials`` None is plaintext (development, in-process harnesses): no handshake,
    no guard, no tokens. ``signer`` only where the gateway's key is held.
    """

    credentials: Credentials | None = None
    verifier: TenantVerifier | None = None
    signer: TenantSigner | None = None
    callers: Mapping[str, frozenset[str]] = field(default_factory=lambda: CALLERS)

    @property
    def secure(self) -> bool:
        return self.credentials is not None

    @property
    def identity(self) -> str | None:
        return None if self.credentials is None else self.credentials.name

    @classmethod
    def plaintext(cls) -> Trust:
        return cls()

    @classmethod
    def load(
        cls,
        directory: Path,
        identity: str,
        *,
        callers: Mapping[str, frozenset[str]] = CALLERS,
    ) -> Trust:
        """``identity``'s credentials from ``directory``, with the gateway's certificate
        to verify tenant tokens (and its key to sign them, for the gateway itself)."""
        credentials = load_credentials(directory, identity)
        signer_cert = directory / f"{SIGNER_IDENTITY}.pem"
        if not signer_cert.is_file():
            raise FileNotFoundError(f"{signer_cert} is missing (it verifies tenant tokens)")
        return cls(
            credentials=credentials,
            verifier=TenantVerifier(signer_cert.read_bytes()),
            signer=TenantSigner(credentials.key) if identity == SIGNER_IDENTITY else None,
            callers=callers,
        )

    @classmethod
    def from_env(cls, identity: str, environ: Mapping[str, str] | None = None) -> Trust:
        """``TANDEM_TLS_DIR`` (mutual TLS) or ``TANDEM_INSECURE_INTERNAL=true``
        (plaintext, loudly); neither is a configuration error naming both."""
        env = Env(environ)
        directory = env.get_optional(TLS_DIR_VARIABLE)
        plaintext = env.get_bool(PLAINTEXT_VARIABLE, False)
        if directory and plaintext:
            raise SettingsError(
                f"{TLS_DIR_VARIABLE} and {PLAINTEXT_VARIABLE}=true contradict each other; set one"
            )
        if directory:
            try:
                return cls.load(Path(directory), identity)
            except (OSError, ValueError) as exc:
                raise SettingsError(f"{TLS_DIR_VARIABLE}: {exc}") from None
        if plaintext:
            _log.warning(
                "INTERNAL PORT IS PLAINTEXT: any process that reaches it is trusted with "
                "every tenant's data; for development only",
                extra={"fields": {"switch": PLAINTEXT_VARIABLE, "identity": identity}},
            )
            return cls.plaintext()
        raise SettingsError(
            f"{TLS_DIR_VARIABLE} is not set: internal calls use mutual TLS (`tandem run` "
            f"creates the certificates under its data directory's tls/); set "
            f"{PLAINTEXT_VARIABLE}=true to run plaintext for development"
        )

    def server_credentials(self) -> grpc.ServerCredentials | None:
        if self.credentials is None:
            return None
        return grpc.ssl_server_credentials(
            [(self.credentials.key, self.credentials.cert)],
            root_certificates=self.credentials.ca,
            require_client_auth=True,
        )

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        if self.credentials is None:
            return None
        return grpc.ssl_channel_credentials(
            root_certificates=self.credentials.ca,
            private_key=self.credentials.key,
            certificate_chain=self.credentials.cert,
        )

    def guard(self) -> CallerGuard | None:
        if self.credentials is None or self.verifier is None:
            return None
        return CallerGuard(self.callers, self.verifier)

    def call_tenant(self, context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
        """The tenant the call's token was signed for (UNAUTHENTICATED when forged or
        expired); None when the call carries none, and always in plaintext. For a service
        whose requests name no tenant but whose work is still a tenant's (the embedding
        service's query cache): the guard checks only requests that name one."""
        grant = self.call_grant(context)
        return None if grant is None else grant.tenant

    def call_grant(self, context: grpc.aio.ServicerContext[Any, Any]) -> Grant | None:
        """What the call's token was signed for (tenant, entry, principal), as
        ``call_tenant``: None without a token and always in plaintext."""
        if self.verifier is None:
            return None
        token = _metadata_value(context, TENANT_TOKEN_HEADER)
        return self.verifier.grant(token) if token else None

    def sign_for(self, tenant: str, principal: Principal | None = None) -> None:
        """Make ``tenant`` (as ``principal`` sees it; None: the full view) the current
        request's signed tenant: each internal call it makes next carries a token for it
        bound to that call's RPC and the principal's headers (the gateway, once the API
        key named the tenant and was found to hold ``act_as`` where a principal is named).
        The principal travels in plaintext too; the token only where there is a signer."""
        current_principal.set(principal)
        if self.signer is not None:
            current_tenant.set(tenant)
