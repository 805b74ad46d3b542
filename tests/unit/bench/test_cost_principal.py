"""``tandem bench cost --principal``: the stacks it measures and the ratio it prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.bench import cost
from services.bench._proc import StackProcesses
from services.common import Principal

ALICE = Principal.of("alice", {"sales"}, {"region": "EMEA"})


def _stack(name: str = "current") -> cost.Stack:
    return cost.Stack(name, "127.0.0.1:1", "tdm_service", StackProcesses((1,)))


def test_compare_measures_the_same_processes_as_the_service_key_and_as_the_principal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cost, "act_as_key", lambda data_dir: "tdm_acting")
    stack = _stack()
    settings = cost.CostSettings(principal=ALICE, principal_compare=True)
    service, principal = cost.with_principal([stack], settings, [Path("d")])
    assert (service.name, service.api_key, service.headers) == ("current", "tdm_service", ())
    assert principal.name == cost.PRINCIPAL_STACK
    assert (principal.api_key, principal.headers) == ("tdm_acting", ALICE.headers())
    # The view shares the processes, never the lifetime: stopping it stops nothing.
    assert principal.processes is stack.processes and principal.process is None


def test_without_compare_the_stack_is_driven_as_the_principal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cost, "act_as_key", lambda data_dir: "tdm_acting")
    (only,) = cost.with_principal([_stack()], cost.CostSettings(principal=ALICE), [Path("d")])
    assert (only.name, only.api_key, only.headers) == ("current", "tdm_acting", ALICE.headers())
    assert cost.with_principal([_stack()], cost.CostSettings(), [])[0].headers == ()


def test_the_ratio_is_principal_over_service_per_rpc_and_printed() -> None:
    row = {"rps": 1.0, "p50_ms": 1.0, "p99_ms": 1.0, "errors": 0,
           "cpu_ms_per_request_by_process": dict.fromkeys(cost.ROLES, 0.0)}  # fmt: skip
    results = {
        "through": "gateway", "concurrency": 4, "duration_s": 3.0, "rounds": 1,
        "stacks": {
            "current": {"search": {**row, "cpu_ms_per_request": 4.0}},
            cost.PRINCIPAL_STACK: {"search": {**row, "cpu_ms_per_request": 4.2}},
        },
    }  # fmt: skip
    results["principal_ratios"] = cost.principal_ratios(results)
    assert results["principal_ratios"] == {"search": 1.05}
    assert "with a principal / without (issue 47, target ≤ 1.10x): search 1.05x" in cost.render(
        results
    )
    assert cost.principal_ratios({"stacks": {"current": {}}}) == {}


def test_the_principal_is_refused_with_a_baseline() -> None:
    with pytest.raises(ValueError, match="--baseline"):
        cost.run(cost.CostSettings(principal=ALICE, baseline=Path("/tmp/base")))
