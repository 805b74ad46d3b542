"""What the deployment files must agree with: the services, their modules and ports."""

from __future__ import annotations

import importlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
INFRA = ROOT / "infra"


@dataclass(frozen=True)
class Deployed:
    """One deployable process: its name, entry module, env prefix and settings package."""

    name: str
    module: str
    prefix: str
    settings_module: str
    # Our Python image (infra/docker/<name>.Dockerfile, gRPC health, OTLP). The edge runs
    # the stock nginx image, which has none of these.
    python: bool = True

    @property
    def package_dir(self) -> Path:
        return ROOT.joinpath(*self.module.split("."))

    def default_port(self) -> int:
        """The port the service's own settings default to (the source of truth)."""
        # Every service is in the tree: a missing package is a broken checkout, not a skip.
        assert self.package_dir.is_dir(), f"{self.module}: no package at {self.package_dir}"
        port: int = importlib.import_module(self.settings_module).DEFAULT_PORT
        return port


SERVICES = (
    Deployed("embedding", "services.embedding", "EMBEDDING", "services.embedding._settings"),
    Deployed("retrieval", "services.retrieval", "RETRIEVAL", "services.retrieval._settings"),
    Deployed("sql", "services.sql", "SQL", "services.sql._settings"),
    Deployed("router", "services.router", "ROUTER", "services.router._settings"),
    Deployed("gateway", "gateway", "GATEWAY", "gateway._settings"),
    # The HTTP/JSON face: the gateway's image with another command, HTTP health; not one
    # of "our Python images" in the sense above.
    Deployed("rest", "services.rest", "REST", "services.rest._settings", python=False),
    Deployed("edge", "gateway.edge", "EDGE", "gateway.edge", python=False),
)
PYTHON_SERVICES = tuple(s for s in SERVICES if s.python)
# Ports that take mutual-TLS callers only (the gateway's is the public face behind the
# edge: API keys); each service's health probe presents its own certificate there.
MTLS_SERVICES = frozenset({"embedding", "retrieval", "sql", "router"})
TLS_DIR = "/etc/tandem/tls"


def probe_command(service: Deployed, port: int) -> list[str]:
    """The health probe every deployment runs in ``service``'s container."""
    command = ["python", "/usr/local/bin/grpc-health-probe", "--addr", f"127.0.0.1:{port}"]
    if service.name in MTLS_SERVICES:
        command += ["--tls-dir", TLS_DIR, "--identity", service.name]
    return command


BY_NAME = {s.name: s for s in SERVICES}

# Who calls whom (SYSTEM.md and issue 11); the gateway also verifies API keys in Postgres.
# The edge (nginx) is the front door and calls the gateway and the HTTP face, which calls
# the gateway.
CALL_GRAPH = frozenset(
    {
        ("edge", "gateway"),
        ("edge", "rest"),
        ("rest", "gateway"),
        ("gateway", "router"),
        ("gateway", "retrieval"),
        ("gateway", "sql"),
        ("gateway", "postgres"),
        ("router", "retrieval"),
        ("router", "sql"),
        ("retrieval", "embedding"),
        ("retrieval", "postgres"),
        ("sql", "postgres"),
    }
)


def kustomize_build(directory: Path = INFRA / "k8s") -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize <directory>`` renders, infra/k8s by default (skips
    without kubectl)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    done = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]
