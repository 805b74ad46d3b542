"""Each Dockerfile builds the right module, listens where the service's settings say, runs
as non-root and checks health over gRPC on that port."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
from pathlib import Path

import pytest

from tests.unit.infra.conftest import (
    INFRA,
    PYTHON_SERVICES,
    ROOT,
    TLS_DIR,
    Deployed,
    probe_command,
)


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, rest = stripped.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def _final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    starts = [i for i, (k, _) in enumerate(instructions) if k == "FROM"]
    return instructions[starts[-1] :]


def _env(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, rest in stage:
        if keyword == "ENV":
            env.update(dict(re.findall(r"(\w+)=(\S+)", rest)))
    return env


def _dockerfile(service: Deployed) -> Path:
    return INFRA / "docker" / f"{service.name}.Dockerfile"


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_entry_module_exists_and_is_what_runs(service: Deployed) -> None:
    port = service.default_port()  # skips a service that has not landed yet
    final = _final_stage(_instructions(_dockerfile(service)))
    cmd = [json.loads(rest) for keyword, rest in final if keyword == "CMD"]

    assert cmd == [["python", "-m", service.module]]
    assert importlib.util.find_spec(f"{service.module}.__main__") is not None
    assert port > 0


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_port_and_host_match_the_service_settings(service: Deployed) -> None:
    port = service.default_port()
    final = _final_stage(_instructions(_dockerfile(service)))
    env = _env(final)

    assert [rest for keyword, rest in final if keyword == "EXPOSE"] == [str(port)]
    assert env[f"{service.prefix}_PORT"] == str(port)
    # The service must listen beyond loopback inside a container.
    assert env[f"{service.prefix}_HOST"] == "0.0.0.0"
    # ...and the prefix is the one the service's server reads.
    server_source = (service.package_dir / "_server.py").read_text()
    assert f'ServerSettings.from_env("{service.name}"' in server_source


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_health_check_probes_the_service_port_over_grpc(service: Deployed) -> None:
    port = service.default_port()
    final = _final_stage(_instructions(_dockerfile(service)))
    checks = [rest for keyword, rest in final if keyword == "HEALTHCHECK"]

    assert len(checks) == 1
    command = json.loads(checks[0].split("CMD", 1)[1])
    assert command == probe_command(service, port)
    # The certificate bundle is mounted where the service looks for it.
    assert _env(final)["TANDEM_TLS_DIR"] == TLS_DIR
    copies = [rest.split() for keyword, rest in final if keyword == "COPY"]
    assert ["infra/docker/grpc_health_probe.py", "/usr/local/bin/grpc-health-probe"] in copies


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_multi_stage_slim_non_root_with_generated_code(service: Deployed) -> None:
    instructions = _instructions(_dockerfile(service))
    froms = [rest for keyword, rest in instructions if keyword == "FROM"]
    args = dict(re.findall(r"(\w+)=(\S+)", " ".join(r for k, r in instructions if k == "ARG")))
    final = _final_stage(instructions)
    users = [rest for keyword, rest in final if keyword == "USER"]

    assert len(froms) == 2
    assert args["PYTHON_IMAGE"].startswith("python:3.11-slim")
    assert users and not users[-1].startswith(("root", "0"))
    assert final.index(("USER", users[-1])) < next(
        i for i, (k, _) in enumerate(final) if k == "CMD"
    )
    assert any(k == "RUN" and "make proto" in rest for k, rest in instructions)
    # Build tools stay in the build stage: only the runtime venv is copied across.
    assert any(k == "COPY" and "--from=build /opt/venv /opt/venv" in r for k, r in final)
    assert not any("/opt/protoc" in rest for keyword, rest in final if keyword == "COPY")


def test_the_embedding_image_bakes_the_offline_model_where_the_service_looks() -> None:
    from services.embedding._manifest import DEFAULT_MODEL_DIR_NAME

    instructions = _instructions(_dockerfile(PYTHON_SERVICES[0]))
    final = _final_stage(instructions)
    data_dir = _env(final)["TANDEM_DATA_DIR"]

    assert any(k == "RUN" and "services.embedding.assemble" in rest for k, rest in instructions)
    assert any(
        k == "COPY" and rest.endswith(f"{data_dir}/models/{DEFAULT_MODEL_DIR_NAME}")
        for k, rest in final
    )


def _dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _ignored(path: str, patterns: list[str]) -> bool:
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        bare = pattern.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, bare) or path.startswith(bare + "/"):
            ignored = not negate
    return ignored


@pytest.mark.parametrize("service", PYTHON_SERVICES, ids=lambda s: s.name)
def test_every_copied_source_exists_and_is_in_the_build_context(service: Deployed) -> None:
    patterns = _dockerignore_patterns()
    for keyword, rest in _instructions(_dockerfile(service)):
        if keyword != "COPY" or rest.startswith("--from"):
            continue
        *sources, _dest = rest.split()
        for source in sources:
            assert (ROOT / source).exists(), source
            assert not _ignored(source, patterns), f"{source} is excluded by .dockerignore"


def test_dockerignore_keeps_local_state_and_secrets_out() -> None:
    patterns = _dockerignore_patterns()
    for path in (".venv", "gen", ".tandem", ".git", ".env", "secrets", "tests"):
        assert _ignored(path, patterns), path
