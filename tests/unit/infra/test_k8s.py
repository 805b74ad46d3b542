"""Kubernetes manifests: they parse, name real entry points and ports, probe over gRPC,
bound resources, autoscale, and the NetworkPolicies allow exactly the call graph."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.unit.infra.conftest import (
    CALL_GRAPH,
    INFRA,
    MTLS_SERVICES,
    PYTHON_SERVICES,
    SERVICES,
    TLS_DIR,
    Deployed,
    kustomize_build,
    probe_command,
)

K8S = INFRA / "k8s"
INTERNAL = {"embedding", "retrieval", "sql", "router"}
DATABASE_BACKED = {
    "retrieval": "tandem.v1.RetrievalService",
    "sql": "tandem.v1.SqlService",
    "gateway": "tandem.v1.GatewayService",
}


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def _all_docs() -> Iterator[dict[str, Any]]:
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            yield from _docs(path.name)


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


def test_every_manifest_parses_with_known_kinds_in_the_namespace() -> None:
    kinds = set()
    for doc in _all_docs():
        kinds.add(doc["kind"])
        assert doc["apiVersion"]
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "tandem"
    assert kinds == {
        "Namespace", "ConfigMap", "Secret", "Deployment", "Service",
        "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy",
    }  # fmt: skip


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_deployment_runs_the_module_on_its_port_with_grpc_probes(service: Deployed) -> None:
    port = service.default_port()
    docs = _docs(f"{service.name}.yaml")
    deployment = _one(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}

    assert {d["kind"] for d in docs} == {
        "Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
    }  # fmt: skip
    assert container["command"] == ["python", "-m", service.module]
    assert importlib.util.find_spec(f"{service.module}.__main__") is not None
    assert container["image"].startswith(f"tandem/{service.name}:")
    assert container["ports"] == [{"name": "grpc", "containerPort": port, "protocol": "TCP"}]
    assert env[f"{service.prefix}_PORT"] == str(port)
    assert env[f"{service.prefix}_HOST"] == "0.0.0.0"
    # Services with a database report readiness under their own name, which follows it.
    named = DATABASE_BACKED.get(service.name)
    if service.name in MTLS_SERVICES:
        # The kubelet's gRPC probe cannot present a certificate: the probe script can.
        probe = probe_command(service, port)
        for kind in ("startupProbe", "livenessProbe"):
            assert container[kind] == {**container[kind], "exec": {"command": probe}}, kind
        ready = [*probe[:4], *(["--service", named] if named else []), *probe[4:]]
        assert container["readinessProbe"]["exec"] == {"command": ready}
    else:
        for kind in ("startupProbe", "livenessProbe"):
            assert container[kind]["grpc"] == {"port": port}, kind
        readiness: dict[str, object] = {"port": port}
        if named:
            readiness["service"] = named
        assert container["readinessProbe"]["grpc"] == readiness
    # Its own certificate bundle, from its own secret, where the service reads it.
    assert env["TANDEM_TLS_DIR"] == TLS_DIR
    assert {"name": "tls", "mountPath": TLS_DIR, "readOnly": True} in container["volumeMounts"]
    (tls,) = [v for v in pod["volumes"] if v["name"] == "tls"]
    assert tls["secret"] == {"secretName": f"tandem-tls-{service.name}", "defaultMode": 0o440}
    for bound in ("requests", "limits"):
        assert set(container["resources"][bound]) == {"cpu", "memory"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    # Drain (GRPC_GRACE_PERIOD_S=10) plus preStop fits in the termination grace period.
    assert pod["terminationGracePeriodSeconds"] > 15


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_service_hpa_and_pdb_select_the_deployment(service: Deployed) -> None:
    port = service.default_port()
    docs = _docs(f"{service.name}.yaml")
    deployment = _one(docs, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    svc, hpa, pdb = (
        _one(docs, k) for k in ("Service", "HorizontalPodAutoscaler", "PodDisruptionBudget")
    )

    assert svc["spec"]["selector"].items() <= labels.items()
    assert svc["spec"]["ports"][0]["port"] == port
    # Internal services are headless so callers balance per call over every pod.
    assert (svc["spec"].get("clusterIP") == "None") == (service.name in INTERNAL)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1", "kind": "Deployment", "name": service.name,
    }  # fmt: skip
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert hpa["spec"]["minReplicas"] >= 2
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert deployment["spec"]["replicas"] >= hpa["spec"]["minReplicas"]


def test_addresses_point_at_the_callees_services() -> None:
    for caller in SERVICES:
        (container,) = _one(_docs(f"{caller.name}.yaml"), "Deployment")["spec"]["template"]["spec"][
            "containers"
        ]
        env = {e["name"]: e.get("value") for e in container["env"]}
        for callee in SERVICES:
            address = env.get(f"{callee.prefix}_ADDR")
            if address is None:
                continue
            assert (caller.name, callee.name) in CALL_GRAPH
            assert address == (
                f"dns:///{callee.name}.tandem.svc.cluster.local:{callee.default_port()}"
            )


def test_every_secret_reference_exists() -> None:
    (secret,) = [d for d in _all_docs() if d["kind"] == "Secret"]
    keys = set(secret["stringData"])
    referenced = set()
    for doc in _all_docs():
        if doc["kind"] != "Deployment":
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == secret["metadata"]["name"]
                    referenced.add(ref["key"])
    assert {"gateway-key-pepper", "gemini-api-key"} <= referenced <= keys


# The label CloudNativePG gives the pods of the Cluster (infra/k8s/postgres/cluster.yaml).
POSTGRES_PODS = {"cnpg.io/cluster": "tandem-pg"}


def _app(selector: dict[str, Any]) -> str | None:
    labels = selector.get("matchLabels", {})
    if labels == POSTGRES_PODS:
        return "postgres"
    name: str | None = labels.get("app.kubernetes.io/name")
    return name


def test_network_policies_allow_exactly_the_call_graph() -> None:
    policies = _docs("networkpolicies.yaml")
    ingress_edges, egress_edges = set(), set()
    for policy in policies:
        spec = policy["spec"]
        target = _app(spec["podSelector"])
        for rule in spec.get("ingress", []):
            for peer in rule.get("from", []):
                source = _app(peer.get("podSelector", {}))
                if target and source:
                    ingress_edges.add((source, target))
        for rule in spec.get("egress", []):
            for peer in rule.get("to", []):
                dest = _app(peer.get("podSelector", {}))
                if target and dest:
                    egress_edges.add((target, dest))
    telemetry = {(s.name, "otel-collector") for s in PYTHON_SERVICES}
    # The Cluster's instances replicate to each other, and the CloudNativePG operator (its
    # own namespace: test_k8s_postgres.py checks which) reaches them.
    replication = {("postgres", "postgres")}
    operator = {("cloudnative-pg", "postgres")}

    assert ingress_edges == set(CALL_GRAPH) | replication | operator
    assert egress_edges == set(CALL_GRAPH) | telemetry | replication
    deny = next(p for p in policies if p["metadata"]["name"] == "default-deny")
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def test_ingress_ports_are_the_callees_ports() -> None:
    ports = {s.name: s.default_port() for s in SERVICES} | {"postgres": 5432}
    for policy in _docs("networkpolicies.yaml"):
        target = _app(policy["spec"]["podSelector"])
        if target not in ports:
            continue
        for rule in policy["spec"].get("ingress", []):
            expected = [ports[target]]
            if target == "postgres" and any("namespaceSelector" in p for p in rule["from"]):
                expected = [8000, 5432]  # the CloudNativePG operator: instance manager, Postgres
            assert [p["port"] for p in rule["ports"]] == expected


def test_kustomize_renders_every_object() -> None:
    rendered = kustomize_build()
    generated = yaml.safe_load((K8S / "kustomization.yaml").read_text())["configMapGenerator"]
    assert len(rendered) == len(list(_all_docs())) + len(generated)
