"""The ingest-memory benchmark's verdict: first tenth vs last tenth of the run."""

from __future__ import annotations

from services.bench.ingest_memory import _summary


def _samples(values: list[float]) -> list[dict[str, float]]:
    return [{"documents": float(i), "rss": v} for i, v in enumerate(values)]


def test_a_warm_up_then_plateau_is_flat_growth_from_the_first_tenth() -> None:
    summary = _summary(_samples([300.0] * 10 + [340.0] * 90), "rss")
    assert summary["first_tenth_mib"] == 300.0
    assert summary["last_tenth_mib"] == 340.0
    assert summary["peak_mib"] == 340.0


def test_a_leak_shows_as_growth_proportional_to_the_run() -> None:
    summary = _summary(_samples([300.0 + i for i in range(100)]), "rss")
    assert summary["growth_mib"] == 90.0
    assert summary["growth_pct"] == round(100 * 90 / 304.5, 1)


def test_a_short_run_uses_at_least_one_sample_per_end() -> None:
    summary = _summary(_samples([100.0, 150.0, 120.0]), "rss")
    assert summary == {
        "first_tenth_mib": 100.0,
        "last_tenth_mib": 120.0,
        "peak_mib": 150.0,
        "growth_mib": 20.0,
        "growth_pct": 20.0,
    }
