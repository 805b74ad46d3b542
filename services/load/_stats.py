"""ghz's report, computed the way ghz computes it, from a list of call results.

Count, Total and Requests/sec cover every call; Average is over every call too; Fastest,
Slowest, the histogram and the latency distribution are over OK calls only (all calls
with ``count_errors``), and percentiles are nearest-rank on the sorted latencies — the
same definitions as ghz's reporter, so numbers from either tool compare directly.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import grpc

PERCENTILES = (10, 25, 50, 75, 90, 95, 99)
HISTOGRAM_BUCKETS = 10
OK = "OK"

# grpc.StatusCode names in the Go spelling ghz prints (codes.Code.String()).
_GO_NAMES = {"OK": "OK", "CANCELLED": "Canceled"}


def status_name(code: grpc.StatusCode) -> str:
    """``DEADLINE_EXCEEDED`` → ``DeadlineExceeded``, as ghz's status distribution shows it."""
    name: str = code.name
    return _GO_NAMES.get(name) or "".join(part.capitalize() for part in name.split("_"))


def error_text(code: grpc.StatusCode, details: str | None) -> str:
    """ghz's (grpc-go's) error string: ``rpc error: code = X desc = ...``."""
    return f"rpc error: code = {status_name(code)} desc = {details or ''}"


@dataclass(frozen=True)
class CallResult:
    """One finished call: when it started (seconds from the run's start), how long it took."""

    start_s: float
    latency_s: float
    status: str = OK
    error: str = ""


@dataclass(frozen=True)
class Bucket:
    """A histogram bucket: calls at or below ``mark_s`` and above the previous mark."""

    mark_s: float
    count: int
    frequency: float


@dataclass(frozen=True)
class Report:
    """The summary ghz prints, plus the per-call details behind it."""

    count: int
    total_s: float
    average_s: float
    fastest_s: float
    slowest_s: float
    rps: float
    latency_distribution: tuple[tuple[int, float], ...]
    histogram: tuple[Bucket, ...]
    status_code_distribution: dict[str, int]
    error_distribution: dict[str, int]
    details: tuple[CallResult, ...] = ()
    name: str = ""
    end_reason: str = "normal"
    options: dict[str, Any] = field(default_factory=dict)
    date: datetime = field(default_factory=lambda: datetime.now(UTC))

    def percentile(self, pct: int) -> float:
        """The latency at one of ``PERCENTILES`` (seconds); NaN when no call qualified."""
        return dict(self.latency_distribution).get(pct, math.nan)

    @property
    def ok_count(self) -> int:
        return self.status_code_distribution.get(OK, 0)

    def to_json(self, *, details: bool = True) -> dict[str, Any]:
        """ghz's JSON report shape; durations are integer nanoseconds as in Go."""
        out: dict[str, Any] = {
            "name": self.name,
            "endReason": self.end_reason,
            "options": self.options,
            "date": self.date.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "count": self.count,
            "total": _ns(self.total_s),
            "average": _ns(self.average_s),
            "fastest": _ns(self.fastest_s),
            "slowest": _ns(self.slowest_s),
            "rps": self.rps,
            "errorDistribution": dict(self.error_distribution),
            "statusCodeDistribution": dict(self.status_code_distribution),
            "latencyDistribution": [
                {"percentage": pct, "latency": _ns(lat)} for pct, lat in self.latency_distribution
            ],
            "histogram": [
                {"mark": b.mark_s, "count": b.count, "frequency": b.frequency}
                for b in self.histogram
            ],
        }
        if details:
            out["details"] = [
                {
                    "timestamp": (self.date.timestamp() - self.total_s) + d.start_s,
                    "latency": _ns(d.latency_s),
                    "error": d.error,
                    "status": d.status,
                }
                for d in self.details
            ]
        return out


def _ns(seconds: float) -> int:
    return 0 if math.isnan(seconds) else round(seconds * 1e9)


def latencies(sorted_s: list[float]) -> tuple[tuple[int, float], ...]:
    """Nearest-rank percentiles of already sorted latencies (ghz's ``latencies``)."""
    if not sorted_s:
        return ()
    out = []
    n = len(sorted_s)
    for pct in PERCENTILES:
        rank = pct / 100 * n
        index = int(rank)
        if rank == index:
            index -= 1
        out.append((pct, sorted_s[max(index, 0)]))
    return tuple(out)


def histogram(sorted_s: list[float]) -> tuple[Bucket, ...]:
    """Ten equal-width buckets from fastest to slowest, plus the slowest (ghz's histogram)."""
    if not sorted_s:
        return ()
    fastest, slowest = sorted_s[0], sorted_s[-1]
    width = (slowest - fastest) / HISTOGRAM_BUCKETS
    marks = [fastest + width * i for i in range(HISTOGRAM_BUCKETS)] + [slowest]
    counts = [0] * len(marks)
    bucket = 0
    for value in sorted_s:
        while value > marks[bucket] and bucket < len(marks) - 1:
            bucket += 1
        counts[bucket] += 1
    total = len(sorted_s)
    return tuple(
        Bucket(mark_s=m, count=c, frequency=c / total) for m, c in zip(marks, counts, strict=True)
    )


def build_report(
    results: list[CallResult],
    total_s: float,
    *,
    count_errors: bool = False,
    skip_first: int = 0,
    name: str = "",
    end_reason: str = "normal",
    options: dict[str, Any] | None = None,
) -> Report:
    """Summarises call results (in completion order) exactly as ghz's reporter does."""
    kept = results[skip_first:]
    count = len(kept)
    statuses = Counter(r.status for r in kept)
    errors = Counter(r.error for r in kept if r.error)
    timed = sorted(r.latency_s for r in kept if count_errors or r.status == OK)
    return Report(
        count=count,
        total_s=total_s,
        average_s=sum(r.latency_s for r in kept) / count if count else math.nan,
        fastest_s=timed[0] if timed else math.nan,
        slowest_s=timed[-1] if timed else math.nan,
        rps=count / total_s if total_s > 0 else math.nan,
        latency_distribution=latencies(timed),
        histogram=histogram(timed),
        status_code_distribution=dict(statuses),
        error_distribution=dict(errors),
        details=tuple(kept),
        name=name,
        end_reason=end_reason,
        options=dict(options or {}),
    )


def format_summary(report: Report) -> str:
    """The text ghz prints by default (summary, histogram, distributions)."""

    def ms(seconds: float) -> str:
        return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.2f} ms"

    total = f"{report.total_s * 1000:.2f} ms" if report.total_s < 1 else f"{report.total_s:.2f} s"
    lines = [
        "",
        "Summary:",
    ]
    if report.name:
        lines.append(f"  Name:\t{report.name}")
    lines += [
        f"  Count:\t{report.count}",
        f"  Total:\t{total}",
        f"  Slowest:\t{ms(report.slowest_s)}",
        f"  Fastest:\t{ms(report.fastest_s)}",
        f"  Average:\t{ms(report.average_s)}",
        f"  Requests/sec:\t{report.rps:.2f}",
        "",
        "Response time histogram:",
    ]
    peak = max((b.count for b in report.histogram), default=0)
    for b in report.histogram:
        bar = "∎" * ((b.count * 40 + peak // 2) // peak if peak else 0)
        lines.append(f"  {b.mark_s * 1000:.3f} [{b.count}]\t|{bar}")
    lines += ["", "Latency distribution:"]
    lines += [f"  {pct} % in {lat * 1000:.2f} ms " for pct, lat in report.latency_distribution]
    lines += ["", "Status code distribution:"]
    for status, n in sorted(report.status_code_distribution.items(), key=lambda kv: -kv[1]):
        lines.append(f"  [{status}]\t{n} responses")
    if report.error_distribution:
        lines += ["", "Error distribution:"]
        for error, n in sorted(report.error_distribution.items(), key=lambda kv: -kv[1]):
            lines.append(f"  [{n}]\t{error}")
    lines.append("")
    return "\n".join(lines)
