"""The kill drill's arithmetic: which calls count as failed, in flight at a kill, inside a
kill window, and when the target (no failed idempotent call, every kill done) is met."""

from __future__ import annotations

from services.bench.drill import KILLED, Call, Drill, Kill, render, summarise


def _drill(*calls: Call, kills: int = len(KILLED)) -> Drill:
    drill = Drill(calls=list(calls))
    drill.kills = [
        Kill(s, f"port {1000 + i}", at=10.0 * (i + 1), back=10.0 * (i + 1) + 2)
        for i, s in enumerate(KILLED[:kills])
    ]
    return drill


def test_a_failed_ask_in_flight_at_a_kill_is_counted_and_misses_no_target() -> None:
    results = summarise(
        _drill(
            Call("Search", 1.0, 0.01, "OK"),
            Call("Search", 10.5, 0.2, "OK"),  # inside the first kill window
            Call("Ask", 9.9, 0.5, "UNAVAILABLE"),  # in flight when the first kill came
            Call("AskSql", 30.0, 0.1, "OK"),
        )
    )
    ask, search = results["rpcs"]["Ask"], results["rpcs"]["Search"]
    assert ask == {**ask, "failed": 1, "failed_in_flight_at_a_kill": 1, "idempotent": False}
    assert search["calls"] == 2 and search["calls_during_kills"] == 1
    assert search["p99_during_kills_ms"] == 200.0
    assert results["idempotent_failed"] == 0 and results["target_met"]
    assert "not idempotent" in render({"rps": 30.0, **results})


def test_one_failed_idempotent_call_misses_the_target() -> None:
    results = summarise(_drill(Call("AskSql", 20.5, 0.1, "UNAVAILABLE")))
    assert results["idempotent_failed"] == 1 and not results["target_met"]
    assert "MISSED" in render({"rps": 30.0, **results})


def test_a_drill_that_did_not_kill_every_service_misses_the_target() -> None:
    assert not summarise(_drill(Call("Search", 1.0, 0.01, "OK"), kills=2))["target_met"]


def test_an_attached_drill_needs_a_container_for_every_killed_service(tmp_path) -> None:
    import pytest

    from services.bench.drill import DrillSettings, attached

    settings = DrillSettings(data_dir=tmp_path, out=tmp_path / "drill.json")
    with pytest.raises(ValueError, match="retrieval, router"):
        attached(settings, "127.0.0.1:1", "key", {"sql": "tandem-ctest_sql-2_1"})


def test_the_command_refuses_containers_without_a_stack_to_attach_to(capsys) -> None:
    import pytest

    from services.cli._main import main

    with pytest.raises(SystemExit, match="--container needs --attach"):
        main(["bench", "drill", "--container", "sql=x"])
    with pytest.raises(SystemExit, match="SERVICE=NAME"):
        main(["bench", "drill", "--attach", "127.0.0.1:1", "--api-key", "k", "--container", "sql"])
