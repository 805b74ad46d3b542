"""The internal certificate authority: one CA, one certificate per service identity.

Services authenticate each other with mutual TLS. Who a caller *is* comes from its
certificate's common name (``gateway``, ``router``, …), issued here; what it may call is
decided by ``services.common._mtls``. ``tandem run`` keeps the CA and the certificates in
``<data dir>/tls`` and issues what is missing on each start; containers mount the same
files from a secret (``infra/README.md`` says how to rotate them).

Keys are ECDSA P-256: small, fast to sign with (the gateway's key also signs tenant
tokens) and accepted by every TLS stack gRPC builds against.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.pem"
CA_KEY = "ca.key"
# Every identity a Tandem deployment issues: the five services, and the supervisor that
# watches their health (it may call nothing else).
IDENTITIES: tuple[str, ...] = ("gateway", "router", "retrieval", "sql", "embedding", "supervisor")
# The names a certificate is valid for: the service's DNS name (compose and Kubernetes
# address services by it) and loopback (``tandem run`` and tests).
_LOOPBACK: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
CA_DAYS = 3650
CERT_DAYS = 397
# Re-issued by ``ensure_directory`` when fewer days than this remain.
RENEW_DAYS = 30


@dataclass(frozen=True)
class Credentials:
    """One party's PEM material: the CA it trusts, its certificate and its private key."""

    name: str
    ca: bytes
    cert: bytes
    key: bytes


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _san(hosts: Iterable[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


class Authority:
    """A CA that issues service certificates (server and client use in one)."""

    def __init__(self, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        self._cert = cert
        self._key = key

    @classmethod
    def create(cls, common_name: str = "Tandem internal CA") -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        return cls(cert, key)

    @classmethod
    def load(cls, directory: Path) -> Authority:
        cert = x509.load_pem_x509_certificate((directory / CA_CERT).read_bytes())
        key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{directory / CA_KEY} is not an EC private key")
        return cls(cert, key)

    @property
    def cert_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def save(self, directory: Path) -> None:
        _write(directory / CA_CERT, self.cert_pem, 0o644)
        _write(directory / CA_KEY, _key_pem(self._key), 0o600)

    def issue(self, name: str, hosts: Sequence[str] = (), *, days: int = CERT_DAYS) -> Credentials:
        """A certificate whose common name is the identity ``name``, valid for ``name``
        as a host, loopback and ``hosts``, usable as TLS server and client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_san((name, *_LOOPBACK, *hosts)), critical=False)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return Credentials(
            name=name,
            ca=self.cert_pem,
            cert=cert.public_bytes(serialization.Encoding.PEM),
            key=_key_pem(key),
        )


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write whole or not at all (a crash mid-write leaves the old file or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    tmp.replace(path)


def save_credentials(directory: Path, credentials: Credentials) -> None:
    _write(directory / f"{credentials.name}.pem", credentials.cert, 0o644)
    _write(directory / f"{credentials.name}.key", credentials.key, 0o600)


def load_credentials(directory: Path, name: str) -> Credentials:
    """``name``'s certificate and key and the CA from ``directory``; the error names the
    missing file."""
    paths = (directory / CA_CERT, directory / f"{name}.pem", directory / f"{name}.key")
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing ({name!r} needs {CA_CERT}, {name}.pem and {name}.key)"
            )
    ca, cert, key = (path.read_bytes() for path in paths)
    return Credentials(name=name, ca=ca, cert=cert, key=key)


def _expires_soon(path: Path) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return True
    return cert.not_valid_after_utc - _now() < datetime.timedelta(days=RENEW_DAYS)


def ensure_directory(
    directory: Path, names: Iterable[str] = IDENTITIES, hosts: Sequence[str] = ()
) -> list[str]:
    """Create the CA when absent and issue each missing or expiring certificate; returns
    the names issued. A directory whose CA is replaced gets every certificate anew."""
    issued: list[str] = []
    if (directory / CA_CERT).is_file() and (directory / CA_KEY).is_file():
        authority = Authority.load(directory)
        fresh_ca = False
    else:
        authority = Authority.create()
        authority.save(directory)
        fresh_ca = True
    for name in names:
        cert = directory / f"{name}.pem"
        if fresh_ca or not (directory / f"{name}.key").is_file() or _expires_soon(cert):
            save_credentials(directory, authority.issue(name, hosts))
            issued.append(name)
    return issued


def write_bundles(directory: Path, names: Iterable[str] = IDENTITIES) -> list[Path]:
    """One folder per identity under ``directory`` with only what that service needs:
    the CA certificate, the gateway's certificate (it verifies tenant tokens), and its own
    certificate and key. Mount each as that service's secret: the CA's key and the other
    services' keys stay out of every container."""
    written = []
    ca = (directory / CA_CERT).read_bytes()
    gateway = (directory / "gateway.pem").read_bytes()
    for name in names:
        credentials = load_credentials(directory, name)
        bundle = directory / name
        _write(bundle / CA_CERT, ca, 0o644)
        _write(bundle / "gateway.pem", gateway, 0o644)
        save_credentials(bundle, credentials)
        written.append(bundle)
    return written
