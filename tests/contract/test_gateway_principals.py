"""GatewayService and principals, through the generated stubs of the real gateway (the
real SQL service on the embedded Postgres behind it): every RPC's documented principal
errors, from the attacker's side.

- A service key (no ``act_as``) that names a principal is PERMISSION_DENIED
  ACT_AS_NOT_GRANTED: a backend that believes it restricts a user must learn it does not.
- An ``act_as`` key that names nobody is INVALID_ARGUMENT PRINCIPAL_REQUIRED naming
  ``x-tandem-principal``: never widened to the tenant's full view.
- A malformed principal is INVALID_ARGUMENT PRINCIPAL_INVALID naming the header.

The RPCs are walked from the service descriptor (every one but the pinned principal-free
set), so a new RPC cannot skip the check; each refusal has its positive control (the same
key, the same request, admitted once the headers are right). Refusals happen before any
internal call, so the router and retrieval stay unreachable here (Ask and Search fail
open when admitted); their side is tests/integration/gateway/test_principals.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gateway import ALL_SCOPES, GatewaySettings, Scope
from services.common import ATTRIBUTES_HEADER, GROUPS_HEADER, PRINCIPAL_HEADER, Principal
from tandem.v1 import gateway_service_pb2 as gpb
from tests.contract import test_gateway_service as public
from tests.contract import test_gateway_sql_memory as memory
from tests.integration.gateway.stack import Gateway, bearer, start_gateway
from tests.integration.retrieval.stack import new_tenant
from tests.scopes import PINNED_PRINCIPAL_FREE

pytestmark = pytest.mark.integration

UNREACHABLE = "127.0.0.1:9"
ALICE = Principal.of("alice", {"sales"}, {"region": "EMEA"})
# Every public RPC with one valid request (the two modules' tables together).
VALID: dict[str, tuple[str, Any]] = {**public.VALID, **memory.VALID}
PRINCIPAL_REASONS = frozenset({"ACT_AS_NOT_GRANTED", "PRINCIPAL_REQUIRED", "PRINCIPAL_INVALID"})


def _needing_a_principal() -> list[Any]:
    names = sorted(n for n in VALID if n.split("/")[1] not in PINNED_PRINCIPAL_FREE)
    return [pytest.param(n, marks=pytest.mark.rpc(n), id=n.split("/")[1]) for n in names]


def test_the_walk_calls_every_rpc_of_the_service():
    # Walked from the descriptor, not from the gateway's own tables: an RPC added to the
    # proto without a valid request here fails this test rather than going unchecked.
    methods = {m.name for m in gpb.DESCRIPTOR.services_by_name["GatewayService"].methods}
    assert {name.split("/")[1] for name in VALID} == methods
    assert methods >= PINNED_PRINCIPAL_FREE


@pytest.fixture
async def gateway(pg_url, sql, telemetry_sink) -> AsyncIterator[Gateway]:
    service = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr=UNREACHABLE,
        retrieval_addr=UNREACHABLE,
        sql_addr=sql.address,
        settings=GatewaySettings(rate_per_s=1000.0, burst=1000.0),
    )
    yield service
    await service.close()


async def _keys(gateway: Gateway, pg_url: str) -> tuple[str, str]:
    """A service key and an act_as key of one fresh tenant, both with every operation."""
    tenant = new_tenant(pg_url, "principal")
    return (
        await gateway.key(tenant, ALL_SCOPES),
        await gateway.key(tenant, (*ALL_SCOPES, Scope.ACT_AS)),
    )


async def _outcome(
    gateway: Gateway, rpc: str, metadata: Any
) -> tuple[grpc.StatusCode, dict[str, Any]]:
    """How the call ended: OK, or its status and rich details (``public._error``'s)."""
    method, request = VALID[rpc]
    call, awaited = public._invoke(gateway.stub, method, request, metadata=metadata, timeout=30)
    try:
        await awaited
    except grpc.aio.AioRpcError as exc:
        status = await rpc_status.aio.from_call(call)
        found: dict[str, Any] = {"message": exc.details(), "fields": [], "reason": ""}
        for detail in status.details if status else []:
            bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
            if detail.Unpack(bad):
                found["fields"] = [v.field for v in bad.field_violations]
            elif detail.Unpack(info):
                found["reason"], found["metadata"] = info.reason, dict(info.metadata)
        return exc.code(), found
    return grpc.StatusCode.OK, {}


async def _assert_admitted(gateway: Gateway, rpc: str, metadata: Any) -> None:
    """Past the admission: answered, or refused by something after it (an unreachable
    engine, the request's own fields), never for the key or the principal."""
    code, found = await _outcome(gateway, rpc, metadata)
    assert found.get("reason", "") not in PRINCIPAL_REASONS, (rpc, code, found)
    assert code not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)


@pytest.mark.parametrize("rpc", _needing_a_principal())
async def test_a_service_key_naming_a_principal_is_refused_not_ignored(gateway, pg_url, rpc):
    service, _ = await _keys(gateway, pg_url)
    for headers in (ALICE.headers(), ((GROUPS_HEADER, "hr"),)):
        code, found = await _outcome(gateway, rpc, (*bearer(service), *headers))
        assert code == grpc.StatusCode.PERMISSION_DENIED, (rpc, found)
        assert found["reason"] == "ACT_AS_NOT_GRANTED"
        assert found["metadata"] == {"scope": "act_as"}
        assert "act_as" in found["message"]
    # The positive control: the same key without the headers has its full view.
    await _assert_admitted(gateway, rpc, bearer(service))


@pytest.mark.parametrize("rpc", _needing_a_principal())
async def test_an_act_as_key_naming_nobody_is_refused_never_widened(gateway, pg_url, rpc):
    _, acting = await _keys(gateway, pg_url)
    code, found = await _outcome(gateway, rpc, bearer(acting))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (rpc, found)
    assert found["reason"] == "PRINCIPAL_REQUIRED"
    assert found["fields"] == [PRINCIPAL_HEADER]
    await _assert_admitted(gateway, rpc, (*bearer(acting), *ALICE.headers()))


MALFORMED = [
    ((PRINCIPAL_HEADER, "alice"), (ATTRIBUTES_HEADER, "region")),
    ((PRINCIPAL_HEADER, "%FF"),),
    ((GROUPS_HEADER, "sales"),),
]
MALFORMED_NAMES = [ATTRIBUTES_HEADER, PRINCIPAL_HEADER, PRINCIPAL_HEADER]


@pytest.mark.parametrize("rpc", _needing_a_principal())
async def test_a_malformed_principal_is_invalid_naming_the_header(gateway, pg_url, rpc):
    _, acting = await _keys(gateway, pg_url)
    for headers, header in zip(MALFORMED, MALFORMED_NAMES, strict=True):
        code, found = await _outcome(gateway, rpc, (*bearer(acting), *headers))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (rpc, headers, found)
        assert (found["reason"], found["fields"]) == ("PRINCIPAL_INVALID", [header])


@pytest.mark.rpc(public.VALIDATE)
async def test_the_key_then_the_quota_then_the_principal_then_the_fields(
    pg_url, sql, telemetry_sink
):
    gateway = await start_gateway(
        pg_url, telemetry_sink("gateway").telemetry, router_addr=UNREACHABLE,
        retrieval_addr=UNREACHABLE, sql_addr=sql.address,
        settings=GatewaySettings(rate_per_s=0.01, burst=2.0),
    )  # fmt: skip
    try:
        tenant = new_tenant(pg_url, "order")
        ask_less = await gateway.key(tenant, (Scope.INGEST, Scope.ACT_AS))
        acting = await gateway.key(tenant, (Scope.ASK, Scope.ACT_AS))
        invalid = gpb.GatewayServiceValidateSqlRequest(sql="x" * 20_001)

        async def refused(metadata: Any) -> tuple[grpc.StatusCode, str, list[str]]:
            call = gateway.stub.ValidateSql(invalid, metadata=metadata, timeout=10)
            code, found = await public._error(call)
            return code, found["reason"], found["fields"]

        # The key's scope before the principal: an act_as key without `ask`.
        assert (await refused(bearer(ask_less)))[:2] == (
            grpc.StatusCode.PERMISSION_DENIED, "API_KEY_SCOPE_MISSING",
        )  # fmt: skip
        # The principal before the request's fields.
        assert await refused(bearer(acting)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "PRINCIPAL_REQUIRED", [PRINCIPAL_HEADER],
        )  # fmt: skip
        assert await refused((*bearer(acting), *ALICE.headers())) == (
            grpc.StatusCode.INVALID_ARGUMENT, "FIELD_TOO_LONG", ["sql"],
        )  # fmt: skip
        # Those two spent the burst (a refused key spends nothing): the quota comes
        # before the principal.
        assert (await refused(bearer(acting)))[:2] == (
            grpc.StatusCode.RESOURCE_EXHAUSTED, "QUOTA_EXCEEDED",
        )  # fmt: skip
    finally:
        await gateway.close()
