"""The CloudNativePG Cluster (infra/k8s/postgres/, applied with infra/k8s-cnpg/): what the
issue asks of a Postgres that survives losing a machine, checked on the rendered overlay.

Each check is a function of the rendered objects that returns its problems, so the test
below can show every check failing on a manifest that breaks it (a copy with one field
changed), not only passing on ours."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.unit.infra.conftest import CALL_GRAPH, INFRA, kustomize_build

Docs = list[dict[str, Any]]
OVERLAY = INFRA / "k8s-cnpg"
COMPONENT = INFRA / "k8s" / "postgres"
BACKUP = COMPONENT / "backup"
PLUGIN = "barman-cloud.cloudnative-pg.io"
OPERATOR_NAMESPACE = "cnpg-system"


@pytest.fixture(scope="module")
def rendered() -> Docs:
    return kustomize_build(OVERLAY)


@pytest.fixture(scope="module")
def with_backup(tmp_path_factory: pytest.TempPathFactory) -> Docs:
    """The overlay with the optional backup component switched on, as its comment says."""
    directory = tmp_path_factory.mktemp("cnpg-backup")
    rel = lambda p: os.path.relpath(p, directory)  # noqa: E731 (kustomize wants relative paths)
    (directory / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{rel(INFRA / 'k8s')}]\n"
        f"components: [{rel(COMPONENT)}, {rel(BACKUP)}]\n"
    )
    return kustomize_build(directory)


def _cluster(docs: Docs) -> dict[str, Any]:
    (cluster,) = [d for d in docs if d["kind"] == "Cluster"]
    return cluster


def _secrets(docs: Docs) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key, inner
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


# ---- the checks ---------------------------------------------------------------------------


def replication_problems(docs: Docs) -> list[str]:
    """Two instances or more, and every commit waits for at least one standby."""
    spec = _cluster(docs)["spec"]
    problems = []
    if spec.get("instances", 1) < 2:
        problems.append(f"instances {spec.get('instances', 1)} < 2")
    sync = spec.get("postgresql", {}).get("synchronous")
    if sync is not None:
        if sync.get("method") not in ("any", "first") or sync.get("number", 0) < 1:
            problems.append(f"synchronous {sync}: no standby is waited for")
        # `preferred` drops the wait when no standby is up: an acknowledged write on one node.
        if sync.get("dataDurability", "required") != "required":
            problems.append(f"synchronous dataDurability {sync['dataDurability']}")
    elif spec.get("minSyncReplicas", 0) < 1:
        problems.append("no synchronous replication (postgresql.synchronous / minSyncReplicas)")
    return problems


def placement_problems(docs: Docs) -> list[str]:
    """The instances on different nodes, and no drain takes both."""
    spec = _cluster(docs)["spec"]
    affinity = spec.get("affinity", {})
    problems = []
    if affinity.get("enablePodAntiAffinity") is not True:
        problems.append("pod anti-affinity off")
    if affinity.get("podAntiAffinityType") != "required":
        problems.append("pod anti-affinity only preferred: both instances may share a node")
    if affinity.get("topologyKey") != "kubernetes.io/hostname":
        problems.append(f"anti-affinity topology {affinity.get('topologyKey')}")
    if spec.get("enablePDB") is False:
        problems.append("PodDisruptionBudgets off")
    resources = spec.get("resources", {})
    if not ({"cpu", "memory"} <= set(resources.get("requests", {}))
            and {"memory"} <= set(resources.get("limits", {}))):  # fmt: skip
        problems.append(f"resources unbounded: {resources}")
    return problems


def secret_problems(docs: Docs) -> list[str]:
    """No password in the Cluster: every role's comes from a basic-auth Secret by name."""
    cluster = _cluster(docs)
    spec = cluster["spec"]
    secrets = _secrets(docs)
    problems = [f"inline {key}" for key, _ in _walk(spec) if key.lower() == "password"]
    sql = spec["bootstrap"]["initdb"].get("postInitApplicationSQL", [])
    problems += [f"a password in SQL: {s}" for s in sql if "PASSWORD" in s.upper()]
    references = [(spec["bootstrap"]["initdb"]["owner"], spec["bootstrap"]["initdb"].get("secret"))]
    references += [
        (r["name"], r.get("passwordSecret")) for r in spec.get("managed", {}).get("roles", [])
    ]
    for role, ref in references:
        secret = secrets.get((ref or {}).get("name", ""))
        if secret is None:
            problems.append(f"{role}: no Secret referenced ({ref})")
            continue
        if secret.get("type") != "kubernetes.io/basic-auth":
            problems.append(f"{role}: Secret {secret['metadata']['name']} not basic-auth")
        if secret.get("stringData", {}).get("username") != role:
            problems.append(f"{role}: Secret {secret['metadata']['name']} names another user")
    return problems


def role_problems(docs: Docs) -> list[str]:
    """The roles and extensions infra/postgres/init.sh makes for compose, made here too,
    with the same limits (no login as superuser, no bypassing row-level security)."""
    spec = _cluster(docs)["spec"]
    init_sh = (INFRA / "postgres" / "init.sh").read_text()
    wanted_roles = set(re.findall(r"CREATE ROLE (\w+)", init_sh))
    wanted_extensions = set(re.findall(r"CREATE EXTENSION IF NOT EXISTS (\w+)", init_sh))
    sql = " ; ".join(spec["bootstrap"]["initdb"].get("postInitApplicationSQL", []))
    roles = {r["name"]: r for r in spec.get("managed", {}).get("roles", [])}
    problems = []
    if set(roles) != wanted_roles:
        problems.append(f"managed roles {sorted(roles)} != init.sh's {sorted(wanted_roles)}")
    for extension in sorted(wanted_extensions):
        if f"CREATE EXTENSION IF NOT EXISTS {extension}" not in sql:
            problems.append(f"extension {extension} not created")
    for name, role in roles.items():
        if role.get("login") is not True or role.get("ensure", "present") != "present":
            problems.append(f"{name}: cannot log in")
        for power in ("superuser", "createdb", "createrole", "replication", "bypassrls"):
            if role.get(power, False) is not False:
                problems.append(f"{name}: {power}")
    return problems


def url_problems(docs: Docs) -> list[str]:
    """The services' URLs name the Cluster's services: writes the primary's (-rw, and
    read-write only), reads a standby first (-ro, then -rw, prefer-standby); each URL's
    user is a role the Cluster makes."""
    cluster = _cluster(docs)
    name, namespace = cluster["metadata"]["name"], cluster["metadata"]["namespace"]
    spec = cluster["spec"]
    users = {spec["bootstrap"]["initdb"]["owner"]} | {
        r["name"] for r in spec.get("managed", {}).get("roles", [])
    }
    values = _secrets(docs)["tandem-secrets"]["stringData"]
    service = lambda suffix: f"{name}-{suffix}.{namespace}.svc.cluster.local:5432"  # noqa: E731
    problems = []
    urls = {k: v for k, v in values.items() if k.endswith("database-url") and "warehouse" not in k}
    if not urls or "database-read-url" not in values:
        problems.append(f"no database URLs: {sorted(values)}")
    for key, url in [*urls.items(), ("database-read-url", values.get("database-read-url", ""))]:
        parts = urlsplit(url)
        hosts = parts.netloc.rpartition("@")[2].split(",")
        attrs = parse_qs(parts.query).get("target_session_attrs", [""])
        want = (
            ([service("ro"), service("rw")], "prefer-standby")
            if key == "database-read-url"
            else ([service("rw")], "read-write")
        )
        if (hosts, attrs) != (want[0], [want[1]]):
            problems.append(f"{key}: {hosts} {attrs}, want {want}")
        database = f"/{spec['bootstrap']['initdb']['database']}"
        if parts.username not in users or parts.path != database:
            problems.append(f"{key}: user {parts.username} / database {parts.path}")
    return problems


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return bool(selector.get("matchLabels")) and selector["matchLabels"].items() <= labels.items()


def policy_problems(docs: Docs) -> list[str]:
    """The NetworkPolicies select the Cluster's pods by the operator's label: the callers
    in, the instances to each other (replication), the operator in on 8000 and 5432."""
    cluster = _cluster(docs)
    pods = {"cnpg.io/cluster": cluster["metadata"]["name"]}
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    ingress = [r for p in policies if _selects(p["spec"]["podSelector"], pods)
               for r in p["spec"].get("ingress", [])]  # fmt: skip
    egress = [r for p in policies if _selects(p["spec"]["podSelector"], pods)
              for r in p["spec"].get("egress", [])]  # fmt: skip
    ports = lambda rule: {p["port"] for p in rule.get("ports", [])}  # noqa: E731
    problems = []
    callers = {s for s, d in CALL_GRAPH if d == "postgres"}
    allowed_in = {
        peer.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name")
        for rule in ingress if 5432 in ports(rule) for peer in rule.get("from", [])
    }  # fmt: skip
    if not callers <= allowed_in:
        problems.append(f"callers {sorted(callers - allowed_in)} cannot reach the Cluster")
    peers_in = any(_selects(peer.get("podSelector", {}), pods) and 5432 in ports(rule)
                   for rule in ingress for peer in rule.get("from", []))  # fmt: skip
    peers_out = any(_selects(peer.get("podSelector", {}), pods) and 5432 in ports(rule)
                    for rule in egress for peer in rule.get("to", []))  # fmt: skip
    if not (peers_in and peers_out):
        problems.append("the instances cannot replicate (5432 between cnpg.io/cluster pods)")
    operator = any(
        peer.get("namespaceSelector", {}).get("matchLabels", {}).get(
            "kubernetes.io/metadata.name") == OPERATOR_NAMESPACE and {8000, 5432} <= ports(rule)
        for rule in ingress for peer in rule.get("from", [])
    )  # fmt: skip
    if not operator:
        problems.append(f"the operator ({OPERATOR_NAMESPACE}) cannot reach 8000 and 5432")
    for policy in policies:
        labels = policy["spec"]["podSelector"].get("matchLabels", {})
        if labels.get("app.kubernetes.io/name") == "postgres":
            problems.append(f"{policy['metadata']['name']}: a label the Cluster's pods lack")
    return problems


CHECKS: dict[str, Callable[[Docs], list[str]]] = {
    "replication": replication_problems,
    "placement": placement_problems,
    "secrets": secret_problems,
    "roles": role_problems,
    "urls": url_problems,
    "policies": policy_problems,
}


@pytest.mark.parametrize("check", CHECKS, ids=str)
def test_the_cluster_passes(rendered: Docs, check: str) -> None:
    assert CHECKS[check](rendered) == []


def _spec(docs: Docs) -> dict[str, Any]:
    spec: dict[str, Any] = _cluster(docs)["spec"]
    return spec


def _policy(docs: Docs, name: str) -> dict[str, Any]:
    (policy,) = [d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == name]
    return policy


def _set_url(docs: Docs, key: str, url: str) -> None:
    _secrets(docs)["tandem-secrets"]["stringData"][key] = url


# One way to break each check (name: check, mutation, a word of the problem it must report).
BREAKAGES: dict[str, tuple[str, Callable[[Docs], None], str]] = {
    "one instance": ("replication", lambda d: _spec(d).update(instances=1), "instances"),
    "async": ("replication", lambda d: _spec(d)["postgresql"].pop("synchronous"), "synchronous"),
    "zero sync": (
        "replication",
        lambda d: _spec(d)["postgresql"]["synchronous"].update(number=0),
        "waited",
    ),
    "preferred": (
        "replication",
        lambda d: _spec(d)["postgresql"]["synchronous"].update(dataDurability="preferred"),
        "dataDurability",
    ),
    "same node": (
        "placement",
        lambda d: _spec(d)["affinity"].update(podAntiAffinityType="preferred"),
        "share",
    ),
    "zone only": (
        "placement",
        lambda d: _spec(d)["affinity"].update(topologyKey="topology.kubernetes.io/zone"),
        "topology",
    ),
    "no pdb": ("placement", lambda d: _spec(d).update(enablePDB=False), "PodDisruptionBudgets"),
    "no limits": ("placement", lambda d: _spec(d).pop("resources"), "unbounded"),
    "inline password": (
        "secrets",
        lambda d: _spec(d)["managed"]["roles"][0].update(password="hunter2"),
        "inline",
    ),
    "password in sql": (
        "secrets",
        lambda d: _spec(d)["bootstrap"]["initdb"]["postInitApplicationSQL"].append(
            "ALTER ROLE tandem_reader PASSWORD 'x'"
        ),
        "SQL",
    ),
    "missing secret": (
        "secrets",
        lambda d: _spec(d)["managed"]["roles"][1].update(passwordSecret={"name": "nowhere"}),
        "no Secret",
    ),
    "missing role": ("roles", lambda d: _spec(d)["managed"]["roles"].pop(), "init.sh"),
    "bypassrls": (
        "roles",
        lambda d: _spec(d)["managed"]["roles"][0].update(bypassrls=True),
        "bypassrls",
    ),
    "no vector": (
        "roles",
        lambda d: _spec(d)["bootstrap"]["initdb"].update(postInitApplicationSQL=[]),
        "vector",
    ),
    "old host": (
        "urls",
        lambda d: _set_url(
            d,
            "database-url",
            "postgresql://tandem:x@postgres.tandem.svc.cluster.local:5432/tandem"
            "?target_session_attrs=read-write",
        ),
        "database-url",
    ),
    "writes anywhere": (
        "urls",
        lambda d: _set_url(
            d,
            "retrieval-app-database-url",
            "postgresql://tandem_retrieval_app:x@tandem-pg-rw.tandem.svc.cluster.local:5432/tandem",
        ),
        "retrieval-app-database-url",
    ),
    "reads primary only": (
        "urls",
        lambda d: _set_url(
            d,
            "database-read-url",
            "postgresql://tandem:x@tandem-pg-rw.tandem.svc.cluster.local:5432"
            "/tandem?target_session_attrs=prefer-standby",
        ),
        "database-read-url",
    ),
    "renamed cluster": ("urls", lambda d: _cluster(d)["metadata"].update(name="pg"), "want"),
    "old label": (
        "policies",
        lambda d: _policy(d, "postgres-ingress")["spec"].update(
            podSelector={"matchLabels": {"app.kubernetes.io/name": "postgres"}}
        ),
        "callers",
    ),
    "no replication": (
        "policies",
        lambda d: _policy(d, "postgres-egress")["spec"].update(egress=[]),
        "replicate",
    ),
    "no operator": (
        "policies",
        lambda d: _policy(d, "postgres-ingress")["spec"]["ingress"].pop(),
        "operator",
    ),
}


@pytest.mark.parametrize("breakage", BREAKAGES, ids=str)
def test_each_check_fails_on_a_manifest_that_breaks_it(rendered: Docs, breakage: str) -> None:
    check, mutate, word = BREAKAGES[breakage]
    broken = copy.deepcopy(rendered)
    mutate(broken)
    problems = CHECKS[check](broken)
    assert any(word in p for p in problems), problems


def test_the_component_is_not_in_the_base_and_the_overlay_adds_only_postgres() -> None:
    base = kustomize_build()
    overlay = kustomize_build(OVERLAY)
    assert not [d for d in base if d["apiVersion"].startswith("postgresql.cnpg.io")]
    added = {(d["kind"], d["metadata"]["name"]) for d in overlay} - {
        (d["kind"], d["metadata"]["name"]) for d in base
    }
    assert ("Cluster", "tandem-pg") in added
    assert {kind for kind, _ in added} == {"Cluster", "Secret"}
    # The Cluster's image is named, with a tag (mirror it: infra/README.md).
    assert re.fullmatch(r"[\w./-]+/postgresql:16[\w.-]+", _cluster(overlay)["spec"]["imageName"])


def test_the_backup_component_archives_wal_and_schedules_base_backups(with_backup: Docs) -> None:
    cluster = _cluster(with_backup)
    (plugin,) = cluster["spec"]["plugins"]
    assert plugin["name"] == PLUGIN and plugin["isWALArchiver"] is True
    (store,) = [d for d in with_backup if d["kind"] == "ObjectStore"]
    assert plugin["parameters"]["barmanObjectName"] == store["metadata"]["name"]
    credentials = store["spec"]["configuration"]["s3Credentials"]
    assert all(set(ref) == {"name", "key"} for ref in credentials.values())  # by reference
    (scheduled,) = [d for d in with_backup if d["kind"] == "ScheduledBackup"]
    assert scheduled["spec"]["cluster"] == {"name": cluster["metadata"]["name"]}
    assert scheduled["spec"]["method"] == "plugin"
    assert scheduled["spec"]["pluginConfiguration"] == {"name": PLUGIN}
    assert len(scheduled["spec"]["schedule"].split()) == 6  # seconds first
    # Everything else as without backups.
    for check in CHECKS.values():
        assert check(with_backup) == []


def test_the_files_are_where_the_overlay_says() -> None:
    assert (OVERLAY / "kustomization.yaml").is_file()
    for path in ("cluster.yaml", "secrets.yaml", "backup/objectstore.yaml",
                 "backup/scheduledbackup.yaml", "backup/cluster-backup.yaml"):  # fmt: skip
        assert (COMPONENT / path).is_file(), path
