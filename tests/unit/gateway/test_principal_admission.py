"""Which principal a gateway call is made for, decided from the key's kind and the headers:
never ignored, never widened. The contract tests drive the same through the real server
(tests/contract/test_gateway_principals.py)."""

from __future__ import annotations

import pytest

from gateway import ALL_SCOPES, Caller, KeyRecord, Scope, key_kind, parse_scopes
from gateway._server import PRINCIPAL_FREE_RPCS, RPC_SCOPES, admit_principal
from services.common import (
    GROUPS_HEADER,
    PRINCIPAL_HEADER,
    InvalidArgument,
    PermissionDenied,
    Principal,
)
from tandem.v1 import gateway_service_pb2 as gpb
from tests.scopes import PINNED_PRINCIPAL_FREE

SERVICE = Caller("acme", "k" * 16, frozenset(ALL_SCOPES))
ACTS_AS = Caller("acme", "j" * 16, frozenset({Scope.ASK, Scope.ACT_AS}))
ALICE = ((PRINCIPAL_HEADER, "alice"), (GROUPS_HEADER, "sales"))


def test_a_service_key_without_headers_has_the_full_view() -> None:
    assert admit_principal(SERVICE, (("authorization", "Bearer x"),)) is None


def test_a_service_key_naming_a_principal_is_refused_not_ignored() -> None:
    for metadata in (ALICE, ((PRINCIPAL_HEADER, "alice"),), ((GROUPS_HEADER, "hr"),)):
        with pytest.raises(PermissionDenied) as caught:
            admit_principal(SERVICE, metadata)
        assert caught.value.reason == "ACT_AS_NOT_GRANTED"
        assert caught.value.metadata == {"scope": "act_as"}


def test_an_act_as_key_calls_for_the_principal_it_names() -> None:
    assert admit_principal(ACTS_AS, ALICE) == Principal.of("alice", {"sales"})


def test_an_act_as_key_naming_nobody_is_refused_naming_the_header() -> None:
    with pytest.raises(InvalidArgument) as caught:
        admit_principal(ACTS_AS, (("authorization", "Bearer x"),))
    assert caught.value.reason == "PRINCIPAL_REQUIRED"
    assert [v.field for v in caught.value.violations] == [PRINCIPAL_HEADER]
    # Only an RPC about nobody's data may go without one.
    assert admit_principal(ACTS_AS, (), required=False) is None


def test_an_act_as_keys_malformed_principal_is_invalid() -> None:
    with pytest.raises(InvalidArgument) as caught:
        admit_principal(ACTS_AS, ((PRINCIPAL_HEADER, "a"), ("x-tandem-principal-attributes", "x")))
    assert caught.value.reason == "PRINCIPAL_INVALID"
    # A service key may send no principal header at all, well-formed or not.
    with pytest.raises(PermissionDenied) as denied:
        admit_principal(SERVICE, ((PRINCIPAL_HEADER, "%FF"),))
    assert denied.value.reason == "ACT_AS_NOT_GRANTED"


def test_rpcs_free_of_a_principal_are_the_pinned_ones_and_real_rpcs() -> None:
    methods = {m.name for m in gpb.DESCRIPTOR.services_by_name["GatewayService"].methods}
    assert PRINCIPAL_FREE_RPCS == PINNED_PRINCIPAL_FREE
    assert PRINCIPAL_FREE_RPCS <= methods <= set(RPC_SCOPES)


def test_all_is_every_operation_and_act_as_is_granted_only_by_name() -> None:
    assert Scope.ACT_AS not in parse_scopes(["all"])
    assert parse_scopes(["all,act_as"]) == (*ALL_SCOPES, Scope.ACT_AS)
    assert parse_scopes(["ask", "act_as"]) == (Scope.ASK, Scope.ACT_AS)


def test_a_keys_kind_follows_act_as() -> None:
    assert key_kind(ALL_SCOPES) == "service"
    assert key_kind((Scope.ASK, Scope.ACT_AS)) == "acts as principals"
    record = KeyRecord("k", "acme", "", None, None, (Scope.ACT_AS, Scope.ASK))  # type: ignore[arg-type]
    assert record.kind == "acts as principals"
    assert ACTS_AS.acts_as and not SERVICE.acts_as
