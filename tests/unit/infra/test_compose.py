"""The compose file and the collector config parse and wire the services together."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.unit.infra.conftest import (
    BY_NAME,
    CALL_GRAPH,
    INFRA,
    PYTHON_SERVICES,
    SERVICES,
    TLS_DIR,
    Deployed,
    probe_command,
)


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((INFRA / "compose.yaml").read_text())
    return loaded


def test_compose_has_every_service_postgres_collector_and_jaeger() -> None:
    services = _compose()["services"]

    assert set(services) == {s.name for s in SERVICES} | {
        "certs", "postgres", "otel-collector", "jaeger",
    }  # fmt: skip
    assert services["postgres"]["image"] == "pgvector/pgvector:pg16"
    assert services["jaeger"]["image"].startswith("jaegertracing/all-in-one:")
    assert services["otel-collector"]["image"].startswith("otel/opentelemetry-collector")


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_each_service_builds_its_dockerfile_and_listens_on_its_port(service: Deployed) -> None:
    port = service.default_port()
    spec = _compose()["services"][service.name]
    env = spec["environment"]

    assert (INFRA / spec["build"]["context"] / spec["build"]["dockerfile"]).resolve() == (
        INFRA / "docker" / f"{service.name}.Dockerfile"
    ).resolve()
    assert env[f"{service.prefix}_PORT"] == str(port)
    assert env[f"{service.prefix}_HOST"] == "0.0.0.0"
    assert spec["healthcheck"]["test"] == ["CMD", *probe_command(service, port)]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4317"


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_each_service_mounts_only_its_own_certificate_bundle_once_issued(
    service: Deployed,
) -> None:
    services = _compose()["services"]
    spec = services[service.name]
    (mount,) = [v for v in spec["volumes"] if isinstance(v, dict) and v["source"] == "tls"]
    assert mount == {
        "type": "volume", "source": "tls", "target": TLS_DIR, "read_only": True,
        "volume": {"subpath": service.name},
    }  # fmt: skip
    assert spec["depends_on"]["certs"] == {"condition": "service_completed_successfully"}
    certs = services["certs"]
    assert certs["command"] == ["tandem", "certs", "issue", TLS_DIR, "--split"]
    assert certs["volumes"] == [f"tls:{TLS_DIR}"]


def test_addresses_follow_the_call_graph() -> None:
    services = _compose()["services"]
    edges = set()
    for caller in SERVICES:
        env = services[caller.name]["environment"]
        for callee in SERVICES:
            address = env.get(f"{callee.prefix}_ADDR")
            if address is not None:
                # A service that may run as replicas is dialled through DNS, which returns
                # every replica: the caller's channel balances over them and health-checks
                # each (`--scale`); the embedding service is one.
                scheme = "dns:///" if callee.name in {"retrieval", "sql", "router"} else ""
                assert address == f"{scheme}{callee.name}:{callee.default_port()}"
                edges.add((caller.name, callee.name))
        if "@postgres:5432/" in env.get("DATABASE_URL", ""):
            edges.add((caller.name, "postgres"))
    # nginx names its callees as host:port: the gateway and the HTTP face.
    for upstream in ("EDGE_UPSTREAM", "EDGE_REST_UPSTREAM"):
        host, _, port = services["edge"]["environment"][upstream].rpartition(":")
        assert port == str(BY_NAME[host].default_port())
        edges.add(("edge", host))
    assert edges == set(CALL_GRAPH)
    # Every callee a service depends on is started (healthy) before it.
    for source, dest in CALL_GRAPH:
        depends = services[source].get("depends_on", {})
        assert dest in depends, f"{source} should wait for {dest}"


def test_only_the_edge_and_gateway_are_published_and_secrets_come_from_the_environment() -> None:
    services = _compose()["services"]

    assert services["edge"]["ports"] == ["${TANDEM_EDGE_PORT:-50050}:50050"]
    assert services["gateway"]["ports"] == ["${TANDEM_PORT:-50051}:50051"]
    for name in ("embedding", "retrieval", "sql", "router", "postgres"):
        assert "ports" not in services[name]
    assert services["gateway"]["environment"]["GATEWAY_KEY_PEPPER"].startswith(
        "${GATEWAY_KEY_PEPPER:?"
    )
    for service in SERVICES:
        assert services[service.name]["read_only"] is True


def test_mounted_files_exist() -> None:
    services = _compose()["services"]
    for name in ("postgres", "otel-collector", "edge"):
        for volume in services[name]["volumes"]:
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (INFRA / source).is_file(), source


def test_collector_receives_otlp_limits_memory_batches_and_exports_to_jaeger() -> None:
    config = yaml.safe_load((INFRA / "otel-collector.yaml").read_text())
    traces = config["service"]["pipelines"]["traces"]

    assert config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":4317")
    assert traces["receivers"] == ["otlp"]
    # memory_limiter must be first to protect everything after it.
    assert traces["processors"][0] == "memory_limiter"
    assert "batch" in traces["processors"]
    for name in traces["processors"]:
        assert name in config["processors"]
    (exporter,) = traces["exporters"]
    assert exporter.split("/")[0] == "otlp"
    host = config["exporters"][exporter]["endpoint"].split(":")[0]
    assert host in _compose()["services"]
