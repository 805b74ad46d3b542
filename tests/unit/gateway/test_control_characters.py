"""Every string field of every public request refuses control characters, naming the field
(issue 46: a NUL in a uri, category or metadata reached the database and the error named
field "query"). Driven by the descriptors, so a field or RPC added later is covered too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.protobuf import struct_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from gateway import Limits
from gateway import _validation as check
from gateway._routes import ROUTES
from services.common import InvalidArgument
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb

LIMITS = Limits()
Check = Callable[[Any, Limits], None]
# Every public RPC with a request of its own and its validator; UploadDocument's header
# becomes an ingest document (checked per document by the retrieval service),
# DeleteConversation's one field is parsed as a UUID, and GetCaller's request is empty.
CHECKS: dict[str, tuple[type[Message], Check]] = {
    "Ask": (gpb.GatewayServiceAskRequest, check.check_ask),
    "StreamAsk": (gpb.GatewayServiceStreamAskRequest, check.check_ask),
    "ListConversations": (
        gpb.GatewayServiceListConversationsRequest,
        check.check_list_conversations,
    ),
    "ListAuditEvents": (
        gpb.GatewayServiceListAuditEventsRequest,
        check.check_list_audit_events,
    ),
    **{
        name: (getattr(gpb, f"GatewayService{name}Request"), route.check)
        for name, route in ROUTES.items()
    },
}
# Per document, in the retrieval service (a bad document fails alone).
SKIPPED = {("IngestDocuments", "documents")}


def _string_paths(descriptor: Any, depth: int = 0) -> Iterator[tuple[list[FieldDescriptor], str]]:
    fields: list[Any] = list(descriptor.fields)
    for field in fields:
        repeated = bool(field.is_repeated)
        name = f"{field.name}[0]" if repeated else field.name
        if field.type == FieldDescriptor.TYPE_STRING:
            yield [field], name
        elif (
            field.type == FieldDescriptor.TYPE_MESSAGE
            and not field.message_type.GetOptions().map_entry
            and not field.message_type.file.package.startswith("google.")
            and depth < 4
        ):
            for chain, path in _string_paths(field.message_type, depth + 1):
                yield [field, *chain], f"{name}.{path}"


def _set(message: Any, chain: list[FieldDescriptor], value: str) -> None:
    field, *rest = chain
    repeated = bool(field.is_repeated)
    if not rest:
        if repeated:
            getattr(message, field.name).append(value)
        else:
            setattr(message, field.name, value)
        return
    child = getattr(message, field.name).add() if repeated else getattr(message, field.name)
    _set(child, rest, value)


def _cases() -> Iterator[Any]:
    for rpc, (request_type, _) in CHECKS.items():
        for chain, path in _string_paths(request_type.DESCRIPTOR):
            if (rpc, chain[0].name) not in SKIPPED:
                yield pytest.param(rpc, chain, path, id=f"{rpc}.{path}")


def _violations(rpc: str, request: Message) -> dict[str, str]:
    try:
        CHECKS[rpc][1](request, LIMITS)
    except InvalidArgument as exc:
        return {v.field: v.description for v in exc.violations}
    return {}


@pytest.mark.parametrize("character", ["\x00", "\x1b", "\x7f", "\x85"])
@pytest.mark.parametrize(("rpc", "chain", "path"), list(_cases()))
def test_a_control_character_in_any_string_field_is_refused_naming_it(
    rpc: str, chain: list[FieldDescriptor], path: str, character: str
) -> None:
    request = CHECKS[rpc][0]()
    _set(request, chain, f"a{character}b")
    violations = _violations(rpc, request)
    assert path in violations, (rpc, path, violations)
    assert "control character" in violations[path]


def test_every_public_rpc_is_checked() -> None:
    service = gpb.DESCRIPTOR.services_by_name["GatewayService"]
    assert set(service.methods_by_name) - set(CHECKS) == {
        "UploadDocument",
        "DeleteConversation",
        "GetCaller",
    }
    assert not gpb.GatewayServiceGetCallerRequest.DESCRIPTOR.fields


def test_layout_characters_pass_in_free_text_only() -> None:
    layout = "line one\n\tline two\r\n\fpage two\v"
    assert not _violations("Ask", gpb.GatewayServiceAskRequest(question=layout))
    assert not _violations("ValidateSql", gpb.GatewayServiceValidateSqlRequest(sql=layout))
    refused = _violations(
        "Search",
        gpb.GatewayServiceSearchRequest(
            query=layout, filter=rpb.SearchFilter(categories=["a\tb"], document_ids=["a\nb"])
        ),
    )
    assert set(refused) == {"filter.categories[0]", "filter.document_ids[0]"}


def test_metadata_keys_and_values_are_checked() -> None:
    metadata = struct_pb2.Struct()
    metadata.update({"team": {"name": "a\x00b"}})
    request = gpb.GatewayServiceSearchRequest(query="q", filter=rpb.SearchFilter(metadata=metadata))
    assert list(_violations("Search", request)) == ["filter.metadata.team.name"]
    bad_key = struct_pb2.Struct()
    bad_key.update({"te\x00am": "x", "ok": "line\nbreak"})
    request = gpb.GatewayServiceSearchRequest(query="q", filter=rpb.SearchFilter(metadata=bad_key))
    violations = _violations("Search", request)
    assert list(violations) == ["filter.metadata"]
    assert violations["filter.metadata"].startswith("keys must not contain control characters")
