"""The Postgres drill's arithmetic: when writes count as back after a loss, which Searches
fall inside the failover window, and when the targets (no acknowledged write lost, none
half-applied, writes back within 15 s, at most 1% of Searches failed) are met."""

from __future__ import annotations

from typing import Any

from services.bench.drill import Call
from services.bench.pg_drill import Loss, PgDrill, render, summarise


def _writes(**overrides: Any) -> dict[str, Any]:
    return {
        "acknowledged_documents": 3,
        "acknowledged_pairs": 2,
        "lost_documents": [],
        "lost_pairs": [],
        "failed_documents": 1,
        "failed_documents_committed": 0,
        "failed_documents_half_applied": [],
        "failed_pairs": 0,
        "failed_pairs_committed": 0,
        **overrides,
    }


def _drill(*calls: Call, back_after: float = 4.0) -> PgDrill:
    drill = PgDrill(calls=list(calls))
    drill.losses = [Loss("kill", "pg", at=10.0, writes_back=10.0 + back_after, whole_again=20.0)]
    return drill


def _calls(failed_searches: int, searches: int = 200) -> list[Call]:
    """``searches`` Searches inside the window (10 s .. 14 s), the first ones failed."""
    return [
        Call("Search", 10.0 + 4.0 * i / searches, 0.01, "UNAVAILABLE" if failed else "OK")
        for i in range(searches)
        for failed in [i < failed_searches]
    ] + [Call("IngestDocuments", 9.9, 0.3, "UNAVAILABLE"), Call("TeachSql", 13.0, 1.0, "OK")]


def test_a_clean_failover_meets_every_target() -> None:
    results = summarise(_drill(*_calls(failed_searches=2)), _writes())
    (round_,) = results["rounds"]
    assert round_["writes_back_s"] == 4.0 and round_["searches_in_window"] == 200
    assert results["searches_failed_during_failover"] == 0.01
    assert results["rpcs"]["IngestDocuments"]["in_flight_at_a_loss"] == 1
    assert results["target_met"]
    assert "met" in render({"rps": 60.0, "stack": "test", **results})


def test_one_lost_acknowledged_write_misses_the_target() -> None:
    results = summarise(_drill(*_calls(0)), _writes(lost_pairs=["p1"]))
    assert results["acknowledged_writes_lost"] == 1 and not results["target_met"]
    assert "MISSED" in render({"rps": 60.0, "stack": "test", **results})


def test_a_half_applied_failed_write_misses_the_target() -> None:
    results = summarise(_drill(*_calls(0)), _writes(failed_documents_half_applied=["d1"]))
    assert not results["target_met"]


def test_writes_back_late_or_searches_failing_miss_the_target() -> None:
    assert not summarise(_drill(*_calls(0), back_after=15.5), _writes())["target_met"]
    assert not summarise(_drill(*_calls(failed_searches=3)), _writes())["target_met"]


def test_no_round_run_is_no_target_met() -> None:
    drill = PgDrill(calls=_calls(0))
    assert not summarise(drill, _writes())["target_met"]
