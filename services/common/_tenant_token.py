"""Tenant tokens: the gateway signs the tenant it authenticated into every internal call.

A valid peer certificate says *which service* calls; it must not let that service pick
*which tenant's* data it reads. The gateway, the only party that checks API keys, signs
``(tenant, entry, expiry)`` with its certificate's private key; the internal services
verify the signature with the gateway's certificate (public, issued by the same CA) and
refuse a request whose ``tenant_id`` is not the signed one. The router forwards the token
it was given; it cannot mint one.

``principal`` is the end user the call is made for (``services.common._principal``, its
canonical form; empty for a service key's full view): a hop cannot drop or swap it, since
the internal services refuse principal headers that differ from the signed one.

``entry`` is the internal RPC the gateway called with the token (``tandem.v1.RouterService/
Ask``). A token is good only for that call and the calls its handler makes onward (the
caller guard works the chain out of the call table, ``services.common._mtls``): a token
forwarded for one Ask opens the router's Search and AskQuestion for that tenant, never
its documents' deletion, whoever holds it.

Signing and verifying cost next to nothing per request: the gateway reuses a token until
half its lifetime has passed, and a verifier remembers the tokens it has already checked
until they expire.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from services.common._errors import Unauthenticated

TENANT_TOKEN_HEADER = "x-tandem-tenant-token"
SIGNER_IDENTITY = "gateway"
_VERSION = "t3"
_CONTEXT = b"tandem-tenant-token\x00"
TOKEN_TTL_S = 300
# Clocks of two hosts may disagree a little; a token this far past its expiry still passes.
_SKEW_S = 30
_MAX_REMEMBERED = 4096

Clock = Callable[[], float]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _message(tenant: str, entry: str, principal: str, expiry: int) -> bytes:
    return _CONTEXT + f"{_VERSION}\x00{tenant}\x00{entry}\x00{principal}\x00{expiry}".encode()


def method_name(method: str | bytes) -> str:
    """``tandem.v1.RouterService/Ask`` for a gRPC method path in either spelling
    (``/tandem.v1.RouterService/Ask``, as bytes or text)."""
    text = method.decode("ascii") if isinstance(method, bytes) else method
    return text.lstrip("/")


@dataclass(frozen=True)
class Grant:
    """What a verified token allows: ``tenant``'s data as ``principal`` sees it (its
    canonical form; empty: the tenant's full view), through the chain that starts at the
    internal RPC ``entry``."""

    tenant: str
    entry: str
    principal: str = ""


class TenantSigner:
    """Mints tenant tokens (the gateway's side)."""

    def __init__(
        self, key_pem: bytes, *, ttl_s: int = TOKEN_TTL_S, clock: Clock = time.time
    ) -> None:
        key = serialization.load_pem_private_key(key_pem, None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("tenant tokens are signed with an EC private key")
        self._key = key
        self._ttl_s = ttl_s
        self._clock = clock
        self._issued: dict[tuple[str, str, str], tuple[float, str]] = {}

    def token(self, tenant: str, entry: str | bytes, principal: str = "") -> str:
        """A token for ``tenant`` (as ``principal`` sees it: its canonical form, empty
        for the full view) on a call of ``entry`` (a method path) and the calls that call
        makes onward, reused until half its lifetime has passed."""
        entry = method_name(entry)
        now = self._clock()
        cached = self._issued.get((tenant, entry, principal))
        if cached is not None and cached[0] > now:
            return cached[1]
        expiry = int(now) + self._ttl_s
        signature = self._key.sign(
            _message(tenant, entry, principal, expiry), ec.ECDSA(hashes.SHA256())
        )
        token = ".".join(
            (
                _VERSION,
                _b64(tenant.encode()),
                _b64(entry.encode()),
                _b64(principal.encode()),
                str(expiry),
                _b64(signature),
            )
        )
        if len(self._issued) >= _MAX_REMEMBERED:
            self._issued.clear()
        self._issued[(tenant, entry, principal)] = (now + self._ttl_s / 2, token)
        return token


class TenantVerifier:
    """Checks tenant tokens against the gateway's certificate (the services' side)."""

    def __init__(self, signer_cert_pem: bytes, *, clock: Clock = time.time) -> None:
        cert = x509.load_pem_x509_certificate(signer_cert_pem)
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        if not names or names[0].value != SIGNER_IDENTITY:
            raise ValueError(f"tenant tokens are signed by the {SIGNER_IDENTITY!r} certificate")
        key = cert.public_key()
        if not isinstance(key, ec.EllipticCurvePublicKey):
            raise ValueError("the gateway's certificate holds no EC public key")
        self._key = key
        self._clock = clock
        self._verified: dict[str, tuple[Grant, int]] = {}

    def tenant(self, token: str | None) -> str:
        """The tenant ``token`` was signed for (see ``grant``)."""
        return self.grant(token).tenant

    def grant(self, token: str | None) -> Grant:
        """The tenant and entry RPC ``token`` was signed for; UNAUTHENTICATED when it is
        missing, malformed, forged or expired."""
        if not token:
            raise Unauthenticated(
                "this call needs a tenant token signed by the gateway",
                reason="TENANT_TOKEN_MISSING",
            )
        remembered = self._verified.get(token)
        if remembered is None:
            remembered = self._check(token)
        grant, expiry = remembered
        if self._clock() > expiry + _SKEW_S:
            self._verified.pop(token, None)
            raise Unauthenticated("the tenant token has expired", reason="TENANT_TOKEN_EXPIRED")
        return grant

    def _check(self, token: str) -> tuple[Grant, int]:
        invalid = Unauthenticated(
            "the tenant token is not one the gateway signed", reason="TENANT_TOKEN_INVALID"
        )
        parts = token.split(".")
        if len(parts) != 6 or parts[0] != _VERSION or not parts[4].isdigit():
            raise invalid
        try:
            # Tenant, entry and principal travel base64url-encoded: metadata is ASCII,
            # '.' separates.
            tenant, entry, principal = (_unb64(p).decode("utf-8") for p in parts[1:4])
            expiry = int(parts[4])
            self._key.verify(
                _unb64(parts[5]),
                _message(tenant, entry, principal, expiry),
                ec.ECDSA(hashes.SHA256()),
            )
        except (InvalidSignature, binascii.Error, ValueError):
            raise invalid from None
        if len(self._verified) >= _MAX_REMEMBERED:
            self._verified.clear()
        grant = Grant(tenant, entry, principal)
        self._verified[token] = (grant, expiry)
        return grant, expiry


# The token the current request arrived with, so calls it makes onward carry it (the
# router's calls to retrieval and SQL). Set by the server guard, read by the channel.
current_token: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tandem_tenant_token", default=None
)
# The tenant the gateway authenticated for the current request: its channels mint a
# token for it bound to each internal RPC they call.
current_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tandem_signed_tenant", default=None
)
