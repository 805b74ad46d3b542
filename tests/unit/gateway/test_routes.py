"""The pass-through route table agrees with the protos: walking the descriptors, each
route names an internal RPC that exists, takes the internal request it re-parses into,
answers with the public RPC's response type and streams exactly when the public RPC
does — so a mistyped row fails the build, not a caller's request."""

from __future__ import annotations

import pytest

from gateway._routes import ROUTES
from gateway._server import GatewayServicer
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import sql_service_pb2 as spb

_PUBLIC = gpb.DESCRIPTOR.services_by_name["GatewayService"]
_INTERNAL = {
    "retrieval": rpb.DESCRIPTOR.services_by_name["RetrievalService"],
    "sql": spb.DESCRIPTOR.services_by_name["SqlService"],
}
# The RPCs with logic of their own, written out in the servicer.
_WRITTEN_OUT = {
    "Ask", "StreamAsk", "UploadDocument", "ListConversations", "DeleteConversation",
    "ListAuditEvents", "GetCaller",
}  # fmt: skip


def test_every_public_rpc_is_routed_or_written_out() -> None:
    assert set(ROUTES) | _WRITTEN_OUT == {m.name for m in _PUBLIC.methods}
    assert not set(ROUTES) & _WRITTEN_OUT


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_a_route_matches_both_contracts(name: str) -> None:
    route = ROUTES[name]
    public = _PUBLIC.methods_by_name[name]
    internal = _INTERNAL[route.backend].methods_by_name[route.method]
    assert route.internal.DESCRIPTOR is internal.input_type
    assert route.response.DESCRIPTOR is public.output_type
    assert route.streaming == public.server_streaming == internal.server_streaming
    assert not public.client_streaming
    # Every public field crosses as the same internal field (the bytes are re-parsed);
    # the internal request may hold more (the tenant, fields only services set).
    public_fields = {(f.number, f.name, f.type) for f in public.input_type.fields}
    internal_fields = {(f.number, f.name, f.type) for f in internal.input_type.fields}
    assert public_fields <= internal_fields
    assert 1 not in {number for number, _, _ in public_fields}  # field 1 is the tenant


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_the_servicer_serves_each_route_under_its_name(name: str) -> None:
    method = getattr(GatewayServicer, name)
    assert method.__name__ == name
    assert method is not getattr(GatewayServicer.__mro__[1], name)
