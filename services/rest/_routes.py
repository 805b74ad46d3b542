"""The HTTP routes, read from the ``google.api.http`` options of GatewayService's
generated descriptors: the annotations in protos/tandem/v1/gateway_service.proto are the
one route table (a hand-written one would drift from them). Built once at start.

Templates follow gRPC transcoding's grammar as far as the gateway uses it: literal
segments, ``{field}`` / ``{field=*}`` variables (one segment, no ``/``) and a ``:verb``
suffix (``/v1:ask``, ``/v1/documents:upload``). Anything else is refused at start."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor, message, message_factory

from tandem.v1 import gateway_service_pb2

SERVICE = gateway_service_pb2.DESCRIPTOR.services_by_name["GatewayService"]
_VERBS = ("get", "put", "post", "delete", "patch")
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)(?:=\*)?\}")
_SEGMENT = re.compile(r"[A-Za-z0-9_.~-]+")


class RouteError(ValueError):
    """An RPC without a usable ``google.api.http`` option."""


@dataclass(frozen=True)
class HttpRoute:
    """One RPC's HTTP binding: verb, template, which fields come from the path and
    whether the rest come from the body (``*``) or the query string."""

    rpc: descriptor.MethodDescriptor
    verb: str  # upper case
    template: str
    pattern: re.Pattern[str]
    path_fields: tuple[str, ...]
    body: str  # "*" or "" (no other form is used)
    request: type[message.Message]
    response: type[message.Message]

    @property
    def name(self) -> str:
        return self.rpc.name

    @property
    def method(self) -> str:
        """The gRPC method path the route calls on the gateway."""
        return f"/{SERVICE.full_name}/{self.rpc.name}"

    @property
    def server_streaming(self) -> bool:
        return bool(self.rpc.server_streaming)

    @property
    def client_streaming(self) -> bool:
        return bool(self.rpc.client_streaming)

    def match(self, path: str) -> dict[str, str] | None:
        """The path variables when ``path`` fits the template (percent-decoded)."""
        found = self.pattern.fullmatch(path)
        if found is None:
            return None
        return {
            name: unquote(value)
            for name, value in zip(self.path_fields, found.groups(), strict=True)
        }


def rule_of(rpc: descriptor.MethodDescriptor) -> http_pb2.HttpRule | None:
    """The RPC's ``google.api.http`` option, None when it has none."""
    options = rpc.GetOptions()
    if not options.HasExtension(annotations_pb2.http):
        return None
    return options.Extensions[annotations_pb2.http]


def _compile(template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    if not template.startswith("/"):
        raise RouteError(f"template {template!r} does not start with '/'")
    path, verb = template[1:], ""
    last = path.rsplit("/", 1)[-1]
    if ":" in last and not last.endswith("}"):
        # A verb follows the last segment (``/v1:ask``); variables hold no ':'.
        path, _, verb = path.rpartition(":")
    regex, fields = [], []
    for segment in path.split("/"):
        variable = _VARIABLE.fullmatch(segment)
        if variable:
            fields.append(variable.group(1))
            regex.append("([^/:]+)")
        elif _SEGMENT.fullmatch(segment):
            regex.append(re.escape(segment))
        else:
            raise RouteError(f"template {template!r}: unsupported segment {segment!r}")
    suffix = ""
    if verb:
        if not _SEGMENT.fullmatch(verb):
            raise RouteError(f"template {template!r}: unsupported verb {verb!r}")
        suffix = re.escape(":" + verb)
    return re.compile("/" + "/".join(regex) + suffix), tuple(fields)


def route_of(rpc: descriptor.MethodDescriptor) -> HttpRoute:
    """The HTTP binding of ``rpc``; RouteError when it has none or an unusable one."""
    rule = rule_of(rpc)
    if rule is None:
        raise RouteError(f"{rpc.full_name} has no google.api.http option")
    kind = rule.WhichOneof("pattern")
    if kind not in _VERBS:
        raise RouteError(f"{rpc.full_name}: unsupported http pattern {kind!r}")
    if rule.body not in ("", "*") or rule.additional_bindings:
        raise RouteError(f"{rpc.full_name}: only body '*' or none, no additional bindings")
    template = getattr(rule, kind)
    pattern, fields = _compile(template)
    for name in fields:
        if name not in rpc.input_type.fields_by_name:
            raise RouteError(f"{rpc.full_name}: path variable {name!r} is not a request field")
    return HttpRoute(
        rpc=rpc,
        verb=kind.upper(),
        template=template,
        pattern=pattern,
        path_fields=fields,
        body=rule.body,
        request=message_factory.GetMessageClass(rpc.input_type),
        response=message_factory.GetMessageClass(rpc.output_type),
    )


def gateway_routes(
    rpcs: Iterable[descriptor.MethodDescriptor] | None = None,
) -> tuple[HttpRoute, ...]:
    """Every GatewayService RPC's route (all must have one: an RPC left out of the HTTP
    face would be a silent gap, so a missing option fails the start)."""
    return tuple(route_of(rpc) for rpc in (SERVICE.methods if rpcs is None else rpcs))


def find(
    routes: Sequence[HttpRoute], verb: str, path: str
) -> tuple[HttpRoute, dict[str, str]] | str:
    """The route for ``verb path`` and its path variables; else ``"not_found"`` or
    ``"method_not_allowed"`` (the path fits another verb's template)."""
    other = False
    for route in routes:
        found = route.match(path)
        if found is None:
            continue
        if route.verb == verb:
            return route, found
        other = True
    return "method_not_allowed" if other else "not_found"
