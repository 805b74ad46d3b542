"""``tandem bench report``: every registered benchmark, gateway load at several
concurrencies, and one report — JSON, PNG charts and ``SUMMARY.md`` — under ``bench/results``.

The per-service benchmarks run as child processes through the ``tandem bench`` commands
(each writes its own JSON; their printed tables go into the summary). Gateway load needs a
running stack (``make run``) and an API key; without them that part is skipped, and the
summary says so.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.load._runner import LoadOptions, TargetUnreachable, run_load
from services.load._stats import Report

DEFAULT_GATEWAY = "127.0.0.1:50051"
WARM_UP_S = 2.0

# Issue 11's targets (2-core machine, whole stack on it, demo data, 60 s runs).
TARGETS = {
    "search": {"concurrency": 16, "min_rps": 200.0, "max_p99_ms": 150.0},
    "ask_retrieve": {"concurrency": 16, "min_rps": 100.0, "max_p99_ms": 250.0},
}

# Varied questions, so the embedding cache does not turn the run into cache hits.
QUESTIONS = [
    "which healthcare accounts asked for a security review",
    "renewal risk for logistics customers",
    "pricing objections raised on recent calls",
    "accounts evaluating the analytics add-on",
    "what is our refund policy for annual plans",
    "onboarding problems mentioned by retail accounts",
    "who is the champion at the largest fintech account",
    "data residency requirements in call notes",
    "expansion opportunities in manufacturing",
    "support escalations about single sign-on",
    "discount approval policy for enterprise deals",
    "competitor mentions in education accounts",
    "integration with the customer's data warehouse",
    "security questionnaire follow-ups",
    "accounts that mention churn or cancellation",
    "product sheet for the workflow automation module",
]


@dataclass(frozen=True)
class Scenario:
    """One gateway RPC and the requests it rotates over (the load report and the cost
    benchmark measure the same calls)."""

    key: str
    label: str
    call: str
    data: list[dict[str, Any]]


SCENARIOS = (
    Scenario(
        "search",
        "Search (hybrid)",
        "tandem.v1.GatewayService.Search",
        [{"query": q, "mode": "SEARCH_MODE_HYBRID", "top_k": 10} for q in QUESTIONS],
    ),
    Scenario(
        "ask_retrieve",
        "Ask (RETRIEVE)",
        "tandem.v1.GatewayService.Ask",
        [{"question": q, "mode": "ASK_MODE_RETRIEVE"} for q in QUESTIONS],
    ),
)


@dataclass(frozen=True)
class ReportSettings:
    """What ``tandem bench report`` runs and where it writes."""

    out: Path = Path("bench/results")
    gateway: str = DEFAULT_GATEWAY
    api_key: str | None = None
    concurrency: tuple[int, ...] = (1, 8, 16, 32)
    duration_s: float = 10.0
    run_benches: bool = True
    # (name, argv) of every ``tandem bench`` command to run beside the load (from the CLI)
    benches: tuple[tuple[str, list[str]], ...] = ()

    @classmethod
    def from_args(
        cls,
        *,
        out: Path,
        gateway: str | None,
        api_key: str | None,
        concurrency: Sequence[int],
        duration_s: float,
        run_benches: bool,
        benches: Sequence[tuple[str, list[str]]] = (),
    ) -> ReportSettings:
        """Flags first, then ``TANDEM_GATEWAY`` / ``TANDEM_API_KEY``, then the defaults."""
        return cls(
            out=out,
            gateway=gateway or os.environ.get("TANDEM_GATEWAY") or DEFAULT_GATEWAY,
            api_key=api_key or os.environ.get("TANDEM_API_KEY") or None,
            concurrency=tuple(sorted(set(concurrency))),
            duration_s=duration_s,
            run_benches=run_benches,
            benches=tuple(benches),
        )


@dataclass
class BenchRun:
    """One ``tandem bench <name>`` child process."""

    name: str
    argv: list[str]
    returncode: int
    seconds: float
    output: str


@dataclass
class LoadPoint:
    """One scenario at one concurrency, reduced to what the table and charts show."""

    scenario: str
    concurrency: int
    count: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    average_ms: float
    errors: int
    statuses: dict[str, int] = field(default_factory=dict)
    # The load driver's own CPU use (% of one core): it shares the machine with the stack.
    client_cpu_pct: float = 0.0

    @classmethod
    def from_report(
        cls, scenario: str, concurrency: int, report: Report, client_cpu_s: float = 0.0
    ) -> LoadPoint:
        return cls(
            scenario=scenario,
            concurrency=concurrency,
            count=report.count,
            rps=round(report.rps, 2),
            p50_ms=round(report.percentile(50) * 1000, 2),
            p95_ms=round(report.percentile(95) * 1000, 2),
            p99_ms=round(report.percentile(99) * 1000, 2),
            average_ms=round(report.average_s * 1000, 2),
            errors=report.count - report.ok_count,
            statuses=dict(report.status_code_distribution),
            client_cpu_pct=round(100 * client_cpu_s / report.total_s, 1) if report.total_s else 0.0,
        )


def describe_machine() -> dict[str, Any]:
    """CPU model, cores, memory, OS and Python: the context every number needs."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib: float | None = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    affinity = getattr(os, "sched_getaffinity", None)
    usable = len(affinity(0)) if affinity is not None else os.cpu_count()
    return {
        "cpu_model": cpu,
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gib": memory_gib,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "git_commit": _git_commit(),
    }


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() or None


def run_benches(commands: Sequence[tuple[str, list[str]]]) -> list[BenchRun]:
    """Each ``tandem bench`` command (name, argv) as a child process, its output kept. The
    CLI, which owns the command tree, says which commands there are."""
    runs = []
    for name, argv in commands:
        print(f"\n=== tandem {' '.join(argv)}", flush=True)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _CLI, *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        print(done.stdout, end="", flush=True)
        if done.returncode != 0:
            print(done.stderr[-4000:], file=sys.stderr, flush=True)
        output = done.stdout if done.returncode == 0 else done.stdout + done.stderr[-4000:]
        runs.append(BenchRun(name, argv, done.returncode, round(seconds, 1), output))
    return runs


_CLI = "import sys; from services.cli._main import main; sys.exit(main(sys.argv[1:]))"


async def gateway_status(address: str, timeout_s: float = 3.0) -> str | None:
    """None when the gateway answers its health check SERVING, else why not."""
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=timeout_s
            )
    except grpc.aio.AioRpcError as exc:
        return f"no gateway at {address} ({exc.code().name}: {exc.details()})"
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        return f"the gateway at {address} is not SERVING"
    return None


async def run_gateway_load(settings: ReportSettings) -> tuple[list[LoadPoint], dict[str, Any]]:
    points: list[LoadPoint] = []
    raw: dict[str, Any] = {}
    metadata = {"authorization": f"Bearer {settings.api_key}"}
    for scenario in SCENARIOS:
        raw[scenario.key] = {}
        for concurrency in settings.concurrency:
            base = LoadOptions(
                call=scenario.call,
                host=settings.gateway,
                data=scenario.data,
                metadata=metadata,
                concurrency=concurrency,
                insecure=True,
                timeout_s=10.0,
                name=f"{scenario.key} c={concurrency}",
            )
            # A short unrecorded warm-up: connections, caches and pools reach steady state.
            await run_load(_with(base, duration_s=WARM_UP_S))
            cpu_before = time.process_time()
            report = await run_load(_with(base, duration_s=settings.duration_s))
            client_cpu_s = time.process_time() - cpu_before
            point = LoadPoint.from_report(scenario.key, concurrency, report, client_cpu_s)
            points.append(point)
            raw[scenario.key][str(concurrency)] = report.to_json(details=False)
            print(
                f"{scenario.label:<18} c={concurrency:<3} {point.rps:>8.1f} req/s  "
                f"p50 {point.p50_ms:>7.1f} ms  p95 {point.p95_ms:>7.1f} ms  "
                f"p99 {point.p99_ms:>7.1f} ms  errors {point.errors}  "
                f"driver CPU {point.client_cpu_pct:.0f}%",
                flush=True,
            )
    return points, raw


def _with(options: LoadOptions, **changes: Any) -> LoadOptions:
    values = {**options.__dict__, **changes}
    return LoadOptions(**values)


def write_charts(points: Sequence[LoadPoint], out: Path) -> list[Path]:
    """Latency percentiles vs concurrency and throughput vs concurrency (PNG, Agg)."""
    import matplotlib  # noqa: PLC0415 - optional, heavy; only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    labels = {s.key: s.label for s in SCENARIOS}
    written = []
    fig, axes = plt.subplots(1, len(SCENARIOS), figsize=(11, 4.2), sharey=False)
    for ax, scenario in zip(axes, SCENARIOS, strict=True):
        rows = sorted(
            (p for p in points if p.scenario == scenario.key), key=lambda p: p.concurrency
        )
        xs = [p.concurrency for p in rows]
        for attr, style in (("p50_ms", "o-"), ("p95_ms", "s--"), ("p99_ms", "^:")):
            ax.plot(xs, [getattr(p, attr) for p in rows], style, label=attr.split("_")[0])
        target = TARGETS.get(scenario.key)
        if target is not None:
            ax.axhline(
                target["max_p99_ms"],
                color="grey",
                linewidth=0.8,
                linestyle="-.",
                label="p99 target",
            )
        ax.set_title(labels[scenario.key])
        ax.set_xlabel("concurrency")
        ax.set_ylabel("latency (ms)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Gateway latency percentiles vs concurrency")
    fig.tight_layout()
    path = out / "latency_vs_concurrency.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for scenario in SCENARIOS:
        rows = sorted(
            (p for p in points if p.scenario == scenario.key), key=lambda p: p.concurrency
        )
        ax.plot([p.concurrency for p in rows], [p.rps for p in rows], "o-", label=scenario.label)
    ax.set_xscale("log", base=2)
    xs = sorted({p.concurrency for p in points})
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("concurrency")
    ax.set_ylabel("requests / s")
    ax.set_title("Gateway throughput vs concurrency")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = out / "throughput_vs_concurrency.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)
    return written


def target_rows(points: Sequence[LoadPoint], duration_s: float) -> list[str]:
    rows = []
    for key, target in TARGETS.items():
        match = [p for p in points if p.scenario == key and p.concurrency == target["concurrency"]]
        if not match:
            rows.append(f"| {key} | c={target['concurrency']} not measured | | | |")
            continue
        p = match[0]
        ok = p.rps >= target["min_rps"] and p.p99_ms <= target["max_p99_ms"] and p.errors == 0
        note = "" if duration_s >= 60 else f" (measured over {duration_s:g} s, target says 60 s)"
        rows.append(
            f"| {key} | ≥ {target['min_rps']:g} req/s, p99 ≤ {target['max_p99_ms']:g} ms, "
            f"0 errors | {p.rps:.1f} req/s, p99 {p.p99_ms:.1f} ms, {p.errors} errors | "
            f"{'met' if ok else 'NOT met'}{note} |"
        )
    return rows


def render_summary(
    *,
    machine: dict[str, Any],
    benches: Sequence[BenchRun],
    points: Sequence[LoadPoint],
    gateway_note: str | None,
    charts: Sequence[Path],
    settings: ReportSettings,
) -> str:
    lines = ["# Benchmark summary", "", "Written by `tandem bench report` (`make bench`).", ""]
    lines += ["## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k.replace('_', ' ')} | {v} |" for k, v in machine.items()]
    lines += ["", "## Gateway load", ""]
    if gateway_note is not None:
        lines += [f"**Skipped:** {gateway_note}", ""]
    else:
        lines += [
            f"Gateway `{settings.gateway}`, {settings.duration_s:g} s per point after a "
            f"{WARM_UP_S:g} s warm-up, queries rotating over {len(QUESTIONS)} questions. "
            "Latency percentiles are over OK calls (ghz's definition).",
            "",
            "| call | concurrency | requests | req/s | p50 ms | p95 ms | p99 ms | errors "
            "| driver CPU % |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for p in points:
            lines.append(
                f"| {p.scenario} | {p.concurrency} | {p.count} | {p.rps:.1f} | {p.p50_ms:.1f} "
                f"| {p.p95_ms:.1f} | {p.p99_ms:.1f} | {p.errors} | {p.client_cpu_pct:.0f} |"
            )
        lines += [
            "",
            "Driver CPU is the load generator's own use of one core during the point; on a "
            "machine shared with the stack it is capacity the services did not get.",
        ]
        if any("ResourceExhausted" in p.statuses for p in points):
            lines += [
                "",
                "**Note:** the tenant quota refused some calls (ResourceExhausted): start the "
                "gateway with `GATEWAY_RATE_PER_S` / `GATEWAY_BURST` above the offered load to "
                "measure capacity rather than the quota.",
            ]
        lines += [
            "",
            "### Targets (issue 11)",
            "",
            "| call | target | measured | verdict |",
            "|---|---|---|---|",
            *target_rows(points, settings.duration_s),
            "",
        ]
        lines += [f"![{c.stem}]({c.name})" for c in charts]
        lines.append("")
    lines += ["## Service benchmarks", ""]
    if not benches:
        lines += ["Not run (`--skip-benches`).", ""]
    for run in benches:
        verdict = "ok" if run.returncode == 0 else f"FAILED (exit {run.returncode})"
        lines += [
            f"### `tandem {' '.join(run.argv)}` — {verdict}, {run.seconds:g} s",
            "",
            "```",
            run.output.strip()[-6000:],
            "```",
            "",
        ]
    return "\n".join(lines)


def run_report(settings: ReportSettings) -> int:
    """Runs everything, writes the report; the exit code is 1 if any benchmark failed."""
    settings.out.mkdir(parents=True, exist_ok=True)
    machine = describe_machine()
    (settings.out / "machine.json").write_text(json.dumps(machine, indent=2))
    benches = run_benches(settings.benches) if settings.run_benches else []

    points: list[LoadPoint] = []
    charts: list[Path] = []
    note: str | None
    if settings.api_key is None:
        note = (
            "no API key: set TANDEM_API_KEY (or --api-key) to a key for the running gateway "
            "(`make run` prints one)."
        )
    else:
        note = asyncio.run(gateway_status(settings.gateway))
        if note is not None:
            note += "; start the stack with `make run` (or compose) and set TANDEM_GATEWAY."
    if note is None:
        print(f"\n=== gateway load against {settings.gateway}", flush=True)
        try:
            points, raw = asyncio.run(run_gateway_load(settings))
        except TargetUnreachable as exc:
            note = str(exc)
        else:
            (settings.out / "gateway-load.json").write_text(
                json.dumps(
                    {
                        "gateway": settings.gateway,
                        "duration_s": settings.duration_s,
                        "points": [p.__dict__ for p in points],
                        "reports": raw,
                    },
                    indent=2,
                )
            )
            charts = write_charts(points, settings.out)
    if note is not None:
        print(f"\ngateway load skipped: {note}", flush=True)

    summary = render_summary(
        machine=machine,
        benches=benches,
        points=points,
        gateway_note=note,
        charts=charts,
        settings=settings,
    )
    (settings.out / "SUMMARY.md").write_text(summary)
    print(f"\nwrote {settings.out / 'SUMMARY.md'}", flush=True)
    failed = [b.name for b in benches if b.returncode != 0]
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed or any(math.isnan(p.rps) for p in points) else 0
