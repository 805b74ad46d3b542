"""The internal CA, tenant tokens and the trust settings, without a network."""

from __future__ import annotations

import datetime
import logging
from pathlib import Path

import pytest
from cryptography import x509

from services.common import (
    ONWARD,
    Authority,
    Grant,
    SettingsError,
    TenantSigner,
    TenantVerifier,
    Trust,
    Unauthenticated,
    ensure_directory,
    load_credentials,
    reach,
    save_credentials,
    tls_directory,
)
from services.common._pki import IDENTITIES

ASK = "/tandem.v1.RouterService/Ask"


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tls")
    ensure_directory(directory)
    return directory


def test_a_fresh_directory_gets_a_ca_and_every_identity_with_private_keys(tmp_path: Path) -> None:
    assert ensure_directory(tmp_path) == list(IDENTITIES)
    for name in IDENTITIES:
        cert = x509.load_pem_x509_certificate((tmp_path / f"{name}.pem").read_bytes())
        assert cert.subject.rfc4514_string() == f"CN={name}"
        hosts = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert name in hosts.get_values_for_type(x509.DNSName)
        assert (tmp_path / f"{name}.key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "ca.key").stat().st_mode & 0o777 == 0o600
    # A second start reuses everything.
    before = (tmp_path / "router.pem").read_bytes()
    assert ensure_directory(tmp_path) == []
    assert (tmp_path / "router.pem").read_bytes() == before


def test_an_expiring_or_missing_certificate_is_issued_again_and_a_new_ca_reissues_all(
    tmp_path: Path,
) -> None:
    ensure_directory(tmp_path)
    authority = Authority.load(tmp_path)
    save_credentials(tmp_path, authority.issue("sql", days=10))
    (tmp_path / "router.key").unlink()
    assert ensure_directory(tmp_path) == ["router", "sql"]
    (tmp_path / "ca.key").unlink()
    assert ensure_directory(tmp_path) == list(IDENTITIES)


def test_missing_credentials_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"ca\.pem is missing \('gateway' needs"):
        load_credentials(tmp_path, "gateway")
    Authority.create().save(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"gateway\.pem is missing"):
        load_credentials(tmp_path, "gateway")


def test_a_token_carries_its_tenant_and_is_reused_until_half_its_life(ca: Path) -> None:
    clock = Clock()
    signer = TenantSigner(load_credentials(ca, "gateway").key, ttl_s=300, clock=clock)
    verifier = TenantVerifier((ca / "gateway.pem").read_bytes(), clock=clock)
    first = signer.token("acme", ASK)
    assert verifier.grant(first) == Grant("acme", "tandem.v1.RouterService/Ask")
    clock.now += 149
    assert signer.token("acme", ASK) == first
    # One token per RPC the gateway calls: each is bound to its own.
    assert verifier.grant(signer.token("acme", b"/tandem.v1.SqlService/TeachSql")).entry == (
        "tandem.v1.SqlService/TeachSql"
    )
    clock.now += 2
    assert signer.token("acme", ASK) != first
    # Odd tenant text travels intact (metadata is ASCII; '.' separates the parts).
    assert verifier.tenant(signer.token("a.b ü", ASK)) == "a.b ü"


def test_an_expired_forged_tampered_or_missing_token_is_unauthenticated(
    ca: Path, tmp_path: Path
) -> None:
    clock = Clock()
    signer = TenantSigner(load_credentials(ca, "gateway").key, ttl_s=300, clock=clock)
    verifier = TenantVerifier((ca / "gateway.pem").read_bytes(), clock=clock)
    ensure_directory(tmp_path)
    forger = TenantSigner(load_credentials(tmp_path, "gateway").key, clock=clock)
    good = signer.token("acme", ASK)
    version, tenant, entry, principal, expiry, signature = good.split(".")
    other = signer.token("globex", ASK).split(".")[1]
    wider = signer.token("acme", "/tandem.v1.RetrievalService/DeleteDocument").split(".")[2]
    someone = signer.token("acme", ASK, "x-tandem-principal:alice").split(".")[3]
    cases = {
        None: "TENANT_TOKEN_MISSING",
        "": "TENANT_TOKEN_MISSING",
        forger.token("acme", ASK): "TENANT_TOKEN_INVALID",
        f"{version}.{other}.{entry}.{principal}.{expiry}.{signature}": "TENANT_TOKEN_INVALID",
        # The entry is signed: a token cannot be re-pointed at another RPC.
        f"{version}.{tenant}.{wider}.{principal}.{expiry}.{signature}": "TENANT_TOKEN_INVALID",
        # The principal is signed: a full-view token cannot be narrowed or re-aimed.
        f"{version}.{tenant}.{entry}.{someone}.{expiry}.{signature}": "TENANT_TOKEN_INVALID",
        f"{version}.{tenant}.{entry}.{principal}.{int(expiry) + 3600}.{signature}": (
            "TENANT_TOKEN_INVALID"
        ),
        # The unbound tokens of before, and those without a principal, are refused.
        f"t1.{tenant}.{expiry}.{signature}": "TENANT_TOKEN_INVALID",
        f"t2.{tenant}.{entry}.{expiry}.{signature}": "TENANT_TOKEN_INVALID",
        "t2.acme": "TENANT_TOKEN_INVALID",
        "t3.!!.!!.!!.1.!!": "TENANT_TOKEN_INVALID",
    }
    for token, reason in cases.items():
        with pytest.raises(Unauthenticated) as refused:
            verifier.tenant(token)
        assert refused.value.reason == reason, token
    assert verifier.tenant(good) == "acme"
    clock.now += 300 + 31
    with pytest.raises(Unauthenticated) as expired:
        verifier.tenant(good)  # remembered as verified, but past its expiry
    assert expired.value.reason == "TENANT_TOKEN_EXPIRED"


def test_a_token_reaches_its_entry_and_the_calls_that_entry_makes_onward() -> None:
    ask = reach("tandem.v1.RouterService/Ask")
    assert ask == {
        ("gateway", "tandem.v1.RouterService/Ask"),
        ("router", "tandem.v1.RetrievalService/Search"),
        ("router", "tandem.v1.SqlService/AskQuestion"),
        ("router", "tandem.v1.SqlService/ValidateSql"),
    }
    # A gateway's direct call reaches only itself: its handler calls nothing tenant-scoped.
    assert reach("tandem.v1.RetrievalService/IngestDocuments") == {
        ("gateway", "tandem.v1.RetrievalService/IngestDocuments")
    }
    # Chains are followed to their end, each hop by the identity serving the one before.
    deeper = {**ONWARD, "tandem.v1.SqlService/AskQuestion": frozenset({"tandem.v1.X/Y"})}
    assert ("sql", "tandem.v1.X/Y") in reach("tandem.v1.RouterService/Ask", deeper)


def test_tokens_are_verified_only_against_the_gateways_certificate(ca: Path) -> None:
    with pytest.raises(ValueError, match="gateway"):
        TenantVerifier((ca / "router.pem").read_bytes())


def test_only_the_gateway_holds_a_signer(ca: Path) -> None:
    assert Trust.load(ca, "gateway").signer is not None
    router = Trust.load(ca, "router")
    assert router.signer is None and router.verifier is not None and router.secure


def test_settings_need_a_tls_directory_or_the_loud_development_switch(
    ca: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(SettingsError, match="TANDEM_TLS_DIR is not set"):
        Trust.from_env("sql", {})
    with pytest.raises(SettingsError, match="contradict"):
        Trust.from_env("sql", {"TANDEM_TLS_DIR": str(ca), "TANDEM_INSECURE_INTERNAL": "true"})
    with pytest.raises(SettingsError, match=r"TANDEM_TLS_DIR: .*nobody\.pem is missing"):
        Trust.from_env("nobody", {"TANDEM_TLS_DIR": str(ca)})
    assert Trust.from_env("sql", {"TANDEM_TLS_DIR": str(ca)}).identity == "sql"
    with caplog.at_level(logging.WARNING, logger="tandem.trust"):
        plain = Trust.from_env("sql", {"TANDEM_INSECURE_INTERNAL": "true"})
    assert not plain.secure and plain.guard() is None
    assert "PLAINTEXT" in caplog.text


def test_the_tls_directory_follows_the_data_directory_unless_named(tmp_path: Path) -> None:
    assert tls_directory({"TANDEM_DATA_DIR": str(tmp_path)}) == tmp_path / "tls"
    named = tmp_path / "certs"
    assert tls_directory({"TANDEM_TLS_DIR": str(named)}) == named
    assert tls_directory({"TANDEM_INSECURE_INTERNAL": "1"}) is None


def test_certificates_are_valid_now_and_for_about_a_year(ca: Path) -> None:
    cert = x509.load_pem_x509_certificate((ca / "sql.pem").read_bytes())
    now = datetime.datetime.now(datetime.UTC)
    assert cert.not_valid_before_utc < now < cert.not_valid_after_utc
    assert 390 <= (cert.not_valid_after_utc - now).days <= 397
