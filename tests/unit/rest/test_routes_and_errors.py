"""The HTTP face's pure parts: routes read from the google.api.http options, JSON and
query decoding errors naming the field, the transcoding status table, and the error body."""

from __future__ import annotations

import json

import grpc
import pytest
from google.protobuf import duration_pb2, json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2

from services.common import InvalidArgument, ResourceExhausted, status_for
from services.rest import HTTP_STATUS, RouteError, gateway_routes, http_status, route_of
from services.rest._app import _field_of, _query_dict
from services.rest._errors import retry_after, status_json
from services.rest._routes import _compile, find
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb


def test_every_gateway_rpc_has_a_route_with_its_annotated_verb_and_path() -> None:
    routes = {r.name: r for r in gateway_routes()}
    assert set(routes) == {
        m.name for m in gpb.DESCRIPTOR.services_by_name["GatewayService"].methods
    }
    assert (routes["Search"].verb, routes["Search"].template, routes["Search"].body) == (
        "POST",
        "/v1:search",
        "*",
    )
    assert routes["DeleteDocument"].path_fields == ("document_id",)
    assert routes["StreamAsk"].server_streaming and not routes["StreamAsk"].client_streaming
    assert routes["UploadDocument"].client_streaming


def test_custom_verbs_and_variables_match_exactly() -> None:
    routes = gateway_routes()
    ask = find(routes, "POST", "/v1:ask")
    assert not isinstance(ask, str) and ask[0].name == "Ask" and ask[1] == {}
    delete = find(routes, "DELETE", "/v1/documents/a%2Fb")
    assert not isinstance(delete, str) and delete[0].name == "DeleteDocument"
    assert delete[1] == {"document_id": "a/b"}
    assert find(routes, "GET", "/v1:ask") == "method_not_allowed"
    assert find(routes, "POST", "/v1:askx") == "not_found"
    assert find(routes, "POST", "/v1/ask") == "not_found"
    assert find(routes, "DELETE", "/v1/documents/a/b") == "not_found"


@pytest.mark.parametrize("template", ["v1:ask", "/v1/{x=**}", "/v1/*", "/v1:a b"])
def test_templates_the_face_cannot_serve_are_refused(template: str) -> None:
    with pytest.raises(RouteError):
        _compile(template)


def test_an_rpc_without_an_http_option_is_refused() -> None:
    internal = gpb.DESCRIPTOR.services_by_name["GatewayService"].methods_by_name["Ask"]
    assert route_of(internal).template == "/v1:ask"
    search = rpb.DESCRIPTOR.services_by_name["RetrievalService"].methods_by_name["Search"]
    with pytest.raises(RouteError, match=r"no google\.api\.http option"):
        route_of(search)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"topK": "x"}', "topK"),
        ('{"foo": 1}', "foo"),
        ('{"filter": {"nope": 1}}', "filter.nope"),
        ('{"mode": "NOPE"}', "mode"),
        ("{bad", "body"),
    ],
)
def test_json_errors_name_the_field_as_sent(body: str, field: str) -> None:
    with pytest.raises(json_format.ParseError) as error:
        json_format.Parse(body, gpb.GatewayServiceSearchRequest())
    assert _field_of(str(error.value)) == field


def test_query_parameters_become_typed_fields() -> None:
    desc = gpb.GatewayServiceDescribeSchemaRequest.DESCRIPTOR
    data = _query_dict("database=w&maxChars=10&tables=a&tables=b", desc)
    message = json_format.ParseDict(data, gpb.GatewayServiceDescribeSchemaRequest())
    assert (message.database, message.max_chars, list(message.tables)) == ("w", 10, ["a", "b"])
    delete = _query_dict("allow_missing=true", gpb.GatewayServiceDeleteDocumentRequest.DESCRIPTOR)
    assert delete == {"allow_missing": True}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("nope=1", "nope"),
        ("allowMissing=yes", "allowMissing"),
        ("documentId=a&documentId=b", "documentId"),
    ],
)
def test_bad_query_parameters_name_themselves(query: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        _query_dict(query, gpb.GatewayServiceDeleteDocumentRequest.DESCRIPTOR)
    assert error.value.violations[0].field == field


def test_transcoding_status_table() -> None:
    assert http_status(code_pb2.UNAUTHENTICATED) == 401
    assert http_status(code_pb2.PERMISSION_DENIED) == 403
    assert http_status(code_pb2.RESOURCE_EXHAUSTED) == 429
    assert http_status(code_pb2.INVALID_ARGUMENT) == 400
    assert http_status(code_pb2.FAILED_PRECONDITION) == 400
    assert http_status(code_pb2.NOT_FOUND) == 404
    assert http_status(code_pb2.UNAVAILABLE) == 503
    assert http_status(code_pb2.DEADLINE_EXCEEDED) == 504
    assert set(HTTP_STATUS) == {c.value[0] for c in grpc.StatusCode}


def test_the_error_body_is_google_rpc_status_json_with_details_and_retry_after() -> None:
    status = status_for(ResourceExhausted("slow down", reason="QUOTA_EXCEEDED", retry_after_s=1.2))
    body = json.loads(status_json(status))
    assert body["code"] == 8 and body["message"] == "slow down"
    types = [d["@type"].rpartition(".")[2] for d in body["details"]]
    assert "ErrorInfo" in types and "RetryInfo" in types
    (info,) = [d for d in body["details"] if d["@type"].endswith("ErrorInfo")]
    assert info["reason"] == "QUOTA_EXCEEDED" and info["domain"] == "tandem"
    assert retry_after(status) == "2"
    # A detail of a type this process does not know is left out, not a crash.
    unknown = status_pb2.Status(code=3, message="m")
    unknown.details.add(type_url="type.googleapis.com/x.Unknown", value=b"\x08\x01")
    assert json.loads(status_json(unknown)) == {"code": 3, "message": "m", "details": []}
    delay = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=1))
    tiny = status_pb2.Status(code=8)
    tiny.details.add().Pack(delay)
    assert retry_after(tiny) == "1"
