"""Discovery of every v1 service from the generated code, for descriptor-driven tests."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from google.protobuf.descriptor import ServiceDescriptor

import tandem.v1


def pb2_modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"tandem.v1.{info.name}")
        for info in pkgutil.iter_modules(tandem.v1.__path__)
        if info.name.endswith("_pb2")
    ]


def services() -> list[tuple[ServiceDescriptor, ModuleType]]:
    """Every service in package tandem.v1 with its ``_pb2_grpc`` module."""
    found = []
    for module in pb2_modules():
        for service in module.DESCRIPTOR.services_by_name.values():
            grpc_module = importlib.import_module(f"{module.__name__}_grpc")
            found.append((service, grpc_module))
    return sorted(found, key=lambda pair: pair[0].full_name)


def rpc_names() -> set[str]:
    """``tandem.v1.XService/Method`` for every RPC."""
    return {f"{s.full_name}/{m.name}" for s, _ in services() for m in s.methods}
