"""Which calls get spans: probes (health, reflection) never, every other call always —
the verdict of the instrumentation's own filters, on server and client call details."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import grpc
import pytest
from opentelemetry.instrumentation.grpc import filters

from services.common._telemetry import UNTRACED_SERVICES, _traced_filter

_Handler = namedtuple("_Handler", ["method", "invocation_metadata"])
METHODS = [
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    "/tandem.v1.GatewayService/Search",
    "/tandem.v1.RetrievalService/Search",
    "/grpc.health.v1.HealthX/Check",
    "/Check",
]


def _reference(details: Any) -> bool:
    return not filters.any_of(*(filters.service_name(s) for s in UNTRACED_SERVICES))(details)


@pytest.mark.parametrize("method", METHODS)
def test_the_verdict_is_the_instrumentations_for_server_and_client_calls(method: str):
    traced = _traced_filter()
    server = _Handler(method, ())
    # grpc hands client interceptors the method as bytes (grpc/grpc#31092).
    client = grpc.aio.ClientCallDetails(method.encode(), None, None, None, None)  # type: ignore[arg-type]
    assert traced(server) is _reference(server)
    assert traced(client) is _reference(client)
    assert traced(server) is (method.split("/")[1] not in UNTRACED_SERVICES)
