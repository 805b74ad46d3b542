"""The overlay `make container-test` runs compose.yaml with (infra/compose.test.yaml) and
the test-only images it builds: it changes only what the machine needs, and keeps every
service's own certificate folder to that service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from tests.unit.infra.conftest import INFRA, PYTHON_SERVICES, ROOT, TLS_DIR


class _Loader(yaml.SafeLoader):
    """podman-compose's / Docker Compose's `!override` and `!reset` tags, kept as markers."""


def _tagged(tag: str) -> Callable[[yaml.SafeLoader, yaml.Node], dict[str, Any]]:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.SequenceNode):
            value: Any = loader.construct_sequence(node)
        elif isinstance(node, yaml.MappingNode):
            value = loader.construct_mapping(node)
        else:
            value = loader.construct_scalar(node)  # type: ignore[arg-type]
        return {tag: value}

    return construct


_Loader.add_constructor("!override", _tagged("!override"))
_Loader.add_constructor("!reset", _tagged("!reset"))


def _load(path: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load((INFRA / path).read_text(), Loader=_Loader)
    return loaded


def test_the_overlay_names_only_services_of_compose() -> None:
    base = _load("compose.yaml")["services"]
    overlay = _load("compose.test.yaml")["services"]
    assert set(overlay) <= set(base)
    # The public images stay in compose.yaml; the overlay swaps in the local stand-ins.
    assert base["postgres"]["image"] == "pgvector/pgvector:pg16"
    assert "postgres-test" in overlay["postgres"]["image"]
    assert "edge-test" in overlay["edge"]["image"]


def test_each_service_mounts_only_its_own_certificates_read_only() -> None:
    overlay = _load("compose.test.yaml")["services"]
    (certs,) = overlay["certs"]["volumes"]["!override"]
    folder = certs.split(":")[0]
    assert certs == f"{folder}:{TLS_DIR}"
    for service in PYTHON_SERVICES:
        spec = overlay[service.name]
        assert spec["volumes"]["!override"] == [f"{folder}/{service.name}:{TLS_DIR}:ro"]
        assert spec["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == ""


def test_the_script_and_its_files_exist() -> None:
    script = (ROOT / "scripts" / "container-test.sh").read_text()
    assert "infra/compose.test.yaml" in script
    for name in ("postgres.Dockerfile", "postgres-entrypoint.sh", "edge.Dockerfile",
                 "edge-entrypoint.sh", "nginx.conf"):  # fmt: skip
        assert (INFRA / "docker" / "test" / name).is_file()
        assert name.endswith(".Dockerfile") or name in script
    assert (ROOT / "scripts" / "container_smoke.py").is_file()


def test_the_postgres_round_runs_the_ha_override_with_the_local_image() -> None:
    ha = _load("compose.ha.yaml")["services"]
    overlay = _load("compose.ha.test.yaml")["services"]
    assert set(overlay) <= set(ha)
    # The standby runs the same stand-in as the primary (compose.test.yaml's).
    assert (
        overlay["postgres-standby"]["image"]
        == _load("compose.test.yaml")["services"]["postgres"]["image"]
    )
    script = (ROOT / "scripts" / "container-test.sh").read_text()
    assert "-f infra/compose.ha.yaml -f infra/compose.ha.test.yaml" in script
    assert "scripts/container_pg_drill.py" in script
    assert (ROOT / "scripts" / "container_pg_drill.py").is_file()
    # The bound on the time until writes succeed again.
    assert "PG_WRITES_BACK_S=15" in script
