"""``tandem bench cost``: CPU per request of every gateway RPC, per process of the stack.

Drives Search, Ask RETRIEVE, Ask AUTO on a countable question, AskSql and StreamAsk at a
fixed concurrency through the edge (or the gateway), and Search over HTTP/JSON through the
edge and the HTTP face (``search_http``: issue 49's target is at most 1.15x Search's CPU
per request over gRPC), and reads, over each load window, the
CPU that every process of the stack spent — Python services, the edge's nginx, the
Postgres postmaster and all its backends — from ``/proc``. CPU per request is the number
to drive down: on a machine shared with the load driver and with other work, wall-clock
throughput is noisy, CPU per request much less so.

The stack is the one ``make bench`` started (``TANDEM_STACK_PID``: the ``tandem run``
pid, with ``TANDEM_API_KEY``), or one this command starts with ``tandem run`` in a private
data directory. ``--baseline SRC`` also starts a second stack from another source tree
(e.g. ``git worktree add /tmp/base HEAD``) on other ports, and measures the two side by
side in alternating rounds: a before/after table from one run.

``--principal ID`` (with ``--principal-groups`` and ``--principal-attributes``) drives the
stack as a key holding ``act_as`` calling for that principal, the headers on every call;
``--principal-compare`` measures each stack both ways in alternating rounds (the demo's
service key, then the principal) and prints the ratio: issue 47's target is Search and Ask
CPU ms per request with a principal at most 1.10x without.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.bench._proc import (
    LinuxProc,
    ProcSource,
    StackProcesses,
    clock_ticks_per_s,
    cpu_delta,
    postmaster_pid,
)
from services.bench._publish import publish
from services.common import Principal
from services.load import CallResult, LoadOptions, Report, build_report, run_load
from services.load.report import QUESTIONS, Scenario

# Columns of the per-process table, in call order; ``other`` is the supervisor and guards.
ROLES = (
    "edge", "rest", "gateway", "router", "retrieval", "sql", "embedding", "postgres", "other",
)  # fmt: skip
# Issue 20's targets: CPU ms per request, every process summed, demo corpus, c=16.
TARGETS_CPU_MS = {"search": 4.5, "ask_retrieve": 8.0, "ask_sql": 4.0}
STACK_PORTS = {
    "GATEWAY_PORT": 50051,
    "ROUTER_PORT": 50052,
    "RETRIEVAL_PORT": 50053,
    "EMBEDDING_PORT": 50054,
    "SQL_PORT": 50055,
    "EDGE_PORT": 50050,
    "REST_PORT": 50056,
}
# The databases the stack's services use on a shared postmaster (retrieval and the gateway
# on ``postgres``, SQL on the warehouse); other databases' backends are someone else's.
STACK_DATABASES = frozenset({"postgres", "tandem_warehouse"})
_KEY_LINE = re.compile(r"export TANDEM_API_KEY=(\S+)")
# The tenant of the demo key `tandem run` prints: the principal's act_as key is its.
BENCH_TENANT = "demo"
# Issue 47: CPU per request with a principal at most this many times without.
PRINCIPAL_RATIO_TARGET = 1.10
PRINCIPAL_STACK = "principal"
# Issue 49: Search over HTTP/JSON at most this many times Search over gRPC.
HTTP_RATIO_TARGET = 1.15
# A scenario whose call is ``<VERB> <path>`` goes over HTTP/JSON (through the edge).
_HTTP_CALL = re.compile(r"^(GET|POST|PATCH|DELETE) (/\S+)$")

# Varied questions (the report's), so the embedding cache does not turn the run into hits.
SEMANTIC = QUESTIONS
COUNTABLE = [
    "How many companies are there?",
    "How many open opportunities are there?",
    "How many deals are closed won?",
    "How many companies are in the Healthcare industry?",
    "What is the average deal amount?",
    "How many opportunities are there in each stage?",
    "How many companies are in each region?",
    "What is the total amount of closed won deals?",
]

# Refused on the demo warehouse, each after the linker's readings by meaning (a noun no
# name or stored value says, compared with names and with the sampled values).
REFUSED = [
    "How many companies are universities?",
    "How many contacts are engineers?",
    "How many opportunities are victories?",
    "How many activities are phone conversations?",
]
# What a run measures unless --only names others.
OPTIONAL_SCENARIOS = frozenset({"ask_sql_refused"})

SCENARIOS = (
    Scenario(
        "search",
        "Search (hybrid)",
        "tandem.v1.GatewayService.Search",
        [{"query": q, "mode": "SEARCH_MODE_HYBRID", "top_k": 10} for q in SEMANTIC],
    ),
    Scenario(
        "search_http",
        "Search (hybrid, HTTP)",
        "POST /v1:search",
        [{"query": q, "mode": "SEARCH_MODE_HYBRID", "topK": 10} for q in SEMANTIC],
    ),
    Scenario(
        "ask_retrieve",
        "Ask RETRIEVE",
        "tandem.v1.GatewayService.Ask",
        [{"question": q, "mode": "ASK_MODE_RETRIEVE"} for q in SEMANTIC],
    ),
    Scenario(
        "ask_auto_sql",
        "Ask AUTO (SQL question)",
        "tandem.v1.GatewayService.Ask",
        [{"question": q, "mode": "ASK_MODE_AUTO"} for q in COUNTABLE],
    ),
    Scenario(
        "ask_sql",
        "AskSql",
        "tandem.v1.GatewayService.AskSql",
        [{"question": q} for q in COUNTABLE],
    ),
    # AskSql on questions the SQL service refuses after every reading, the last ones by
    # meaning (issue 45 s64: a refusal once embedded the sampled values each time):
    # named with --only, not in the default run
    Scenario(
        "ask_sql_refused",
        "AskSql (refused)",
        "tandem.v1.GatewayService.AskSql",
        [{"question": q} for q in REFUSED],
    ),
    Scenario(
        "stream_ask",
        "StreamAsk (AUTO)",
        "tandem.v1.GatewayService.StreamAsk",
        [{"question": q} for q in SEMANTIC],
    ),
)


@dataclass
class Stack:
    """A stack under measurement: where to call it, with which key, and its processes."""

    name: str
    target: str
    api_key: str
    processes: StackProcesses
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    # Sent with every call besides the key: a principal's headers.
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class Tally:
    """One scenario on one stack, pooled over its rounds."""

    count: int = 0
    errors: int = 0
    seconds: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)
    latencies_s: list[float] = field(default_factory=list)

    def add(self, report: Report, cpu_s: dict[str, float]) -> None:
        self.count += report.count
        self.errors += sum(n for code, n in report.status_code_distribution.items() if code != "OK")
        self.seconds += report.total_s
        for role, spent in cpu_s.items():
            self.cpu_s[role] = self.cpu_s.get(role, 0.0) + spent
        self.latencies_s += [c.latency_s for c in report.details if c.status == "OK"]

    def summary(self) -> dict[str, Any]:
        """Requests/s, p50/p99 (nearest rank over OK calls) and CPU ms per request."""
        per_request = {
            role: round(self.cpu_s.get(role, 0.0) * 1000 / self.count, 2) if self.count else None
            for role in ROLES
        }
        total = sum(self.cpu_s.values()) * 1000 / self.count if self.count else math.nan
        return {
            "requests": self.count,
            "errors": self.errors,
            "rps": round(self.count / self.seconds, 1) if self.seconds else math.nan,
            "p50_ms": _percentile_ms(self.latencies_s, 50),
            "p99_ms": _percentile_ms(self.latencies_s, 99),
            "cpu_ms_per_request": round(total, 2),
            "cpu_ms_per_request_by_process": per_request,
        }


def _percentile_ms(values: Sequence[float], pct: int) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return round(ordered[rank - 1] * 1000, 1)


async def measure(
    stack: Stack,
    scenario: Scenario,
    *,
    concurrency: int,
    duration_s: float,
    warm_up_s: float,
    source: ProcSource,
    ticks_per_s: int,
) -> tuple[Report, dict[str, float]]:
    """One warm-up and one measured window; the CPU every stack process spent in it."""
    if _HTTP_CALL.match(scenario.call):
        metadata = {"authorization": f"Bearer {stack.api_key}", **dict(stack.headers)}
        await run_http_load(stack.target, scenario, metadata, concurrency, warm_up_s)
        before = stack.processes.snapshot(source)
        report = await run_http_load(stack.target, scenario, metadata, concurrency, duration_s)
        after = stack.processes.snapshot(source)
        return report, cpu_delta(before, after, ticks_per_s)
    options = LoadOptions(
        call=scenario.call,
        host=stack.target,
        data=scenario.data,
        metadata={"authorization": f"Bearer {stack.api_key}", **dict(stack.headers)},
        concurrency=concurrency,
        duration_s=warm_up_s,
        insecure=True,
        timeout_s=10.0,
        name=f"{scenario.key} c={concurrency}",
    )
    await run_load(options)
    before = stack.processes.snapshot(source)
    report = await run_load(LoadOptions(**{**options.__dict__, "duration_s": duration_s}))
    after = stack.processes.snapshot(source)
    return report, cpu_delta(before, after, ticks_per_s)


async def run_http_load(
    target: str,
    scenario: Scenario,
    headers: dict[str, str],
    concurrency: int,
    duration_s: float,
) -> Report:
    """``concurrency`` HTTP/1.1 clients (one kept-alive connection each) calling
    ``scenario`` back to back for ``duration_s``, its bodies in rotation: the same load
    shape as the gRPC driver's, as a ghz-style report (status ``OK`` or ``HTTP <code>``)."""
    import httpx  # noqa: PLC0415 — only the HTTP scenarios need it

    found = _HTTP_CALL.match(scenario.call)
    assert found is not None
    verb, path = found.groups()
    results: list[CallResult] = []
    start = time.monotonic()
    deadline = start + duration_s
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=f"http://{target}", headers=headers, timeout=10.0, limits=limits
    ) as client:

        async def worker(index: int) -> None:
            n = index
            while time.monotonic() < deadline:
                body = scenario.data[n % len(scenario.data)]
                n += concurrency
                began = time.monotonic()
                try:
                    reply = await client.request(verb, path, json=body)
                    status = "OK" if reply.status_code == 200 else f"HTTP {reply.status_code}"
                except httpx.HTTPError as exc:
                    status = f"HTTP {type(exc).__name__}"
                results.append(CallResult(began - start, time.monotonic() - began, status))

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return build_report(results, time.monotonic() - start, name=f"{scenario.key} c={concurrency}")


def _offset_ports(offset: int) -> dict[str, str]:
    return {name: str(port + offset) for name, port in STACK_PORTS.items()}


def start_stack(
    name: str,
    data_dir: Path,
    *,
    port_offset: int,
    source: Path | None,
    timeout_s: float,
    traces: bool = False,
    extra_args: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
) -> Stack:
    """``tandem run`` in ``data_dir`` on shifted ports (quota raised so the run measures the
    system), from ``source`` when given, with the local span store only if ``traces``;
    waits for the printed demo key."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    for variable in ("DATABASE_URL", "WAREHOUSE_DATABASE_URL", "TANDEM_API_KEY"):
        env.pop(variable, None)
    env.update(_offset_ports(port_offset))
    env.update(
        TANDEM_DATA_DIR=str(data_dir.resolve()),
        GATEWAY_RATE_PER_S="100000",
        GATEWAY_BURST="100000",
        # blank: no span store (`tandem run` otherwise writes one under the data dir)
        TANDEM_TRACE_DIR=str((data_dir / "traces").resolve()) if traces else "",
    )
    env.update(extra_env or {})
    model = Path(".tandem/models/all-MiniLM-L6-v2-int8")
    if "EMBEDDING_MODEL_PATH" not in env and "EMBEDDING_MODEL" not in env and model.is_dir():
        env["EMBEDDING_MODEL_PATH"] = str(model.resolve())  # not assembled again per stack
    cwd = None
    if source is not None:
        # ``python -m`` puts the working directory first on sys.path, ahead of PYTHONPATH:
        # the stack runs from inside the source tree, or it would run this one.
        cwd = source.resolve()
        env["PYTHONPATH"] = os.pathsep.join([str(cwd), str(cwd / "gen")])
    log = data_dir / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", _CLI, "run", *extra_args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
        )
    deadline = time.monotonic() + timeout_s
    key = None
    while key is None:
        if process.poll() is not None or time.monotonic() > deadline:
            stop_stack(Stack(name, "", "", StackProcesses(()), process, log))
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the {name} stack did not come up (log {log}):\n{tail}")
        match = _KEY_LINE.search(log.read_text(errors="replace"))
        key = match.group(1) if match else None
        time.sleep(0.5)
    roots = [process.pid]
    postmaster = postmaster_pid(data_dir / "pg")
    if postmaster is not None:
        roots.append(postmaster)
    target = f"127.0.0.1:{STACK_PORTS['EDGE_PORT'] + port_offset}"
    return Stack(name, target, key, StackProcesses(tuple(roots)), process, log)


def stop_stack(stack: Stack) -> None:
    """Ctrl-C to ``tandem run`` (it drains and stops everything), killed if it hangs."""
    if stack.process is None or stack.process.poll() is not None:
        return
    stack.process.send_signal(signal.SIGINT)
    try:
        stack.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        stack.process.kill()
        stack.process.wait()


def attach_stack(stack_pid: int, api_key: str, target: str, data_dir: Path) -> Stack:
    """The stack ``make bench`` started: its supervisor's tree, and the postmaster of its
    data directory (shared, perhaps: only the stack's databases' backends count)."""
    roots = [stack_pid]
    postmaster = postmaster_pid(data_dir / "pg")
    if postmaster is not None:
        roots.append(postmaster)
    return Stack("current", target, api_key, StackProcesses(tuple(roots), STACK_DATABASES))


_CLI = "import sys; from services.cli._main import main; sys.exit(main(sys.argv[1:]))"


@dataclass(frozen=True)
class CostSettings:
    """What ``tandem bench cost`` runs."""

    out: Path = Path("bench-results/cost.json")
    concurrency: int = 16
    duration_s: float = 10.0
    warm_up_s: float = 2.0
    rounds: int = 1
    scenarios: tuple[str, ...] = tuple(s.key for s in SCENARIOS if s.key not in OPTIONAL_SCENARIOS)
    baseline: Path | None = None
    data_dir: Path = Path(".tandem/bench-cost")
    through: str = "edge"
    start_timeout_s: float = 900.0
    # Stacks it starts write the local span store (as `tandem run` does by default): the
    # cost of recording every span. Off, nothing exports a span and none is recorded.
    traces: bool = False
    # Drive the stack as this principal (an act_as key of the demo tenant); with
    # ``principal_compare`` as the service key too, side by side.
    principal: Principal | None = None
    principal_compare: bool = False


def act_as_key(data_dir: Path, *, cwd: Path | None = None) -> str:
    """A fresh key of the demo tenant holding every scope and ``act_as``, created with
    ``tandem keys create`` on the key store of the stack in ``data_dir``."""
    env = dict(os.environ)
    for variable in ("DATABASE_URL", "WAREHOUSE_DATABASE_URL"):
        env.pop(variable, None)
    env["TANDEM_DATA_DIR"] = str(data_dir.resolve())
    done = subprocess.run(
        [sys.executable, "-c", _CLI, "keys", "create", "--tenant", BENCH_TENANT,
         "--scope", "all,act_as", "--label", "bench cost principal", "--json"],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"could not create an act_as key: {done.stderr[-2000:]}")
    key: str = json.loads(done.stdout)["api_key"]
    return key


def as_principal(stack: Stack, principal: Principal, key: str, *, name: str | None = None) -> Stack:
    """``stack`` called with ``key`` for ``principal`` (its processes, not its lifetime:
    the view never stops the stack)."""
    return Stack(
        name or stack.name, stack.target, key, stack.processes, headers=principal.headers()
    )


def with_principal(
    stacks: Sequence[Stack], settings: CostSettings, data_dirs: Sequence[Path]
) -> list[Stack]:
    """The stacks to measure once ``settings.principal`` is given: each as the principal,
    or (``principal_compare``) each as the service key and as the principal."""
    principal = settings.principal
    if principal is None:
        return list(stacks)
    out: list[Stack] = []
    for stack, data_dir in zip(stacks, data_dirs, strict=True):
        key = act_as_key(data_dir)
        if settings.principal_compare:
            out += [stack, as_principal(stack, principal, key, name=PRINCIPAL_STACK)]
        else:
            stack.api_key, stack.headers = key, principal.headers()
            out.append(stack)
    return out


def principal_ratios(results: dict[str, Any]) -> dict[str, float]:
    """Per RPC, CPU ms per request as the principal over as the service key (compare)."""
    stacks = results["stacks"]
    names = [n for n in stacks if n != PRINCIPAL_STACK]
    if PRINCIPAL_STACK not in stacks or len(names) != 1:
        return {}
    service, principal = stacks[names[0]], stacks[PRINCIPAL_STACK]
    return {
        key: round(principal[key]["cpu_ms_per_request"] / row["cpu_ms_per_request"], 3)
        for key, row in service.items()
        if key in principal and row["cpu_ms_per_request"]
    }


# A stack is settled when all its processes together use at most this share of one core
# over a window; it is waited for at most SETTLE_LIMIT_S.
SETTLE_SHARE = 0.05
SETTLE_WINDOW_S = 2.0
SETTLE_LIMIT_S = 120.0


async def settle(
    stacks: Sequence[Stack],
    source: ProcSource,
    ticks_per_s: int,
    *,
    share: float = SETTLE_SHARE,
    window_s: float = SETTLE_WINDOW_S,
    limit_s: float = SETTLE_LIMIT_S,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> float | None:
    """Wait until every stack is idle, and return how long that took (None: the limit
    passed first). A stack just started still works after its health checks pass (the
    demo's ingest leaves Postgres to vacuum and analyse): measured in the first rounds,
    that work was charged to the requests (one run's first two rounds 20 % dearer)."""
    waited = 0.0
    while True:
        before = [s.processes.snapshot(source) for s in stacks]
        await sleep(window_s)
        waited += window_s
        after = [s.processes.snapshot(source) for s in stacks]
        busiest = max(
            sum(cpu_delta(b, a, ticks_per_s).values()) / window_s
            for b, a in zip(before, after, strict=True)
        )
        if busiest <= share:
            return waited
        if waited >= limit_s:
            return None


async def _run_rounds(
    stacks: Sequence[Stack], settings: CostSettings
) -> dict[str, dict[str, Tally]]:
    source = LinuxProc()
    ticks = clock_ticks_per_s()
    tallies: dict[str, dict[str, Tally]] = {s.name: {} for s in stacks}
    settled = await settle(stacks, source, ticks)
    print(
        f"stacks idle after {settled:g} s"
        if settled is not None
        else f"stacks still busy after {SETTLE_LIMIT_S:g} s; measuring anyway",
        flush=True,
    )
    chosen = [s for s in SCENARIOS if s.key in settings.scenarios]
    for scenario in chosen:
        for index in range(settings.rounds):
            # Alternate which stack goes first, so neither always follows the other's load.
            order = list(stacks) if index % 2 == 0 else list(reversed(stacks))
            for stack in order:
                report, cpu_s = await measure(
                    stack,
                    scenario,
                    concurrency=settings.concurrency,
                    duration_s=settings.duration_s,
                    warm_up_s=settings.warm_up_s,
                    source=source,
                    ticks_per_s=ticks,
                )
                tallies[stack.name].setdefault(scenario.key, Tally()).add(report, cpu_s)
                total = sum(cpu_s.values()) * 1000 / report.count if report.count else math.nan
                print(
                    f"  {scenario.label:<24} {stack.name:<8} round {index + 1}: "
                    f"{report.rps:7.1f} req/s  {total:6.2f} CPU ms/request",
                    flush=True,
                )
    return tallies


def render(results: dict[str, Any]) -> str:
    """The printed table: per RPC and stack, throughput, latency and CPU ms per process."""
    names = list(results["stacks"])
    lines = [
        f"CPU per request through the {results['through']}, c={results['concurrency']}, "
        f"{results['duration_s']:g} s x {results['rounds']} round(s) per stack; "
        "CPU ms per request summed over every process of the stack; spans "
        + ("recorded to the local span store" if results.get("traces") else "not exported"),
        "",
    ]
    header = f"{'rpc':<24}{'stack':<9}{'req/s':>8}{'p50':>7}{'p99':>7}{'err':>5}{'CPU ms':>8}"
    header += "".join(f"{role[:9]:>10}" for role in ROLES)
    lines.append(header)
    for scenario in SCENARIOS:
        rows = [(n, results["stacks"][n].get(scenario.key)) for n in names]
        for name, row in rows:
            if row is None:
                continue
            per = row["cpu_ms_per_request_by_process"]
            line = (
                f"{scenario.label:<24}{name:<9}{row['rps']:>8.1f}{row['p50_ms']:>7.1f}"
                f"{row['p99_ms']:>7.1f}{row['errors']:>5}{row['cpu_ms_per_request']:>8.2f}"
            )
            line += "".join(f"{per[r]:>10.2f}" for r in ROLES)
            lines.append(line)
    targets = ", ".join(f"{k} ≤ {v:g} ms" for k, v in TARGETS_CPU_MS.items())
    lines += ["", f"targets (issue 20, CPU ms per request): {targets}"]
    http = results.get("http_ratios") or {}
    if http:
        shown = ", ".join(f"{k} {v:.2f}x" for k, v in http.items())
        lines.append(
            f"Search over HTTP / over gRPC (issue 49, target ≤ {HTTP_RATIO_TARGET:.2f}x): " + shown
        )
    ratios = results.get("principal_ratios") or {}
    if ratios:
        shown = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
        lines.append(
            f"with a principal / without (issue 47, target ≤ {PRINCIPAL_RATIO_TARGET:.2f}x): "
            + shown
        )
    return "\n".join(lines)


def run(settings: CostSettings) -> dict[str, Any]:
    """Start or attach, measure, stop what was started; the results as JSON-ready data."""
    stacks: list[Stack] = []
    data_dirs: list[Path] = []
    stack_pid = os.environ.get("TANDEM_STACK_PID")
    api_key = os.environ.get("TANDEM_API_KEY")
    if settings.principal is not None and settings.baseline is not None:
        raise ValueError("--principal measures this tree's stack; not with --baseline")
    try:
        if stack_pid and api_key and settings.baseline is None:
            port = STACK_PORTS["EDGE_PORT" if settings.through == "edge" else "GATEWAY_PORT"]
            default = f"127.0.0.1:{os.environ.get(f'{settings.through.upper()}_PORT', port)}"
            target = (
                default if settings.through == "edge" else os.environ.get("TANDEM_GATEWAY", default)
            )
            data_dir = Path(os.environ.get("TANDEM_DATA_DIR") or ".tandem")
            stacks.append(attach_stack(int(stack_pid), api_key, target, data_dir))
            data_dirs.append(data_dir)
        else:
            if settings.baseline is not None:
                print(f"starting the before stack from {settings.baseline} …", flush=True)
                stacks.append(
                    start_stack(
                        "before",
                        settings.data_dir / "before",
                        port_offset=200,
                        source=settings.baseline,
                        timeout_s=settings.start_timeout_s,
                        traces=settings.traces,
                    )
                )
            name = "after" if settings.baseline is not None else "current"
            print(f"starting the {name} stack …", flush=True)
            data_dirs.append(settings.data_dir / name)
            stacks.append(
                start_stack(
                    name,
                    settings.data_dir / name,
                    port_offset=100,
                    source=None,
                    timeout_s=settings.start_timeout_s,
                    traces=settings.traces,
                )
            )
            if settings.through == "gateway":
                for stack in stacks:
                    port = int(stack.target.rsplit(":", 1)[1])
                    gap = STACK_PORTS["GATEWAY_PORT"] - STACK_PORTS["EDGE_PORT"]
                    stack.target = f"127.0.0.1:{port + gap}"
        measured = with_principal(stacks, settings, data_dirs)
        tallies = asyncio.run(_run_rounds(measured, settings))
    finally:
        for stack in reversed(stacks):
            stop_stack(stack)
    results: dict[str, Any] = {
        "through": settings.through,
        "concurrency": settings.concurrency,
        "duration_s": settings.duration_s,
        "warm_up_s": settings.warm_up_s,
        "rounds": settings.rounds,
        "baseline": str(settings.baseline) if settings.baseline else None,
        # an attached stack shares this environment (scripts/bench.sh starts both)
        "traces": bool((os.environ.get("TANDEM_TRACE_DIR") or "").strip())
        if stack_pid and api_key and settings.baseline is None
        else settings.traces,
        "targets_cpu_ms": TARGETS_CPU_MS,
        # never the principal's id or attributes (a user identifier): only that one was
        "principal": settings.principal is not None,
        "principal_compare": settings.principal_compare,
        "stacks": {
            name: {key: tally.summary() for key, tally in by_key.items()}
            for name, by_key in tallies.items()
        },
    }
    results["principal_ratios"] = principal_ratios(results)
    results["http_ratios"] = http_ratios(results)
    return results


def http_ratios(results: dict[str, Any]) -> dict[str, float]:
    """Per stack: Search's CPU ms per request over HTTP/JSON / over gRPC (issue 49)."""
    ratios = {}
    for name, by_key in results["stacks"].items():
        grpc_row, http_row = by_key.get("search"), by_key.get("search_http")
        if grpc_row and http_row and grpc_row["cpu_ms_per_request"]:
            ratios[name] = round(http_row["cpu_ms_per_request"] / grpc_row["cpu_ms_per_request"], 3)
    return ratios


def main(settings: CostSettings) -> dict[str, Any]:
    """Run the benchmark, print the table, write JSON to ``settings.out``."""
    results = run(settings)
    publish(results, render(results), settings.out)
    return results
