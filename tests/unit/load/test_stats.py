"""ghz's report definitions on known inputs: nearest-rank percentiles, OK-only latencies."""

from __future__ import annotations

import json

import grpc
import pytest

from services.load import CallResult, build_report, format_summary, status_name


def _ok(ms: float) -> CallResult:
    return CallResult(start_s=0.0, latency_s=ms / 1000)


def test_percentiles_are_nearest_rank_over_ok_calls() -> None:
    results = [_ok(ms) for ms in range(1, 101)]
    results += [CallResult(0.0, 5.0, "Unavailable", "rpc error: code = Unavailable desc = x")] * 4
    report = build_report(results, total_s=2.0)

    assert dict(report.latency_distribution) == pytest.approx(
        {10: 0.010, 25: 0.025, 50: 0.050, 75: 0.075, 90: 0.090, 95: 0.095, 99: 0.099}
    )
    assert report.fastest_s == pytest.approx(0.001)
    assert report.slowest_s == pytest.approx(0.100)
    # Count, RPS and Average cover every call, errors included.
    assert report.count == 104
    assert report.rps == pytest.approx(52.0)
    assert report.average_s == pytest.approx((5.050 + 20.0) / 104)
    assert report.status_code_distribution == {"OK": 100, "Unavailable": 4}
    assert report.error_distribution == {"rpc error: code = Unavailable desc = x": 4}


def test_count_errors_puts_failed_calls_into_the_latencies() -> None:
    results = [_ok(10), _ok(20), CallResult(0.0, 0.5, "Internal", "boom")]
    report = build_report(results, total_s=1.0, count_errors=True)

    assert report.slowest_s == pytest.approx(0.5)
    assert report.percentile(99) == pytest.approx(0.5)


def test_skip_first_leaves_the_warm_up_out() -> None:
    results = [_ok(900), _ok(10), _ok(10)]
    report = build_report(results, total_s=1.0, skip_first=1)

    assert report.count == 2
    assert report.slowest_s == pytest.approx(0.010)


def test_histogram_has_ten_equal_buckets_and_the_slowest() -> None:
    # Marks every 10 ms from 10 to 110: a call lands in the first bucket whose mark >= it.
    report = build_report([_ok(ms) for ms in (10, 10, 20, 55, 110)], total_s=1.0)

    marks = [b.mark_s for b in report.histogram]
    assert len(marks) == 11
    assert marks[0] == pytest.approx(0.010)
    assert marks[-1] == pytest.approx(0.110)
    assert [b.count for b in report.histogram] == [2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1]


def test_status_names_use_ghz_spelling() -> None:
    assert status_name(grpc.StatusCode.OK) == "OK"
    assert status_name(grpc.StatusCode.DEADLINE_EXCEEDED) == "DeadlineExceeded"
    assert status_name(grpc.StatusCode.CANCELLED) == "Canceled"
    assert status_name(grpc.StatusCode.RESOURCE_EXHAUSTED) == "ResourceExhausted"


def test_json_has_ghz_fields_with_nanosecond_durations() -> None:
    report = build_report([_ok(10), _ok(30)], total_s=0.5, name="t")
    out = json.loads(json.dumps(report.to_json()))

    assert {
        "name",
        "endReason",
        "options",
        "date",
        "count",
        "total",
        "average",
        "fastest",
        "slowest",
        "rps",
        "errorDistribution",
        "statusCodeDistribution",
        "latencyDistribution",
        "histogram",
        "details",
    } <= set(out)
    assert out["total"] == 500_000_000
    assert out["average"] == 20_000_000
    assert out["latencyDistribution"][0] == {"percentage": 10, "latency": 10_000_000}
    assert out["details"][1]["status"] == "OK"


def test_summary_text_has_ghz_sections() -> None:
    results = [_ok(10), CallResult(0.0, 0.2, "Internal", "rpc error: code = Internal desc = x")]
    text = format_summary(build_report(results, total_s=1.0))

    for heading in (
        "Summary:",
        "Count:\t2",
        "Total:",
        "Slowest:",
        "Fastest:",
        "Average:",
        "Requests/sec:\t2.00",
        "Response time histogram:",
        "Latency distribution:",
        "99 % in 10.00 ms",
        "Status code distribution:",
        "[OK]\t1 responses",
        "Error distribution:",
        "[1]\trpc error: code = Internal desc = x",
    ):
        assert heading in text
