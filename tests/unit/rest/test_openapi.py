"""The OpenAPI document generated from the protos: one operation per route, schemas
that are valid JSON Schema and accept what the face prints, descriptions from the proto
comments, and the same bytes every time."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from google.protobuf import json_format

from services.rest import gateway_routes, load_comments, message_json, openapi_document, render
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb


def _document() -> dict[str, Any]:
    return openapi_document(gateway_routes(), load_comments())


def _validate(document: dict[str, Any], name: str, instance: Any) -> None:
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    jsonschema.validate(instance, schema, cls=jsonschema.Draft202012Validator)


def test_one_operation_per_route_with_its_verb_and_errors() -> None:
    document = _document()
    operations = {
        (verb.upper(), path): op
        for path, ops in document["paths"].items()
        for verb, op in ops.items()
    }
    assert set(operations) == {(r.verb, r.template) for r in gateway_routes()}
    search = operations[("POST", "/v1:search")]
    assert search["operationId"] == "Search"
    assert "Searches the tenant's documents" in search["description"]
    assert "default" in search["responses"]
    assert (
        "text/event-stream" in operations[("POST", "/v1:streamAsk")]["responses"]["200"]["content"]
    )
    upload = operations[("POST", "/v1/documents:upload")]["requestBody"]["content"]
    assert "multipart/form-data" in upload
    params = {
        p["name"]: p["in"]
        for p in operations[("DELETE", "/v1/documents/{document_id}")]["parameters"]
    }
    assert params["document_id"] == "path" and params["allowMissing"] == "query"


def test_every_schema_is_valid_json_schema_and_fields_carry_their_comments() -> None:
    document = _document()
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    request = document["components"]["schemas"]["tandem.v1.GatewayServiceSearchRequest"]
    assert "at most 100" in request["properties"]["topK"]["description"]
    assert request["additionalProperties"] is False


def test_the_schemas_accept_what_the_face_prints_and_refuse_unknown_fields() -> None:
    document = _document()
    reply = gpb.GatewayServiceSearchResponse(
        hits=[rpb.SearchHit(document_id="d", chunk_id="c", score=0.5, text="t")],
        mode=rpb.SEARCH_MODE_HYBRID,
    )
    printed = json.loads(message_json(reply))
    _validate(document, "tandem.v1.GatewayServiceSearchResponse", printed)
    printed["surprise"] = 1
    try:
        _validate(document, "tandem.v1.GatewayServiceSearchResponse", printed)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("an unknown field passed the schema")
    stream = json.loads(message_json(gpb.GatewayServiceStreamAskResponse()))
    _validate(document, "tandem.v1.GatewayServiceStreamAskResponse", stream)
    assert json_format.ParseDict(stream, gpb.GatewayServiceStreamAskResponse()) is not None


def test_the_document_is_deterministic() -> None:
    assert render(_document()) == render(_document())
