"""Resolving a full RPC name to its descriptors and turning JSON call data into bytes.

The driver needs no ``.proto`` files and no server reflection: every generated module
under ``tandem.v1`` (plus the standard health service) is imported once, which registers
its descriptors in the default pool, and messages are built from that pool.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pool, json_format, message, message_factory

_CALL = re.compile(r"^(?P<service>[A-Za-z_][\w.]*)[./](?P<method>[A-Za-z_]\w*)$")
_TEMPLATE = re.compile(r"\{\{\s*\.(RequestNumber|WorkerID|UUID)\s*\}\}")
_EXTRA_MODULES = ("grpc_health.v1.health_pb2",)
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class LoadConfigError(ValueError):
    """The call, data or metadata given to the driver is unusable; the message says why."""


@dataclass(frozen=True)
class MethodInfo:
    """One RPC as the driver calls it: its wire path, message classes and streaming shape."""

    full_name: str
    path: str
    request_class: type[message.Message]
    response_class: type[message.Message]
    client_streaming: bool
    server_streaming: bool


_loaded = False


def _load_generated() -> None:
    global _loaded  # noqa: PLW0603 - importing the generated modules is a one-time side effect
    if _loaded:
        return
    package = importlib.import_module("tandem.v1")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.endswith("_pb2"):
            importlib.import_module(f"tandem.v1.{info.name}")
    for name in _EXTRA_MODULES:
        importlib.import_module(name)
    _loaded = True


def resolve_method(call: str) -> MethodInfo:
    """``package.Service.Method`` or ``package.Service/Method`` (ghz's two forms)."""
    match = _CALL.match(call.strip().lstrip("/"))
    if match is None:
        raise LoadConfigError(
            f"--call {call!r} must be 'package.Service.Method' or 'package.Service/Method'"
        )
    service_name, method_name = match["service"], match["method"]
    _load_generated()
    pool = descriptor_pool.Default()
    try:
        service = pool.FindServiceByName(service_name)
    except KeyError:
        raise LoadConfigError(f"unknown service {service_name!r} in --call {call!r}") from None
    method = service.methods_by_name.get(method_name)
    if method is None:
        known = ", ".join(sorted(service.methods_by_name))
        raise LoadConfigError(
            f"service {service_name} has no method {method_name!r} (it has: {known})"
        )
    return MethodInfo(
        full_name=f"{service_name}.{method_name}",
        path=f"/{service_name}/{method_name}",
        request_class=message_factory.GetMessageClass(method.input_type),
        response_class=message_factory.GetMessageClass(method.output_type),
        client_streaming=method.client_streaming,
        server_streaming=method.server_streaming,
    )


def parse_json_argument(raw: str, what: str) -> Any:
    """Parses a JSON option value, naming the option when it is malformed."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LoadConfigError(f"{what} is not valid JSON: {exc}") from None


def _substitute(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: values[m.group(1)], value)
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    return value


def _has_template(value: Any) -> bool:
    return _TEMPLATE.search(json.dumps(value)) is not None


class RequestFactory:
    """Serialised request bytes for request number *n* from worker *w*.

    Data is one JSON object or an array of them; an array is used round-robin, one
    element per request (as ghz does). String values may hold ghz's
    ``{{.RequestNumber}}``, ``{{.WorkerID}}`` and ``{{.UUID}}``; without them every
    request is serialised once, up front, so building requests costs nothing under load.
    """

    def __init__(self, method: MethodInfo, data: Any) -> None:
        if data is None:
            data = {}
        items: Sequence[Any] = data if isinstance(data, list) else [data]
        if not items:
            raise LoadConfigError("--data is an empty array; give at least one message")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise LoadConfigError(f"--data item {index} must be a JSON object")
            self._parse(method, item, index)  # fail fast on field names and enum values
        self._method = method
        self._items = list(items)
        self._templated = [_has_template(item) for item in self._items]
        self._fixed = [
            None if templated else self._parse(method, item, i).SerializeToString()
            for i, (item, templated) in enumerate(zip(self._items, self._templated, strict=True))
        ]

    @staticmethod
    def _parse(method: MethodInfo, item: Mapping[str, Any], index: int) -> message.Message:
        try:
            return json_format.ParseDict(dict(item), method.request_class())
        except json_format.ParseError as exc:
            name = method.request_class.DESCRIPTOR.full_name
            raise LoadConfigError(f"--data item {index} does not fit {name}: {exc}") from None

    def build(self, request_number: int, worker_id: str) -> bytes:
        slot = request_number % len(self._items)
        fixed = self._fixed[slot]
        if fixed is not None:
            return fixed
        values = {
            "RequestNumber": str(request_number),
            "WorkerID": worker_id,
            "UUID": str(uuid.uuid4()),
        }
        item = _substitute(self._items[slot], values)
        return self._parse(self._method, item, slot).SerializeToString()


def _expand(value: str, environ: Mapping[str, str]) -> str:
    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise LoadConfigError(f"metadata refers to ${{{name}}}, which is not set")
        return environ[name]

    return _ENV_REF.sub(lookup, value)


def parse_metadata(
    raw: Any, environ: Mapping[str, str] | None = None
) -> tuple[tuple[str, str], ...]:
    """Metadata as a JSON object of strings; keys are lower-cased as HTTP/2 requires.

    ``${NAME}`` in a value is replaced by that environment variable (an extension over
    ghz, so a config file can say ``"Bearer ${TANDEM_API_KEY}"`` without holding a key).
    """
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise LoadConfigError('--metadata must be a JSON object of strings, e.g. {"k": "v"}')
    env = os.environ if environ is None else environ
    return tuple((k.lower(), _expand(v, env)) for k, v in raw.items())
