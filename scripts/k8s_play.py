"""The Kubernetes manifests (infra/k8s), played under podman: scripts/k8s-play.sh's helper.

    python scripts/k8s_play.py render --out DIR --secrets DIR --tls DIR [--kustomized FILE]
    python scripts/k8s_play.py wait   --plan DIR/plan.json --deployment NAME --results FILE
    python scripts/k8s_play.py check  --plan DIR/plan.json --results FILE
    python3 k8s_play.py lb --listen 0.0.0.0:59050 --target edge.tandem.svc.cluster.local:50050

`render` does what `kubectl kustomize infra/k8s` does that matters here (namespace, images,
the edge template's configMapGenerator with kustomize's name hash) and, with --kustomized
(real kustomize output), checks that it rendered the same objects. It then adapts the
rendering to what podman 4.3's `kube play` can run, each change listed in
DIR/adaptations.txt (and infra/README.md, "Kubernetes manifests, played"), and writes
DIR/plan.json: what to play in which order, with which network aliases (the Services'
DNS names) and the probes of every container.

`wait` and `check` run the manifests' startup, readiness and liveness probes the way a
kubelet would: podman's own health check where podman converted the livenessProbe into one
(`podman healthcheck run`: podman 4.3 schedules health checks through systemd, absent
here), the same command with `podman exec` for other exec probes, the gRPC health check
for `grpc` probes and a TCP connect for `tcpSocket` probes, both to the pod's address as
the kubelet does. Each result is one JSON line in --results.

`lb` is the load balancer the edge manifest asks for in front of the edge Service (a TCP
forwarder, standard library only: it runs in the base image), spreading connections over
every address the Service's name resolves to.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import hashlib
import json
import random
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PREFIX = "tandem-k8s"
NETWORK = f"{PREFIX}-net"
NAMESPACE_DOMAIN = "tandem.svc.cluster.local"
TLS_SERVICES = ("embedding", "retrieval", "sql", "router", "gateway")
# Dependency order (callees first), as the compose test starts them.
ORDER = ("postgres", "embedding", "retrieval", "sql", "router", "gateway", "rest", "edge")
PLAY_IMAGES = {
    "tandem/embedding": "localhost/tandem/embedding:dev",
    "tandem/retrieval": "localhost/tandem/retrieval:dev",
    "tandem/sql": "localhost/tandem/sql:dev",
    "tandem/router": "localhost/tandem/router:dev",
    "tandem/gateway": "localhost/tandem/gateway:dev",
    "nginxinc/nginx-unprivileged": "localhost/tandem/edge-test:dev",
}
POSTGRES_IMAGE = "localhost/tandem/postgres-test:dev"


# ---- kustomize, the parts infra/k8s/kustomization.yaml uses --------------------------------


def _go_json(value: Any) -> str:
    """encoding/json's Marshal of a map: sorted keys, no spaces, HTML characters escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def kustomize_hash(config_map: dict[str, Any]) -> str:
    """kustomize's name suffix for a generated ConfigMap (api/hasher: sha256 of the JSON of
    kind, name and data, the first ten hex digits with 0 1 3 a e swapped for g h k m t).
    kustomize v5 looks the name up as one field called "metadata/name", finds none and
    hashes an empty name; so does this, which keeps the suffixes equal to kustomize's."""
    encoded = {"kind": "ConfigMap", "name": "", "data": config_map.get("data", {})}
    digest = hashlib.sha256(_go_json(encoded).encode()).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


def _containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if doc.get("kind") != "Deployment":
        return []
    containers: list[dict[str, Any]] = doc["spec"]["template"]["spec"]["containers"]
    return containers


def _split_image(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
    return name, tag


def kustomize(k8s: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize k8s` for what kustomization.yaml asks: resources, namespace,
    images, configMapGenerator (files, labels) and the generated names' references."""
    import yaml  # noqa: PLC0415 (lb runs where PyYAML is not installed)

    spec = yaml.safe_load((k8s / "kustomization.yaml").read_text())
    docs: list[dict[str, Any]] = []
    for resource in spec["resources"]:
        docs += [d for d in yaml.safe_load_all((k8s / resource).read_text()) if d]
    namespace = spec.get("namespace")
    if namespace:
        for doc in docs:
            if doc["kind"] != "Namespace":
                doc["metadata"]["namespace"] = namespace
    for doc in docs:
        for container in _containers(doc):
            name, tag = _split_image(container["image"])
            for rule in spec.get("images", []):
                if rule["name"] == name:
                    name = rule.get("newName", name)
                    tag = rule.get("newTag", tag)
            container["image"] = f"{name}:{tag}" if tag else name
    renamed: dict[str, str] = {}
    for gen in spec.get("configMapGenerator", []):
        data = {}
        for entry in gen.get("files", []):
            key, _, path = entry.rpartition("=") if "=" in entry else ("", "", entry)
            data[key or Path(path).name] = (k8s / path).read_text()
        for entry in gen.get("literals", []):
            key, _, value = entry.partition("=")
            data[key] = value
        labels = gen.get("options", {}).get("labels")
        metadata: dict[str, Any] = {"name": gen["name"]}
        if labels:
            metadata["labels"] = dict(labels)
        if namespace:
            metadata["namespace"] = namespace
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
        if not gen.get("options", {}).get("disableNameSuffixHash"):
            metadata["name"] = f"{gen['name']}-{kustomize_hash(cm)}"
        renamed[gen["name"]] = metadata["name"]
        docs.append(cm)
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        pod = doc["spec"]["template"]["spec"]
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                volume["configMap"]["name"] = renamed.get(
                    volume["configMap"]["name"], volume["configMap"]["name"]
                )
        for container in pod["containers"]:
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef")
                if ref:
                    ref["name"] = renamed.get(ref["name"], ref["name"])
    return docs


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    return doc["kind"], doc["metadata"]["name"]


def compare_with_kustomize(ours: list[dict[str, Any]], kustomized: Path) -> list[str]:
    """Where our rendering differs from real kustomize output (empty: identical objects)."""
    import yaml  # noqa: PLC0415 (lb runs where PyYAML is not installed)

    theirs = {_key(d): d for d in yaml.safe_load_all(kustomized.read_text()) if d}
    mine = {_key(d): d for d in ours}
    problems = [f"only kustomize renders {k}" for k in sorted(set(theirs) - set(mine))]
    problems += [f"only this script renders {k}" for k in sorted(set(mine) - set(theirs))]
    problems += [f"{k} differs" for k in sorted(set(mine) & set(theirs)) if mine[k] != theirs[k]]
    return problems


# ---- what podman 4.3's kube play can run ---------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _probe(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    if not spec:
        return None
    probe: dict[str, Any] = {
        "periodSeconds": spec.get("periodSeconds", 10),
        "timeoutSeconds": spec.get("timeoutSeconds", 1),
        "failureThreshold": spec.get("failureThreshold", 3),
    }
    if "exec" in spec:
        probe.update(type="exec", command=[str(c) for c in spec["exec"]["command"]])
    elif "grpc" in spec:
        probe.update(
            type="grpc", port=spec["grpc"]["port"], service=spec["grpc"].get("service", "")
        )
    elif "tcpSocket" in spec:
        probe.update(type="tcpSocket", port=spec["tcpSocket"]["port"])
    elif "httpGet" in spec:
        probe.update(
            type="httpGet", port=spec["httpGet"]["port"], path=spec["httpGet"].get("path", "/")
        )
    return probe


def postgres_deployment(
    passwords: dict[str, str], init_sh: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Postgres the manifests expect outside them (DATABASE_URL), as a Deployment of the
    test image with infra/postgres/init.sh, labelled as networkpolicies.yaml selects it."""
    # cnpg.io/cluster: the label CloudNativePG gives the Cluster's pods, which the policies
    # select (the manifests' Postgres is that Cluster, infra/k8s/postgres/).
    labels = {
        "app.kubernetes.io/name": "postgres",
        "app.kubernetes.io/part-of": "tandem",
        "cnpg.io/cluster": "tandem-pg",
    }
    init: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{PREFIX}-postgres-init"},
        "data": {"10-tandem.sh": init_sh},
    }
    ready = {
        "exec": {"command": ["pg_isready", "-q"]},
        "periodSeconds": 2,
        "timeoutSeconds": 3,
        "failureThreshold": 30,
    }
    env = {
        "POSTGRES_USER": "tandem",
        "POSTGRES_PASSWORD": passwords["tandem"],
        "POSTGRES_DB": "tandem",
        "RETRIEVAL_APP_PASSWORD": passwords["tandem_retrieval_app"],
        "CONVERSATION_APP_PASSWORD": passwords["tandem_conversation_app"],
        "AUDIT_APP_PASSWORD": passwords["tandem_audit_app"],
        "SQL_MEMORY_APP_PASSWORD": passwords["tandem_sql_memory_app"],
        "SQL_READER_PASSWORD": passwords["tandem_reader"],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "postgres", "namespace": "tandem", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "postgres"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 999,
                        "runAsGroup": 999,
                        "fsGroup": 999,
                    },
                    "containers": [
                        {
                            "name": "postgres",
                            "image": POSTGRES_IMAGE,
                            "ports": [
                                {"name": "postgres", "containerPort": 5432, "protocol": "TCP"}
                            ],
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                            "startupProbe": ready,
                            "readinessProbe": ready,
                            "livenessProbe": ready,
                            "volumeMounts": [
                                {
                                    "name": "init",
                                    "mountPath": "/docker-entrypoint-initdb.d",
                                    "readOnly": True,
                                },
                                {"name": "data", "mountPath": "/var/lib/postgresql/data"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "init", "configMap": {"name": init["metadata"]["name"]}},
                        {"name": "data", "emptyDir": {}},
                    ],
                },
            },
        },
    }
    return deployment, init


def render(args: argparse.Namespace) -> int:
    import yaml  # noqa: PLC0415 (lb runs where PyYAML is not installed)

    root = Path(__file__).resolve().parents[1]
    k8s = root / "infra" / "k8s"
    out, secret_dir, tls = Path(args.out), Path(args.secrets), Path(args.tls)
    out.mkdir(parents=True, exist_ok=True)
    secret_dir.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []

    docs = kustomize(k8s)
    (out / "kustomized.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    if args.kustomized:
        problems = compare_with_kustomize(docs, Path(args.kustomized))
        if problems:
            print(
                "render: differs from kubectl kustomize:\n  " + "\n  ".join(problems),
                file=sys.stderr,
            )
            return 1
        notes.append(f"rendering: identical to `kubectl kustomize infra/k8s` ({len(docs)} objects)")
    else:
        notes.append(f"rendering: this script's kustomize ({len(docs)} objects; no kubectl here)")

    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)

    # Real test values for the placeholders: the secret with every URL and the pepper.
    passwords = {
        role: secrets.token_hex(16)
        for role in (
            "tandem",
            "tandem_retrieval_app",
            "tandem_conversation_app",
            "tandem_audit_app",
            "tandem_sql_memory_app",
            "tandem_reader",
        )
    }
    (secret,) = by_kind["Secret"]
    host = f"postgres.{NAMESPACE_DOMAIN}:5432"
    values = {
        "gateway-key-pepper": secrets.token_hex(32),
        "gemini-api-key": "",
        "database-url": f"postgresql://tandem:{passwords['tandem']}@{host}/tandem",
        # One Postgres here, no standby: reads go to it too.
        "database-read-url": f"postgresql://tandem:{passwords['tandem']}@{host}/tandem",
        "retrieval-app-database-url": f"postgresql://tandem_retrieval_app:{passwords['tandem_retrieval_app']}@{host}/tandem",
        "conversation-app-database-url": f"postgresql://tandem_conversation_app:{passwords['tandem_conversation_app']}@{host}/tandem",
        "audit-app-database-url": f"postgresql://tandem_audit_app:{passwords['tandem_audit_app']}@{host}/tandem",
        "sql-memory-app-database-url": f"postgresql://tandem_sql_memory_app:{passwords['tandem_sql_memory_app']}@{host}/tandem",
        "warehouse-database-url": f"postgresql://tandem_reader:{passwords['tandem_reader']}"
        f"@warehouse-replica.{NAMESPACE_DOMAIN}:5432/warehouse",
    }
    assert set(values) == set(secret["stringData"]), "secrets.yaml's keys changed"
    env_secret = f"{PREFIX}-secrets"
    # podman 4.3 reads a secretKeyRef's podman secret as JSON of base64 values.
    (secret_dir / f"{env_secret}.json").write_text(
        json.dumps({k: _b64(v) for k, v in values.items()})
    )
    (secret_dir / "database-url").write_text(values["database-url"])
    notes.append(
        f"Secret {secret['metadata']['name']} -> podman secret {env_secret} (JSON of base64 "
        "values, the form podman 4.3 reads for env secretKeyRef), real test values"
    )

    # The certificate bundles (`tandem certs issue DIR --split`), one Secret per service.
    # podman 4.3 fills a secret volume from a podman secret holding a Secret's YAML, but it
    # takes `data` values verbatim (no base64 decoding) and ignores `stringData`; a Secret
    # played with kube play gets base64 text into the files. So: the files' own text as
    # `data`, created with `podman secret create`.
    for service in TLS_SERVICES:
        files = {p.name: p.read_text() for p in sorted((tls / service).iterdir()) if p.is_file()}
        tls_secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": f"{PREFIX}-tls-{service}"},
            "data": files,
        }
        (secret_dir / f"{PREFIX}-tls-{service}.yaml").write_text(
            yaml.safe_dump(tls_secret, sort_keys=False)
        )
    notes.append(
        "Secrets tandem-tls-<service> -> podman secrets tandem-k8s-tls-<service> from "
        "`tandem certs issue DIR --split` (a Secret's YAML whose data holds each file's text "
        "verbatim: podman 4.3 neither base64-decodes data nor reads stringData for volumes)"
    )

    # ConfigMaps, given to kube play with --configmap.
    config_maps: dict[str, Path] = {}
    for cm in by_kind["ConfigMap"]:
        cm = copy.deepcopy(cm)  # noqa: PLW2901
        name = cm["metadata"]["name"]
        if name == "tandem-config":
            cm["data"]["OTEL_EXPORTER_OTLP_ENDPOINT"] = ""
            notes.append(
                "ConfigMap tandem-config: OTEL_EXPORTER_OTLP_ENDPOINT emptied (no collector "
                "image can be pulled here; as infra/compose.test.yaml)"
            )
        if name == "otel-collector":
            continue
        new = name if name == "tandem-config" else f"{PREFIX}-{name}"
        cm["metadata"] = {"name": new}
        path = out / f"configmap-{new}.yaml"
        path.write_text(yaml.safe_dump(cm, sort_keys=False))
        config_maps[name] = path

    services = {s["metadata"]["name"]: s for s in by_kind["Service"]}
    deployments = {d["metadata"]["name"]: d for d in by_kind["Deployment"]}
    pg, pg_init = postgres_deployment(
        passwords, (root / "infra" / "postgres" / "init.sh").read_text()
    )
    deployments["postgres"] = pg
    init_path = out / f"configmap-{pg_init['metadata']['name']}.yaml"
    init_path.write_text(yaml.safe_dump(pg_init, sort_keys=False))
    config_maps[f"{PREFIX}-postgres-init"] = init_path
    notes.append(
        "postgres: not in the manifests (DATABASE_URL points outside them): a Deployment of "
        f"{POSTGRES_IMAGE} with infra/postgres/init.sh, labelled app.kubernetes.io/name=postgres "
        "as networkpolicies.yaml selects it, also answering as warehouse-replica"
    )
    skipped = sorted(
        {
            f"{d['kind']}/{d['metadata']['name']}"
            for d in docs
            if d["kind"]
            in ("Namespace", "NetworkPolicy", "HorizontalPodAutoscaler", "PodDisruptionBudget")
        }
    )
    notes.append("not played (podman has no such object): " + ", ".join(skipped))
    notes.append(
        "not played: Deployment/otel-collector (otel/opentelemetry-collector-contrib cannot be "
        "pulled here) and its Service and ConfigMap"
    )

    plan: dict[str, Any] = {"network": NETWORK, "deployments": []}
    for name in ORDER:
        deployment = copy.deepcopy(deployments[name])
        spec = deployment["spec"]
        if args.replicas:
            spec["replicas"] = args.replicas
        pod = spec["template"]["spec"]
        deployment["metadata"]["name"] = f"{PREFIX}-{name}"
        # podman 4.3 names emptyDir volumes after the volume, and configMap / secret volumes
        # after their source, as named volumes: one per Deployment, not shared by all.
        volume_names = {}
        for volume in pod.get("volumes", []):
            volume_names[volume["name"]] = f"{PREFIX}-{name}-{volume['name']}"
            volume["name"] = volume_names[volume["name"]]
            if "secret" in volume:
                volume["secret"]["secretName"] = volume["secret"]["secretName"].replace(
                    "tandem-tls-", f"{PREFIX}-tls-"
                )
                volume["secret"]["optional"] = False  # 4.3 dereferences it unset (nil pointer)
            if "configMap" in volume and not volume["configMap"]["name"].startswith(PREFIX):
                volume["configMap"]["name"] = f"{PREFIX}-{volume['configMap']['name']}"
        probes = {}
        (container,) = pod["containers"]
        for mount in container.get("volumeMounts", []):
            mount["name"] = volume_names[mount["name"]]
            if mount.get("subPath") and name == "edge":
                # 4.3 ignores subPath (it mounts the whole volume as a folder at mountPath):
                # the template's folder instead, which holds only this one file.
                mount["mountPath"] = str(Path(mount["mountPath"]).parent)
                del mount["subPath"]
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                ref["name"] = env_secret
        # podman 4.3 publishes every containerPort on the host (hostPort defaults to it):
        # replicas would collide there, and with anything else on those ports. Pods reach
        # each other over the network without it; probes name ports by number.
        container.pop("ports", None)
        name_, _tag = _split_image(container["image"])
        if name_ in PLAY_IMAGES:
            container["image"] = PLAY_IMAGES[name_]
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            probes[kind] = _probe(container.get(kind))
        svc = services.get(name)
        aliases = [name, f"{name}.{NAMESPACE_DOMAIN}"]
        if name == "postgres":
            aliases += ["warehouse-replica", f"warehouse-replica.{NAMESPACE_DOMAIN}"]
        path = out / f"{PREFIX}-{name}.yaml"
        path.write_text(yaml.safe_dump(deployment, sort_keys=False))
        refs = {"tandem-config"} if container.get("envFrom") else set()
        refs |= {v["configMap"]["name"] for v in pod.get("volumes", []) if "configMap" in v}
        plan["deployments"].append(
            {
                "name": name,
                "file": str(path),
                "replicas": spec["replicas"],
                "container": container["name"],
                "pods": [f"{PREFIX}-{name}-pod-{i}" for i in range(spec["replicas"])],
                "aliases": aliases,
                "headless": bool(svc and svc["spec"].get("clusterIP") == "None"),
                "configmaps": sorted(
                    str(p)
                    for n, p in config_maps.items()
                    if n in refs or p.stem.removeprefix("configmap-") in refs
                ),
                "probes": probes,
                "read_only_root": container.get("securityContext", {}).get(
                    "readOnlyRootFilesystem", False
                ),
            }
        )
    notes += [
        "containers' ports dropped: podman 4.3 publishes each containerPort on the host "
        "(hostPort defaults to containerPort), which collides between replicas",
        "Deployments renamed tandem-k8s-<name> (pods tandem-k8s-<name>-pod-<i>); labels, images' "
        "entry points, env, probes, resources and securityContext unchanged",
        "images: tandem/<service>:dev -> localhost/tandem/<service>:dev, "
        "nginxinc/nginx-unprivileged:1.26.3-alpine -> localhost/tandem/edge-test:dev "
        "(the same nginx release)",
        "volumes renamed tandem-k8s-<deployment>-<volume> (podman 4.3 makes each a named volume, "
        "shared by a Deployment's replicas); secret volumes get optional: false (4.3 needs it set)",
        "edge: the template mount (subPath, which 4.3 ignores) becomes its folder, "
        "/etc/nginx/templates",
        "Services: no objects; their names are network aliases of every pod of the Deployment on "
        f"{NETWORK} (<name> and <name>.{NAMESPACE_DOMAIN}), so aardvark-dns answers with "
        "every pod's "
        "address, as a headless Service's DNS does; no virtual ClusterIP for gateway and edge",
        "*_ADDR values unchanged (dns:///<service>.tandem.svc.cluster.local:<port>)",
    ]
    if args.replicas:
        notes.append(f"replicas: {args.replicas} for every Deployment (K8S_PLAY_REPLICAS)")
    (out / "plan.json").write_text(json.dumps(plan, indent=2))
    (out / "adaptations.txt").write_text("\n".join(f"- {n}" for n in notes) + "\n")
    print("\n".join(f"  {n}" for n in notes))
    return 0


# ---- probes ------------------------------------------------------------------------------


def podman(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _inspect(container: str, template: str) -> str:
    return podman("inspect", "--format", template, container).stdout.strip()


def pod_ip(pod: str) -> str:
    infra = podman("pod", "inspect", "--format", "{{.InfraContainerID}}", pod).stdout.strip()
    return _inspect(infra, f'{{{{(index .NetworkSettings.Networks "{NETWORK}").IPAddress}}}}')


def podman_healthcheck(container: str) -> list[str] | None:
    raw = _inspect(container, "{{json .Config.Healthcheck}}")
    test = (json.loads(raw) or {}).get("Test") if raw and raw != "null" else None
    return list(test) if test else None


def run_probe(deployment: dict[str, Any], pod: str, kind: str) -> dict[str, Any]:
    """One try of ``kind`` (startupProbe, readinessProbe, livenessProbe) in ``pod``."""
    probe = deployment["probes"][kind]
    container = f"{pod}-{deployment['container']}"
    result: dict[str, Any] = {"pod": pod, "probe": kind, "type": probe["type"] if probe else None}
    if probe is None:
        return {**result, "ok": True, "runner": "none (no probe in the manifest)"}
    timeout = max(float(probe["timeoutSeconds"]), 1.0)
    # Probes run as the kubelet runs them; on this 2-core machine a Python probe can take
    # longer to start than the manifest's timeout, so the wall clock is recorded, not enforced.
    slack = timeout + 20
    started = time.monotonic()
    if probe["type"] == "exec":
        converted = podman_healthcheck(container)
        command = probe["command"]
        if kind == "livenessProbe" and converted == ["CMD-SHELL", *command, "||", "exit", "1"]:
            done = podman("healthcheck", "run", container, timeout=slack)
            result["runner"] = "podman (the livenessProbe converted to its health check)"
        else:
            done = podman("exec", container, *command, timeout=slack)
            result["runner"] = "script (podman exec of the manifest's command)"
        ok = done.returncode == 0
        result["detail"] = (done.stdout + done.stderr).strip()[-200:]
    elif probe["type"] == "grpc":
        address = f"{pod_ip(pod)}:{probe['port']}"
        command = ["python", "/usr/local/bin/grpc-health-probe", "--addr", address]
        if probe["service"]:
            command += ["--service", probe["service"]]
        done = podman("exec", container, *command, "--timeout", str(timeout), timeout=slack)
        ok = done.returncode == 0
        result["runner"] = f"script (gRPC Health/Check to the pod's {address}, kubelet-style)"
        result["detail"] = (done.stdout + done.stderr).strip()[-200:]
    elif probe["type"] == "tcpSocket":
        ip, port = pod_ip(pod), int(probe["port"])
        try:
            socket.create_connection((ip, port), timeout=timeout).close()
            ok = True
        except OSError as exc:
            ok = False
            result["detail"] = str(exc)
        result["runner"] = f"script (TCP connect from the host to the pod's {ip}:{port})"
    else:
        return {**result, "ok": False, "runner": "unsupported probe type"}
    return {**result, "ok": ok, "seconds": round(time.monotonic() - started, 2)}


def _state(container: str) -> tuple[str, int]:
    state = _inspect(container, "{{.State.Status}}")
    restarts = _inspect(container, "{{.RestartCount}}")
    return state, int(restarts or 0)


def _emit(results: Path, record: dict[str, Any]) -> None:
    with results.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    mark = "ok" if record.get("ok") else "FAILED"
    print(
        f"    {record['pod']}: {record['probe']} ({record.get('type')}) {mark} "
        f"by {record.get('runner')}"
        + (f" after {record['waited_s']} s" if "waited_s" in record else ""),
        flush=True,
    )


def wait(args: argparse.Namespace) -> int:
    plan = json.loads(Path(args.plan).read_text())
    (deployment,) = [d for d in plan["deployments"] if d["name"] == args.deployment]
    results = Path(args.results)
    for pod in deployment["pods"]:
        container = f"{pod}-{deployment['container']}"
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            probe = deployment["probes"][kind]
            # The manifest's budget (startup: failureThreshold x period); at least --timeout
            # here, where two cores start every Python service.
            budget = (probe["failureThreshold"] * probe["periodSeconds"]) if probe else 0
            deadline = time.monotonic() + max(
                budget, args.timeout if kind != "livenessProbe" else 30
            )
            started = time.monotonic()
            tries = 0
            while True:
                state, restarts = _state(container)
                if state in ("exited", "stopped") or restarts >= 3:
                    print(podman("logs", "--tail", "30", container).stdout, file=sys.stderr)
                    _emit(
                        results,
                        {
                            "pod": pod,
                            "probe": kind,
                            "ok": False,
                            "detail": f"container {state}, {restarts} restarts",
                        },
                    )
                    return 1
                record = run_probe(deployment, pod, kind)
                tries += 1
                if record["ok"] or time.monotonic() > deadline:
                    waited = round(time.monotonic() - started, 1)
                    record.update(
                        waited_s=waited,
                        tries=tries,
                        manifest_budget_s=budget,
                        within_manifest_budget=(not probe) or waited <= budget,
                    )
                    _emit(results, record)
                    if not record["ok"]:
                        logs = podman("logs", "--tail", "30", container)
                        print(logs.stdout + logs.stderr, file=sys.stderr)
                        return 1
                    break
                time.sleep(min(probe["periodSeconds"], 2) if probe else 1)
    return 0


def check(args: argparse.Namespace) -> int:
    """Every pod's readiness and liveness once more (after the smoke): all must pass."""
    plan = json.loads(Path(args.plan).read_text())
    failed = 0
    for deployment in plan["deployments"]:
        for pod in deployment["pods"]:
            for kind in ("readinessProbe", "livenessProbe"):
                record = {**run_probe(deployment, pod, kind), "phase": args.phase}
                _emit(Path(args.results), record)
                failed += not record["ok"]
    return 1 if failed else 0


def list_(args: argparse.Namespace) -> int:
    """Lines for the shell: `pods` (deployment pod container) or `hosts` (Service names)."""
    plan = json.loads(Path(args.plan).read_text())
    for d in plan["deployments"]:
        if args.what == "pods":
            print("\n".join(f"{d['name']} {pod} {d['container']}" for pod in d["pods"]))
        else:
            print(f"{d['name']}.{NAMESPACE_DOMAIN} {d['replicas']}")
    return 0


# ---- the load balancer in front of the edge Service ----------------------------------------


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def lb(args: argparse.Namespace) -> int:
    host, _, port = args.target.rpartition(":")
    listen_host, _, listen_port = args.listen.rpartition(":")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, int(port), type=socket.SOCK_STREAM
            )
            address = random.choice(infos)[4][:2]
            up_reader, up_writer = await asyncio.open_connection(*address)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def main() -> None:
        server = await asyncio.start_server(serve, listen_host, int(listen_port))
        print(f"lb: {args.listen} -> {args.target} (every address, per connection)", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("render")
    p.add_argument("--out", required=True)
    p.add_argument("--secrets", required=True)
    p.add_argument("--tls", required=True)
    p.add_argument("--kustomized")
    p.add_argument("--replicas", type=int, default=0)
    p = sub.add_parser("wait")
    p.add_argument("--plan", required=True)
    p.add_argument("--deployment", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--timeout", type=float, default=240)
    p = sub.add_parser("check")
    p.add_argument("--plan", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--phase", default="after")
    p = sub.add_parser("list")
    p.add_argument("--plan", required=True)
    p.add_argument("what", choices=("pods", "hosts"))
    p = sub.add_parser("lb")
    p.add_argument("--listen", required=True)
    p.add_argument("--target", required=True)
    args = parser.parse_args()
    return {"render": render, "wait": wait, "check": check, "list": list_, "lb": lb}[args.command](
        args
    )


if __name__ == "__main__":
    sys.exit(main())
