"""infra/compose.ha.yaml: the compose override with a primary, a synchronous standby and
the monitor. Each check is a function of the two files' services returning its problems,
so every check is also shown failing on a copy broken in the way it guards against."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from tests.unit.infra.conftest import INFRA

Services = dict[str, dict[str, Any]]
NODES = ("postgres", "postgres-standby")
NODE_SCRIPT = "/usr/local/bin/tandem-pg-node.sh"


def _load(name: str) -> Services:
    services: Services = yaml.safe_load((INFRA / name).read_text())["services"]
    return services


@pytest.fixture
def files() -> tuple[Services, Services]:
    return _load("compose.yaml"), _load("compose.ha.yaml")


def _hosts_and_attrs(url: str) -> tuple[str | None, list[str], str, str]:
    parts = urlsplit(url)
    hosts = parts.netloc.rpartition("@")[2].split(",")
    attrs = parse_qs(parts.query).get("target_session_attrs", [""])[0]
    return parts.username, hosts, parts.path, attrs


def node_problems(base: Services, ha: Services) -> list[str]:
    """Two nodes started by ha-node.sh, each the other's peer, one that initialises the
    pair, each on its own volume, the same image."""
    problems = []
    envs = {}
    for node in NODES:
        spec = {**base.get(node, {}), **ha.get(node, {})}
        envs[node] = {**base.get(node, {}).get("environment", {}), **ha[node]["environment"]}
        if spec.get("entrypoint") != ["sh", NODE_SCRIPT] or spec.get("command") != ["postgres"]:
            problems.append(f"{node}: not started by ha-node.sh")
        mounts = [*base.get(node, {}).get("volumes", []), *ha[node].get("volumes", [])]
        if f"./postgres/ha-node.sh:{NODE_SCRIPT}:ro" not in mounts:
            problems.append(f"{node}: ha-node.sh not mounted")
        data = [m for m in mounts if m.endswith(":/var/lib/postgresql/data")]
        if len(data) != 1:
            problems.append(f"{node}: data volumes {data}")
        if spec.get("image") != base["postgres"]["image"]:
            problems.append(f"{node}: image {spec.get('image')}")
        if spec.get("restart") != "unless-stopped":
            problems.append(f"{node}: not restarted when killed")
    first, second = NODES
    if (
        envs[first].get("TANDEM_PG_PEER") != f"{second}:5432"
        or envs[second].get("TANDEM_PG_PEER") != f"{first}:5432"
    ):
        problems.append("the nodes are not each other's peer")
    if [envs[n].get("TANDEM_PG_NODE") for n in NODES] != list(NODES):
        problems.append("a node's TANDEM_PG_NODE is not its host name")
    if sorted(str(envs[n].get("TANDEM_PG_BOOTSTRAP")) for n in NODES) != ["0", "1"]:
        problems.append("not exactly one node initialises the pair")
    volumes = [
        m.split(":")[0]
        for n in NODES
        for m in [*base.get(n, {}).get("volumes", []), *ha[n].get("volumes", [])]
        if m.endswith(":/var/lib/postgresql/data")
    ]
    if len(set(volumes)) != len(volumes):
        problems.append(f"the nodes share a data volume: {volumes}")
    return problems


def url_problems(base: Services, ha: Services) -> list[str]:
    """Every URL of compose.yaml that names the single Postgres names both nodes in the
    override, read-write only, same role and database; reads prefer the standby."""
    problems = []
    for name, spec in base.items():
        for key, value in spec.get("environment", {}).items():
            if not isinstance(value, str) or "@postgres:5432/" not in value:
                continue
            override = ha.get(name, {}).get("environment", {}).get(key)
            if override is None:
                problems.append(f"{name} {key}: still one node")
                continue
            user, hosts, path, attrs = _hosts_and_attrs(override)
            if (user, path) != (urlsplit(value).username, urlsplit(value).path):
                problems.append(f"{name} {key}: another role or database")
            if hosts != [f"{n}:5432" for n in NODES] or attrs != "read-write":
                problems.append(f"{name} {key}: {hosts} {attrs}")
    for name in ("retrieval", "sql"):
        read = ha.get(name, {}).get("environment", {}).get("DATABASE_READ_URL", "")
        _, hosts, _, attrs = _hosts_and_attrs(read)
        if hosts != [f"{n}:5432" for n in reversed(NODES)] or attrs != "prefer-standby":
            problems.append(f"{name} DATABASE_READ_URL: {hosts} {attrs}")
    return problems


def monitor_problems(base: Services, ha: Services) -> list[str]:
    """The monitor watches both nodes, and starts after them."""
    monitor = ha.get("postgres-monitor", {})
    command = monitor.get("command", [])
    problems = []
    if command[:3] != ["tandem", "postgres", "supervise"]:
        problems.append(f"monitor command {command}")
    nodes = [command[i + 1] for i, a in enumerate(command[:-1]) if a == "--node"]
    if nodes != [f"{n}:5432" for n in NODES]:
        problems.append(f"monitor watches {nodes}")
    if set(monitor.get("depends_on", {})) != set(NODES):
        problems.append("monitor starts before the nodes")
    if monitor.get("read_only") is not True:
        problems.append("monitor root filesystem writable")
    return problems


CHECKS: dict[str, Callable[[Services, Services], list[str]]] = {
    "nodes": node_problems,
    "urls": url_problems,
    "monitor": monitor_problems,
}


@pytest.mark.parametrize("check", CHECKS, ids=str)
def test_the_override_passes(files: tuple[Services, Services], check: str) -> None:
    assert CHECKS[check](*files) == []


def _env(ha: Services, service: str) -> dict[str, str]:
    env: dict[str, str] = ha[service]["environment"]
    return env


BREAKAGES: dict[str, tuple[str, Callable[[Services], object], str]] = {
    "two bootstraps": ("nodes", lambda h: _env(h, "postgres-standby").update(
        TANDEM_PG_BOOTSTRAP="1"), "exactly one"),
    "own peer": ("nodes", lambda h: _env(h, "postgres").update(
        TANDEM_PG_PEER="postgres:5432"), "peer"),
    "shared volume": ("nodes", lambda h: h["postgres-standby"].update(volumes=[
        "pgdata:/var/lib/postgresql/data", f"./postgres/ha-node.sh:{NODE_SCRIPT}:ro"]), "share"),
    "plain entrypoint": ("nodes", lambda h: h["postgres-standby"].pop("entrypoint"), "ha-node"),
    "not restarted": ("nodes", lambda h: h["postgres-standby"].update(restart="no"), "killed"),
    "one host": ("urls", lambda h: _env(h, "gateway").update(
        DATABASE_URL="postgresql://tandem:x@postgres:5432/tandem"
        "?target_session_attrs=read-write"), "gateway DATABASE_URL"),
    "any node": ("urls", lambda h: _env(h, "retrieval").update(
        RETRIEVAL_APP_DATABASE_URL="postgresql://tandem_retrieval_app:x@postgres:5432,"
        "postgres-standby:5432/tandem"), "RETRIEVAL_APP_DATABASE_URL"),
    "forgotten url": ("urls", lambda h: _env(h, "sql").pop("SQL_MEMORY_APP_DATABASE_URL"),
                      "still one node"),
    "other role": ("urls", lambda h: _env(h, "gateway").update(
        GATEWAY_AUDIT_APP_DATABASE_URL="postgresql://tandem:x@postgres:5432,"
        "postgres-standby:5432/tandem?target_session_attrs=read-write"), "another role"),
    "reads on primary": ("urls", lambda h: _env(h, "sql").update(
        DATABASE_READ_URL="postgresql://tandem:x@postgres:5432,postgres-standby:5432/tandem"
        "?target_session_attrs=read-write"), "DATABASE_READ_URL"),
    "one node watched": ("monitor", lambda h: h["postgres-monitor"].update(
        command=["tandem", "postgres", "supervise", "--node", "postgres:5432"]), "watches"),
}  # fmt: skip


@pytest.mark.parametrize("breakage", BREAKAGES, ids=str)
def test_each_check_fails_on_an_override_that_breaks_it(
    files: tuple[Services, Services], breakage: str
) -> None:
    check, mutate, word = BREAKAGES[breakage]
    base, ha = files
    broken = copy.deepcopy(ha)
    mutate(broken)
    problems = CHECKS[check](base, broken)
    assert any(word in p for p in problems), problems


def test_the_node_script_commits_synchronously_to_the_other_node() -> None:
    script = (INFRA / "postgres" / "ha-node.sh").read_text()
    assert "synchronous_commit = on" in script
    # Double-quoted: `postgres-standby` is not a bare identifier, and Postgres refuses to
    # start on the list unquoted (seen in the container test).
    assert 'SYNC_NAMES=${TANDEM_PG_SYNC_NAMES:-ANY 1 (\\"$NODE\\", \\"$PEER_HOST\\")}' in script
    # The standby's application_name is its node name, which the list names.
    assert "application_name=$NODE" in script
    assert "pg_rewind" in script and "pg_basebackup" in script
    init = (INFRA / "postgres" / "ha-init.sh").read_text()
    assert "REPLICATION" in init and "SUPERUSER" in init  # NOSUPERUSER: streaming only
    assert "tandem-pg-node.sh conf" in init


def test_the_override_names_only_services_it_adds_or_compose_has() -> None:
    base, ha = _load("compose.yaml"), _load("compose.ha.yaml")
    assert set(ha) - set(base) == {"postgres-standby", "postgres-monitor"}
    for node in NODES:
        for mount in ha[node]["volumes"]:
            source = mount.split(":")[0]
            if source.startswith("./"):
                assert (INFRA / source).is_file(), source
