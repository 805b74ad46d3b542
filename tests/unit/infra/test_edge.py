"""The edge in compose and Kubernetes: the stock nginx image fills the one template from
environment variables, so those must be exactly what ``gateway.edge`` computes for the
gateway's quota, name the gateway's port, and make a configuration nginx accepts."""

from __future__ import annotations

import re
import string
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import gateway.edge
from gateway._settings import DEFAULT_PORT as GATEWAY_PORT
from gateway.edge import EdgeSettings, main_config, nginx_binary, render, template_variables
from services.rest import DEFAULT_PORT as REST_PORT
from tests.unit.infra.conftest import INFRA, ROOT, kustomize_build

K8S = INFRA / "k8s"
TEMPLATES = "/etc/nginx/templates"
# Where the image's entrypoint writes the filled-in template, and its pid and temp files.
WRITABLE = {"/etc/nginx/conf.d", "/tmp"}
DEPLOYMENTS = ("compose", "k8s")


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((INFRA / "compose.yaml").read_text())
    return loaded


def _k8s(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def _k8s_pod(name: str) -> dict[str, Any]:
    (deployment,) = [d for d in _k8s(f"{name}.yaml") if d["kind"] == "Deployment"]
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _k8s_container(name: str) -> dict[str, Any]:
    container: dict[str, Any]
    (container,) = _k8s_pod(name)["containers"]
    return container


def _compose_value(value: object) -> str:
    """A compose value as it is with nothing set in the shell: ``${X:-d}`` is ``d``."""
    text = str(value)
    default = re.fullmatch(r"\$\{\w+:-(.*)\}", text)
    return default.group(1) if default else text


def _envs(deployment: str) -> tuple[dict[str, str], dict[str, str]]:
    """The edge's and the gateway's environment in one deployment, by default."""
    if deployment == "compose":
        services = _compose()["services"]
        edge, gateway_env = (
            {k: _compose_value(v) for k, v in services[n]["environment"].items()}
            for n in ("edge", "gateway")
        )
        return edge, gateway_env
    (config,) = _k8s("config.yaml")
    edge = {e["name"]: e["value"] for e in _k8s_container("edge")["env"]}
    # The gateway reads tandem-config (envFrom) and then its own env.
    gateway_env = {str(k): str(v) for k, v in config["data"].items()} | {
        e["name"]: e["value"] for e in _k8s_container("gateway")["env"] if "value" in e
    }
    return edge, gateway_env


def _settings(gateway_env: dict[str, str], playground_dir: str) -> EdgeSettings:
    """What ``gateway.edge`` derives from this gateway's quota, forwarding to its port and
    serving the playground from the deployment's directory."""
    quota = {k: v for k, v in gateway_env.items() if k in ("GATEWAY_RATE_PER_S", "GATEWAY_BURST")}
    return EdgeSettings.from_env(
        {
            **quota,
            "GATEWAY_ADDR": f"gateway:{GATEWAY_PORT}",
            "REST_ADDR": f"rest:{REST_PORT}",
            "EDGE_PLAYGROUND_DIR": playground_dir,
        }
    )


def _template_names(text: str) -> set[str]:
    return {
        name
        for match in string.Template.pattern.finditer(text)
        if (name := match.group("braced") or "").startswith("EDGE_")
    }


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_the_edge_environment_is_what_gateway_edge_computes(deployment: str) -> None:
    edge, gateway_env = _envs(deployment)
    settings = _settings(gateway_env, edge["EDGE_PLAYGROUND_DIR"])

    assert {k: v for k, v in edge.items() if k.startswith("EDGE_")} == template_variables(
        settings, "/dev/stdout"
    )
    # envsubst fills only EDGE_* (as render does); nothing else is set for nginx.
    assert {k: v for k, v in edge.items() if not k.startswith("EDGE_")} == {
        "NGINX_ENVSUBST_FILTER": "^EDGE_"
    }
    # At least the gateway's quota: the edge never refuses what the gateway would admit.
    assert int(edge["EDGE_RATE"].removesuffix("r/m")) >= settings.quota_rate_per_s * 60


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_every_template_variable_is_defined(deployment: str) -> None:
    names = _template_names(gateway.edge.TEMPLATE.read_text(encoding="utf-8"))
    edge, _ = _envs(deployment)

    assert names == set(template_variables(EdgeSettings(), "/dev/stdout"))
    assert names == {k for k in edge if k.startswith("EDGE_")}


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_the_edge_listens_on_its_port_and_forwards_to_the_gateways(deployment: str) -> None:
    edge, _ = _envs(deployment)

    assert edge["EDGE_LISTEN"] == f"0.0.0.0:{gateway.edge.DEFAULT_PORT}"
    assert edge["EDGE_UPSTREAM"] == f"gateway:{GATEWAY_PORT}"
    assert edge["EDGE_REST_UPSTREAM"] == f"rest:{REST_PORT}"


def test_compose_publishes_the_edge_port_and_mounts_the_template() -> None:
    edge = _compose()["services"]["edge"]
    mounts = {
        target: (source, mode) for source, target, mode in (v.split(":") for v in edge["volumes"])
    }

    assert [p.split(":")[-1] for p in edge["ports"]] == [str(gateway.edge.DEFAULT_PORT)]
    assert mounts == {
        f"{TEMPLATES}/{gateway.edge.TEMPLATE.name}": (
            "./edge/tandem-edge.conf.template",
            "ro",
        ),
        # The playground page `make web` builds, where the template serves it from.
        edge["environment"]["EDGE_PLAYGROUND_DIR"]: ("../web/playground/dist", "ro"),
    }
    assert (INFRA / "edge/tandem-edge.conf.template").resolve() == gateway.edge.TEMPLATE
    assert (INFRA / "../web/playground/dist").resolve() == gateway.edge.PLAYGROUND_DIR
    assert edge["read_only"] is True
    assert set(edge["tmpfs"]) == WRITABLE
    assert "gateway" in edge["depends_on"]


def test_k8s_serves_the_edge_port_with_tcp_probes() -> None:
    port = gateway.edge.DEFAULT_PORT
    container = _k8s_container("edge")
    (service,) = [d for d in _k8s("edge.yaml") if d["kind"] == "Service"]

    assert container["ports"] == [{"name": "grpc", "containerPort": port, "protocol": "TCP"}]
    assert service["spec"]["ports"][0]["port"] == port
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["tcpSocket"] == {"port": port}, probe
    for bound in ("requests", "limits"):
        assert set(container["resources"][bound]) == {"cpu", "memory"}
    assert _k8s_pod("edge")["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert mounts >= WRITABLE


def test_compose_and_k8s_run_the_nginx_release_make_edge_builds() -> None:
    image = _compose()["services"]["edge"]["image"]
    built = re.search(
        r"^NGINX_VERSION=(\S+)$", (ROOT / "scripts" / "build_edge.sh").read_text(), re.M
    )

    assert built is not None
    assert image == _k8s_container("edge")["image"]
    # Unprivileged: runs as uid 101 and needs no capability for its port.
    assert image == f"nginxinc/nginx-unprivileged:{built.group(1)}-alpine"


def test_the_k8s_config_map_holds_the_template_byte_for_byte() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    (copy,) = generator["files"]
    (volume,) = [v for v in _k8s_pod("edge")["volumes"] if "configMap" in v]
    (mount,) = [m for m in _k8s_container("edge")["volumeMounts"] if m["name"] == volume["name"]]

    # kustomize reads no file outside infra/k8s, so the generator reads a copy; refresh it
    # with `cp infra/edge/tandem-edge.conf.template infra/k8s/` (infra/README.md).
    assert (K8S / copy).read_bytes() == gateway.edge.TEMPLATE.read_bytes()
    assert volume["configMap"]["name"] == generator["name"]
    assert mount["subPath"] == Path(copy).name
    assert mount["mountPath"] == f"{TEMPLATES}/{Path(copy).name}"
    assert mount["readOnly"] is True


def test_kustomize_renders_the_template_into_the_config_map() -> None:
    rendered = kustomize_build()
    (config_map,) = [
        d
        for d in rendered
        if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("tandem-edge-")
    ]
    (deployment,) = [
        d for d in rendered if d["kind"] == "Deployment" and d["metadata"]["name"] == "edge"
    ]
    volumes = deployment["spec"]["template"]["spec"]["volumes"]

    assert config_map["data"] == {
        gateway.edge.TEMPLATE.name: gateway.edge.TEMPLATE.read_text(encoding="utf-8")
    }
    # The hash-suffixed name, so a changed template rolls the pods.
    assert config_map["metadata"]["name"] in [
        v["configMap"]["name"] for v in volumes if "configMap" in v
    ]


def _app(selector: dict[str, Any]) -> str | None:
    name: str | None = selector.get("matchLabels", {}).get("app.kubernetes.io/name")
    return name


def test_only_the_edge_and_the_http_face_reach_the_gateway_and_the_edge_is_public() -> None:
    ingress: dict[str, list[dict[str, Any]]] = {}
    egress: dict[str, list[dict[str, Any]]] = {}
    for policy in _k8s("networkpolicies.yaml"):
        target = _app(policy["spec"]["podSelector"])
        if target:
            ingress.setdefault(target, []).extend(policy["spec"].get("ingress", []))
            egress.setdefault(target, []).extend(policy["spec"].get("egress", []))

    def ports(rule: dict[str, Any]) -> list[int]:
        return [p["port"] for p in rule["ports"]]

    (to_gateway,) = ingress["gateway"]
    assert [_app(peer["podSelector"]) for peer in to_gateway["from"]] == ["edge", "rest"]
    assert ports(to_gateway) == [GATEWAY_PORT]
    # The HTTP face (a client of the gateway) is reached through the edge only.
    (to_rest,) = ingress["rest"]
    assert [_app(peer["podSelector"]) for peer in to_rest["from"]] == ["edge"]
    assert ports(to_rest) == [REST_PORT]
    (public,) = ingress["edge"]
    assert "from" not in public
    assert ports(public) == [gateway.edge.DEFAULT_PORT]
    out_gateway, out_rest = egress["edge"]
    assert [_app(peer["podSelector"]) for peer in out_gateway["to"]] == ["gateway"]
    assert ports(out_gateway) == [GATEWAY_PORT]
    assert [_app(peer["podSelector"]) for peer in out_rest["to"]] == ["rest"]
    assert ports(out_rest) == [REST_PORT]
    (rest_out,) = egress["rest"]
    assert [_app(peer["podSelector"]) for peer in rest_out["to"]] == ["gateway"]


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_the_filled_template_is_a_configuration_nginx_accepts(
    deployment: str, tmp_path: Path
) -> None:
    edge, _ = _envs(deployment)
    config = render(edge)

    assert "${EDGE_" not in config
    binary = nginx_binary()
    if binary is None:
        pytest.skip("no nginx with HTTP/2 and the gRPC proxy here (`make edge` builds one)")
    # nginx resolves upstream names while it reads the configuration; `gateway` only
    # resolves inside the deployment.
    http_config = tmp_path / "tandem-edge.conf"
    http_config.write_text(
        config.replace(
            f"server {edge['EDGE_UPSTREAM']};", f"server 127.0.0.1:{GATEWAY_PORT};"
        ).replace(f"server {edge['EDGE_REST_UPSTREAM']};", f"server 127.0.0.1:{REST_PORT};"),
        encoding="utf-8",
    )
    main = tmp_path / "nginx.conf"
    main.write_text(main_config(EdgeSettings(), tmp_path, http_config), encoding="utf-8")
    done = subprocess.run(
        [str(binary), "-p", str(tmp_path), "-e", "stderr", "-c", str(main), "-t", "-q"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )

    assert done.returncode == 0, done.stderr
