"""Every GatewayService RPC needs exactly one key scope: walking the service descriptor,
a new RPC without an entry in ``RPC_SCOPES`` fails the build instead of being open to any
key of the tenant; and each entry is the scope pinned by hand in ``tests/scopes.py``, so a
downgraded or upgraded mapping fails too."""

from __future__ import annotations

import pytest

from gateway import ALL_SCOPES, Scope, parse_scopes
from gateway._server import RPC_SCOPES
from services.common import InvalidArgument
from tandem.v1 import gateway_service_pb2 as gpb
from tests.scopes import PINNED_RPC_SCOPES


def test_every_rpc_has_a_scope_and_every_scope_entry_is_an_rpc() -> None:
    methods = {m.name for m in gpb.DESCRIPTOR.services_by_name["GatewayService"].methods}
    assert set(RPC_SCOPES) == methods
    assert set(PINNED_RPC_SCOPES) == methods


def test_each_rpc_needs_the_scope_pinned_by_hand() -> None:
    # Both ways: an RPC whose scope changed, one missing from either side, one extra.
    served = {method: scope.value for method, scope in RPC_SCOPES.items()}
    changed = {
        method: (served.get(method), PINNED_RPC_SCOPES.get(method))
        for method in served.keys() | PINNED_RPC_SCOPES.keys()
        if served.get(method) != PINNED_RPC_SCOPES.get(method)
    }
    assert changed == {}, "(RPC_SCOPES, pinned) differ"
    assert set(PINNED_RPC_SCOPES.values()) <= {s.value for s in Scope}


def test_what_changes_other_users_answers_needs_teach() -> None:
    # A second key of the tenant once taught a pair that changed everyone's answers.
    assert {m for m, s in RPC_SCOPES.items() if s is Scope.TEACH} == {
        "TeachSql",
        "DeleteConfirmedPair",
        "SubmitSqlFeedback",
    }
    assert {m for m, s in RPC_SCOPES.items() if s is Scope.INGEST} == {
        "IngestDocuments",
        "UploadDocument",
        "DeleteDocument",
        "UpdateDocumentAcl",
    }


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["ask"], (Scope.ASK,)),
        (["ingest,ask"], (Scope.ASK, Scope.INGEST)),
        (["Teach", " admin "], (Scope.TEACH, Scope.ADMIN)),
        (["all"], ALL_SCOPES),
    ],
)
def test_scopes_parse_in_canonical_order(given: list[str], expected: tuple[Scope, ...]) -> None:
    assert parse_scopes(given) == expected


@pytest.mark.parametrize("given", [[], [""], ["owner"], ["ask,root"]])
def test_unknown_or_no_scopes_name_the_field(given: list[str]) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_scopes(given)
    assert [v.field for v in caught.value.violations] == ["scopes"]
    assert caught.value.reason == "API_KEY_SCOPE_INVALID"
