"""The OpenAPI 3.1 document of the HTTP face, generated from the protos: paths and
verbs from the ``google.api.http`` options (the same routes the face serves), schemas
from the message descriptors (proto3 JSON: lowerCamelCase names, enums as names, int64
as strings, well-known types as their JSON forms), descriptions from the proto comments.

The comments come from the descriptor set ``make proto`` writes beside the generated
code (``gen/tandem/descriptors.binpb``, built with ``--include_source_info``); without it
the document is the same less its descriptions. Deterministic: the same protos give the
same bytes (keys sorted)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import descriptor, descriptor_pb2

import tandem
from services.rest._routes import SERVICE, HttpRoute

DESCRIPTOR_SET = Path(tandem.__file__).resolve().parent / "descriptors.binpb"
_FD = descriptor.FieldDescriptor
_INT32 = {_FD.TYPE_INT32, _FD.TYPE_UINT32, _FD.TYPE_SINT32, _FD.TYPE_FIXED32, _FD.TYPE_SFIXED32}
_INT64 = {_FD.TYPE_INT64, _FD.TYPE_UINT64, _FD.TYPE_SINT64, _FD.TYPE_FIXED64, _FD.TYPE_SFIXED64}
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?s$"},
    "google.protobuf.FieldMask": {"type": "string"},
    "google.protobuf.Empty": {"type": "object", "additionalProperties": False},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.Any": {
        "type": "object",
        "properties": {"@type": {"type": "string"}},
        "required": ["@type"],
    },
    "google.protobuf.StringValue": {"type": "string"},
    "google.protobuf.BytesValue": {"type": "string", "contentEncoding": "base64"},
    "google.protobuf.BoolValue": {"type": "boolean"},
    "google.protobuf.Int32Value": {"type": "integer"},
    "google.protobuf.UInt32Value": {"type": "integer"},
    "google.protobuf.Int64Value": {"type": ["string", "integer"]},
    "google.protobuf.UInt64Value": {"type": ["string", "integer"]},
    "google.protobuf.FloatValue": {"type": ["number", "string"]},
    "google.protobuf.DoubleValue": {"type": ["number", "string"]},
}
STATUS_SCHEMA = "google.rpc.Status"
PRINCIPAL_HEADERS = (
    ("x-tandem-principal", "The end user an `act_as` key calls for (percent-encoded)."),
    ("x-tandem-principal-groups", "The principal's groups, comma-separated."),
    ("x-tandem-principal-attributes", "The principal's attributes, `name=value` joined by `&`."),
)


def load_comments(path: Path = DESCRIPTOR_SET) -> dict[str, str]:
    """Leading comments by full name (``tandem.v1.Msg``, ``tandem.v1.Msg.field``,
    ``tandem.v1.Service.Method``, ``tandem.v1.Enum``); empty when the set is missing."""
    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes()).file
    except OSError:
        return {}
    out: dict[str, str] = {}
    for file in files:
        where = {tuple(loc.path): loc.leading_comments for loc in file.source_code_info.location}
        prefix = file.package

        def message(
            msg: Any, path: tuple[int, ...], scope: str, where: dict[tuple[int, ...], str] = where
        ) -> None:
            name = f"{scope}.{msg.name}"
            out[name] = where.get(path, "")
            for i, field in enumerate(msg.field):
                out[f"{name}.{field.name}"] = where.get((*path, 2, i), "")
            for i, nested in enumerate(msg.nested_type):
                message(nested, (*path, 3, i), name, where)
            for i, enum in enumerate(msg.enum_type):
                out[f"{name}.{enum.name}"] = where.get((*path, 4, i), "")

        for i, msg in enumerate(file.message_type):
            message(msg, (4, i), prefix, where)
        for i, enum in enumerate(file.enum_type):
            out[f"{prefix}.{enum.name}"] = where.get((5, i), "")
        for i, service in enumerate(file.service):
            out[f"{prefix}.{service.name}"] = where.get((6, i), "")
            for j, method in enumerate(service.method):
                out[f"{prefix}.{service.name}.{method.name}"] = where.get((6, i, 2, j), "")
    return {name: _clean(text) for name, text in out.items() if text.strip()}


def _clean(comment: str) -> str:
    return "\n".join(
        line[1:] if line.startswith(" ") else line for line in comment.splitlines()
    ).strip()


class _Schemas:
    """Component schemas for every message and enum a route reaches."""

    def __init__(self, comments: Mapping[str, str]) -> None:
        self.comments = comments
        self.schemas: dict[str, dict[str, Any]] = {}

    def ref(self, full_name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{full_name}"}

    def message(self, desc: descriptor.Descriptor, skip: Iterable[str] = ()) -> dict[str, Any]:
        """A reference to ``desc``'s schema (added once); ``skip``: fields bound
        elsewhere (path variables), which give the request body its own schema."""
        skipped = tuple(skip)
        if desc.full_name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[desc.full_name])
        name = desc.full_name + (".Body" if skipped else "")
        if name in self.schemas:
            return self.ref(name)
        schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
        self.schemas[name] = schema  # placed first: recursive messages refer to it
        if text := self.comments.get(desc.full_name):
            schema["description"] = text
        properties: dict[str, Any] = {}
        for field in desc.fields:
            if field.name in skipped:
                continue
            prop = self.field(field)
            if text := self.comments.get(f"{desc.full_name}.{field.name}"):
                prop = (
                    {**prop, "description": text}
                    if "$ref" not in prop
                    else {
                        "allOf": [prop],
                        "description": text,
                    }
                )
            properties[field.json_name] = prop
        schema["properties"] = properties
        return self.ref(name)

    def enum(self, desc: descriptor.EnumDescriptor) -> dict[str, Any]:
        if desc.full_name not in self.schemas:
            schema: dict[str, Any] = {
                # Names; a value this build does not know prints as its number.
                "type": ["string", "integer"],
                "enum": [value.name for value in desc.values],
            }
            if text := self.comments.get(desc.full_name):
                schema["description"] = text
            self.schemas[desc.full_name] = schema
        return self.ref(desc.full_name)

    def scalar(self, field: descriptor.FieldDescriptor) -> dict[str, Any]:
        kind = field.type
        if field.message_type is not None:
            return self.message(field.message_type)
        if field.enum_type is not None:
            return self.enum(field.enum_type)
        if kind == _FD.TYPE_BOOL:
            return {"type": "boolean"}
        if kind == _FD.TYPE_STRING:
            return {"type": "string"}
        if kind == _FD.TYPE_BYTES:
            return {"type": "string", "contentEncoding": "base64"}
        if kind in _INT32:
            return {"type": "integer", "format": "int32"}
        if kind in _INT64:
            return {"type": ["string", "integer"], "format": "int64"}
        return {"type": ["number", "string"]}  # float, double (NaN, Infinity as strings)

    def field(self, field: descriptor.FieldDescriptor) -> dict[str, Any]:
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            value = self.scalar(entry.fields_by_name["value"])
            return {"type": "object", "additionalProperties": value}
        if field.is_repeated:
            return {"type": "array", "items": self.scalar(field)}
        return self.scalar(field)


def _status_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "google.rpc.Status: the gRPC code, a message, and the details the "
        "gateway sent (ErrorInfo with reason, domain and metadata; RetryInfo; BadRequest).",
        "required": ["code", "message", "details"],
        "properties": {
            "code": {"type": "integer"},
            "message": {"type": "string"},
            "details": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"@type": {"type": "string"}},
                    "required": ["@type"],
                },
            },
        },
    }


def _parameters(route: HttpRoute, schemas: _Schemas) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    desc = route.rpc.input_type
    for name in route.path_fields:
        params.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": {"type": "string"},
                "description": schemas.comments.get(f"{desc.full_name}.{name}", ""),
            }
        )
    if route.body != "*":
        for field in desc.fields:
            kind = field.message_type
            nested = kind is not None and kind.full_name not in _WELL_KNOWN
            if field.name in route.path_fields or nested:
                continue
            params.append(
                {
                    "name": field.json_name,
                    "in": "query",
                    "required": False,
                    "schema": schemas.field(field),
                    "description": schemas.comments.get(f"{desc.full_name}.{field.name}", ""),
                }
            )
    params.append(
        {
            "name": "x-tandem-timeout",
            "in": "header",
            "required": False,
            "schema": {"type": "number", "exclusiveMinimum": 0},
            "description": "The call's deadline in seconds; unset: the gateway's default.",
        }
    )
    params.extend(
        {
            "name": name,
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "description": text,
        }
        for name, text in PRINCIPAL_HEADERS
    )
    return params


def _operation(route: HttpRoute, schemas: _Schemas) -> dict[str, Any]:
    reply = schemas.message(route.rpc.output_type)
    error = {"application/json": {"schema": schemas.ref(STATUS_SCHEMA)}}
    if route.server_streaming and not route.client_streaming:
        ok = {
            "description": "Server-sent events: `event: message` with one JSON message "
            "each (the schema below), or one `event: error` with a google.rpc.Status.",
            "content": {"text/event-stream": {"schema": reply}},
        }
    else:
        ok = {"description": "OK", "content": {"application/json": {"schema": reply}}}
    op: dict[str, Any] = {
        "operationId": route.name,
        "tags": ["GatewayService"],
        "summary": f"GatewayService.{route.name}",
        "description": schemas.comments.get(route.rpc.full_name, ""),
        "parameters": _parameters(route, schemas),
        "responses": {
            "200": ok,
            "default": {
                "description": "An error (HTTP status per gRPC transcoding).",
                "content": error,
            },
        },
    }
    if route.client_streaming:
        header_type = route.rpc.input_type.fields_by_name["header"].message_type
        assert header_type is not None  # GatewayServiceUploadHeader
        header = schemas.message(header_type)
        op["requestBody"] = {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file"],
                        "properties": {
                            "metadata": {
                                "type": "string",
                                "contentMediaType": "application/json",
                                "description": "JSON of the upload header (the first stream "
                                "message): " + header["$ref"].rpartition("/")[2],
                            },
                            "file": {"type": "string", "contentEncoding": "binary"},
                        },
                    }
                }
            },
        }
    elif route.body == "*":
        op["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {
                    "schema": schemas.message(route.rpc.input_type, route.path_fields)
                }
            },
        }
    return op


def openapi_document(
    routes: Sequence[HttpRoute], comments: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The document for ``routes`` (the face's own)."""
    schemas = _Schemas(comments or {})
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.template, {})[route.verb.lower()] = _operation(route, schemas)
    schemas.schemas[STATUS_SCHEMA] = _status_schema()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Tandem API",
            "version": "v1",
            "description": schemas.comments.get(SERVICE.full_name, "")
            + "\n\nHTTP/JSON transcoding of the gRPC API (google.api.http): the same "
            "keys, scopes, quotas, deadlines and errors.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.schemas.items())),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Authorization: Bearer <api key>",
                }
            },
        },
    }


def render(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False).encode() + b"\n"
