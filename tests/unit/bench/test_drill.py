"""The kill drill's arithmetic: which calls count as failed, in flight at a kill, inside a
kill window, and when the target (no failed idempotent call, every kill done) is met."""

from __future__ import annotations

from services.bench.drill import KILLED, Call, Drill, Kill, render, summarise


def _drill(*calls: Call, kills: int = len(KILLED)) -> Drill:
    drill = Drill(calls=list(calls))
    drill.kills = [
        Kill(s, 1000 + i, 1, at=10.0 * (i + 1), back=10.0 * (i + 1) + 2)
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
