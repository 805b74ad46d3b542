"""scripts/k8s_play.py, the rendering scripts/k8s-play.sh feeds to `podman kube play`: it
renders what kustomize renders, and changes for podman only what infra/README.md
("Kubernetes manifests, played") lists."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.unit.infra.conftest import (
    INFRA,
    PYTHON_SERVICES,
    ROOT,
    SERVICES,
    kustomize_build,
)

SCRIPT = ROOT / "scripts" / "k8s_play.py"


@pytest.fixture(scope="module")
def k8s_play() -> ModuleType:
    spec = importlib.util.spec_from_file_location("k8s_play", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["k8s_play"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rendered(k8s_play: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("k8s-play")
    for service in PYTHON_SERVICES:
        folder = tmp / "tls" / service.name
        folder.mkdir(parents=True)
        for name in ("ca.pem", f"{service.name}.pem", f"{service.name}.key", "gateway.pem"):
            (folder / name).write_text(f"-----BEGIN TEST-----\n{service.name}/{name}\n")
    args = argparse.Namespace(
        out=str(tmp / "out"),
        secrets=str(tmp / "secrets"),
        tls=str(tmp / "tls"),
        kustomized=None,
        replicas=0,
    )
    assert k8s_play.render(args) == 0
    return tmp


def _plan(rendered: Path) -> dict[str, Any]:
    plan: dict[str, Any] = json.loads((rendered / "out" / "plan.json").read_text())
    return plan


def _deployment(rendered: Path, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((rendered / "out" / f"tandem-k8s-{name}.yaml").read_text())
    return doc


def test_the_rendering_equals_kustomize(k8s_play: ModuleType, tmp_path: Path) -> None:
    docs = kustomize_build()  # skips without kubectl
    kustomized = tmp_path / "kustomized.yaml"
    kustomized.write_text(yaml.safe_dump_all(docs))
    assert k8s_play.compare_with_kustomize(k8s_play.kustomize(INFRA / "k8s"), kustomized) == []


def test_the_generated_config_map_is_named_and_referenced(k8s_play: ModuleType) -> None:
    docs = k8s_play.kustomize(INFRA / "k8s")
    (cm,) = [
        d
        for d in docs
        if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("tandem-edge-")
    ]
    suffix = cm["metadata"]["name"].removeprefix("tandem-edge-")
    assert len(suffix) == 10 and not set(suffix) & set("013ae")
    assert cm["metadata"]["namespace"] == "tandem"
    (edge,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "edge"]
    volumes = edge["spec"]["template"]["spec"]["volumes"]
    assert {"name": "template", "configMap": {"name": cm["metadata"]["name"]}} in volumes


def test_every_deployment_is_played_in_dependency_order(rendered: Path) -> None:
    plan = _plan(rendered)
    names = [d["name"] for d in plan["deployments"]]
    assert names == [
        "postgres", "embedding", "retrieval", "sql", "router", "gateway", "rest", "edge",
    ]  # fmt: skip
    manifests = {
        s.name: yaml.safe_load_all((INFRA / "k8s" / f"{s.name}.yaml").read_text()) for s in SERVICES
    }
    for d in plan["deployments"]:
        assert f"{d['name']}.tandem.svc.cluster.local" in d["aliases"]
        if d["name"] in manifests:
            (spec,) = [m for m in manifests[d["name"]] if m["kind"] == "Deployment"]
            assert d["replicas"] == spec["spec"]["replicas"]
            assert d["pods"] == [f"tandem-k8s-{d['name']}-pod-{i}" for i in range(d["replicas"])]


def test_only_the_listed_adaptations(rendered: Path) -> None:
    for service in SERVICES:
        original = next(
            d
            for d in yaml.safe_load_all((INFRA / "k8s" / f"{service.name}.yaml").read_text())
            if d["kind"] == "Deployment"
        )
        played = _deployment(rendered, service.name)
        (before,) = original["spec"]["template"]["spec"]["containers"]
        (after,) = played["spec"]["template"]["spec"]["containers"]
        assert played["metadata"]["name"] == f"tandem-k8s-{service.name}"
        assert after["image"].startswith("localhost/tandem/") and after["image"].endswith(":dev")
        assert "ports" not in after  # podman 4.3 would publish each on the host
        for kind in (
            "startupProbe",
            "readinessProbe",
            "livenessProbe",
            "resources",
            "securityContext",
            "command",
            "envFrom",
        ):
            assert after.get(kind) == before.get(kind), kind
        assert (
            played["spec"]["template"]["spec"]["securityContext"]
            == (original["spec"]["template"]["spec"]["securityContext"])
        )
        values = {e["name"]: e.get("value") for e in after.get("env", [])}
        assert values == {e["name"]: e.get("value") for e in before.get("env", [])}
        for env in after.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert ref["name"] == "tandem-k8s-secrets"
        for volume in played["spec"]["template"]["spec"]["volumes"]:
            assert volume["name"].startswith(f"tandem-k8s-{service.name}-")
            if "secret" in volume:
                assert volume["secret"]["secretName"] == f"tandem-k8s-tls-{service.name}"
                assert volume["secret"]["optional"] is False
        mounts = {m["mountPath"]: m for m in after["volumeMounts"]}
        if service.name == "edge":
            assert "subPath" not in mounts["/etc/nginx/templates"]
        elif service.name != "rest":  # the HTTP face calls the gateway's plaintext port
            assert mounts["/etc/tandem/tls"]["readOnly"] is True


def test_secrets_hold_real_values(rendered: Path) -> None:
    import base64

    placeholders = next(
        d for d in yaml.safe_load_all((INFRA / "k8s" / "secrets.yaml").read_text()) if d
    )
    values = {
        k: base64.b64decode(v).decode()
        for k, v in json.loads(
            (rendered / "secrets" / "tandem-k8s-secrets.json").read_text()
        ).items()
    }
    assert set(values) == set(placeholders["stringData"])
    assert not any("REPLACE_ME" in v for v in values.values())
    assert len(values["gateway-key-pepper"]) >= 32
    assert "@postgres.tandem.svc.cluster.local:5432/tandem" in values["database-url"]
    for service in PYTHON_SERVICES:
        secret = yaml.safe_load(
            (rendered / "secrets" / f"tandem-k8s-tls-{service.name}.yaml").read_text()
        )
        # Verbatim file text: podman 4.3 writes data values into the volume as they are.
        assert secret["data"]["ca.pem"] == f"-----BEGIN TEST-----\n{service.name}/ca.pem\n"
    config = yaml.safe_load((rendered / "out" / "configmap-tandem-config.yaml").read_text())
    assert config["data"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == ""


def test_the_script_keeps_to_its_names_and_ports() -> None:
    script = (ROOT / "scripts" / "k8s-play.sh").read_text()
    assert "PREFIX=tandem-k8s" in script
    assert "K8S_PLAY_PORT:-59050" in script
    assert "scripts/container_smoke.py" in script
    assert 'grep "^$PREFIX-"' in script  # cleans up only its own objects
