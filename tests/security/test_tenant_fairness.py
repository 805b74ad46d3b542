"""Tenant fairness on the stack as processes: tenant A floods far past its quota (and gets
RESOURCE_EXHAUSTED) while tenant B, inside its own quota, keeps being served.

B's latency is measured in interleaved windows, so that every phase sees the same
background load of a shared machine. A's flood (and C's neighbourly load in the bench)
come from separate processes (``tandem load``, the repo's ghz-compatible driver) paused
with SIGSTOP outside their windows, so the test's own client measures B alone. Every call
goes through the edge (nginx, ``gateway.edge``, the product's front door), which refuses a
key past its quota in compiled code in its own process.

The suite's test checks what holds on any machine, however loaded: B is never refused
(every one of its calls is served), A's flood is refused at the edge, and A gets through
no more than its quota's worth (the token bucket's rate plus the burst each window can
refill) and not nothing. It asserts no latency: on two shared cores a flood's own client
competes with the stack for CPU, so B's p99 under a flood measured 1.1x its p99 alone on
an idle machine and 4.8x with four evals running beside it (session 58), and its p50 2.1x
with two CPU burners (session 59) -- the machine, not the product.

The latency target (B's p99 under the flood within 20% of its p99 without one) is a
benchmark, ``make bench-fairness``: every round is reported, the flood driven both at
the lowest CPU priority (SCHED_IDLE: a real flood's client runs on the attacker's
machines, not on our two cores) and at normal priority, and around the edge, side by
side, with the CPU each process used; numbers in ``bench-results/fairness.json``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import psutil
import pytest

from gateway import GatewaySettings
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tests.conftest import TelemetrySink
from tests.integration.gateway.stack import bearer, start_gateway
from tests.processes import REPO_ROOT, ProcessStack
from tests.security.corpora.stacks import SecurityDb, error_details, security_db

__all__ = ["security_db"]

RATE_PER_S = 50
BURST = 50
# B and C stay inside the quota; A offers ten times it.
B_RATE_PER_S = float(os.environ.get("FAIRNESS_B_RPS", "40"))
C_RPS = int(0.8 * RATE_PER_S)
A_RPS = int(os.environ.get("FAIRNESS_A_RPS", str(10 * RATE_PER_S)))
WINDOWS = 4
# The suite's check: 400 calls of B a phase (10 s), each of which must be served.
CHECK_SAMPLES = 400
# The benchmark: 1200 calls a phase (30 s a phase a round) make a p99 the 12th slowest.
BENCH = os.environ.get("FAIRNESS_BENCH") == "1"
BENCH_SAMPLES = int(os.environ.get("FAIRNESS_SAMPLES", "1200"))
BENCH_ROUNDS = int(os.environ.get("FAIRNESS_ROUNDS", "3"))
# Also measure B while A floods the gateway directly, around the edge (how it was before
# the edge), side by side in the same interleaved windows.
DIRECT_FLOOD = os.environ.get("FAIRNESS_DIRECT_FLOOD") == "1"
TOLERANCE = 0.20
RESULT_PATH = REPO_ROOT / "bench-results" / "fairness.json"
REQUEST = gpb.GatewayServiceValidateSqlRequest(
    sql="SELECT name, industry FROM companies WHERE industry = 'Healthcare' LIMIT 5"
)


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


async def measure_b(stub: gpb_grpc.GatewayServiceAsyncStub, key: str, samples: int) -> list[float]:
    """B's latencies, one call at a time on a fixed schedule (open loop: a slow call
    does not push the next one back, so it cannot hide queueing). Every call must be
    served."""
    metadata = (("authorization", f"Bearer {key}"),)
    latencies: list[float] = []
    period = 1.0 / B_RATE_PER_S
    start = time.monotonic()
    for i in range(samples):
        delay = start + i * period - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        t0 = time.perf_counter()
        reply = await stub.ValidateSql(REQUEST, metadata=metadata, timeout=10)
        latencies.append(time.perf_counter() - t0)
        assert reply.valid
    return latencies


def start_load(
    address: str, key: str, rps: int, seconds: float, out: Path, *, idle: bool
) -> subprocess.Popen[bytes]:
    """``tandem load`` calling ValidateSql at ``address`` as the tenant of ``key``;
    ``idle``: at the lowest CPU priority (SCHED_IDLE runs it only on a core nothing else
    wants; nice 19 still delays a waking service by a scheduler slice)."""
    driver = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from services.cli import main; sys.exit(main())",
            "load",
            address,
            "--insecure",
            "--call",
            "tandem.v1.GatewayService.ValidateSql",
            "-d",
            json.dumps({"sql": "SELECT 1"}),
            "-m",
            json.dumps({"authorization": f"Bearer {key}"}),
            "-c",
            "16",
            "--rps",
            str(rps),
            "-z",
            f"{seconds:.0f}s",
            "-t",
            "10s",
            "-O",
            "json",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if idle:
        os.sched_setscheduler(driver.pid, os.SCHED_IDLE, os.sched_param(0))
    return driver


def rates_in(
    report: dict[str, Any], windows: list[tuple[float, float]], seconds: float
) -> dict[str, float]:
    """Calls a driver sent per second while B was measured (all, and those answered OK)."""
    sent = [d for d in report["details"] if any(lo <= d["timestamp"] < hi for lo, hi in windows)]
    ok = sum(1 for d in sent if d["status"] == "OK")
    return {"sent": round(len(sent) / seconds, 1), "ok": round(ok / seconds, 1)}


def cpu_seconds(pids: dict[str, int | None]) -> dict[str, float]:
    """CPU time (user + system) used so far by each process and its children."""
    used: dict[str, float] = {}
    for name, pid in pids.items():
        if pid is None:
            continue
        try:
            proc = psutil.Process(pid)
            total = 0.0
            for p in [proc, *proc.children(recursive=True)]:
                with_children = p.cpu_times()
                total += with_children.user + with_children.system
            used[name] = total
        except psutil.NoSuchProcess:
            continue
    return used


def _ms(value: float) -> float:
    return round(1000 * value, 1)


def edge_refusals(stack: ProcessStack) -> dict[str, int]:
    """Refusals of the run by layer, from the edge's access log (privacy-safe JSON)."""
    counts = {"edge": 0, "gateway": 0}
    for entry in stack.edge_access_log():
        if entry["grpc_status"] == "8":
            counts["edge" if entry["edge_reply"] == "over_quota" else "gateway"] += 1
    return counts


@dataclass(frozen=True)
class Driver:
    """The load that runs during one phase: whose key, where to, how fast, how nice."""

    tenant: str
    address: str
    rps: int
    idle: bool


@dataclass
class Run:
    """B's latencies per phase and round, the drivers' reports and what each used."""

    rounds: list[dict[str, list[float]]]
    reports: dict[str, dict[str, Any]]
    windows: dict[str, list[tuple[float, float]]]
    walls: dict[str, float]
    cpu: dict[str, dict[str, float]]

    def pooled(self, phase: str) -> list[float]:
        return [x for r in self.rounds for x in r[phase]]


async def run_phases(
    stack: ProcessStack,
    keys: dict[str, str],
    drivers: dict[str, Driver],
    phases: list[str],
    *,
    rounds: int,
    samples: int,
    out: Path,
) -> Run:
    """Every phase once per window, interleaved, ``samples`` calls of B per phase and
    round; a phase named in ``drivers`` runs its driver (paused outside its windows)."""
    per_window = samples // WINDOWS
    seconds = rounds * (len(phases) * samples / B_RATE_PER_S + WINDOWS * len(phases)) + 8
    running = {
        phase: start_load(d.address, keys[d.tenant], d.rps, seconds, out / f"{phase}.json",
                          idle=d.idle)
        for phase, d in drivers.items()
    }  # fmt: skip
    pids = {**stack.pids(), **{name: p.pid for name, p in running.items()}}
    run = Run(
        rounds=[],
        reports={},
        windows={p: [] for p in phases},
        walls=dict.fromkeys(phases, 0.0),
        cpu={p: {} for p in phases},
    )
    try:
        async with grpc.aio.insecure_channel(stack.edge_address) as channel:
            stub = gpb_grpc.GatewayServiceStub(channel)
            await asyncio.sleep(1.0)  # the drivers connect and reach their rates
            for driver in running.values():
                driver.send_signal(signal.SIGSTOP)
            await measure_b(stub, keys["b"], 100)  # warm-up: channels, pools, caches
            for _ in range(rounds):
                latencies: dict[str, list[float]] = {p: [] for p in phases}
                for _ in range(WINDOWS):
                    for phase in phases:
                        paused = running.get(phase)
                        if paused is not None:
                            paused.send_signal(signal.SIGCONT)
                            await asyncio.sleep(0.4)  # back at its rate
                        before, wall, began = cpu_seconds(pids), time.monotonic(), time.time()
                        latencies[phase] += await measure_b(stub, keys["b"], per_window)
                        run.windows[phase].append((began, time.time()))
                        after = cpu_seconds(pids)
                        run.walls[phase] += time.monotonic() - wall
                        for name in after.keys() & before.keys():
                            used = after[name] - before[name]
                            run.cpu[phase][name] = run.cpu[phase].get(name, 0.0) + used
                        if paused is not None:
                            paused.send_signal(signal.SIGSTOP)
                            await asyncio.sleep(0.3)  # its calls in flight finish
                run.rounds.append(latencies)
    finally:
        for driver in running.values():
            driver.send_signal(signal.SIGCONT)
            driver.send_signal(signal.SIGINT)  # stop and write the report, as ghz does
        for driver in running.values():
            await asyncio.to_thread(driver.communicate, None, 60)
    run.reports = {name: json.loads((out / f"{name}.json").read_text()) for name in running}
    return run


def _latency(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": _ms(ordered[len(ordered) // 2]),
        "p99": _ms(p99(ordered)),
        "max": _ms(max(ordered)),
    }


async def _fair_stack(
    make_stack: Callable[..., ProcessStack],
) -> tuple[ProcessStack, dict[str, str]]:
    quota = {"GATEWAY_RATE_PER_S": str(RATE_PER_S), "GATEWAY_BURST": str(BURST)}
    # The edge reads the same quota (its per-key limit defaults to it).
    stack = await asyncio.to_thread(make_stack, service_env={"gateway": quota, "edge": quota})
    keys = {t: await asyncio.to_thread(stack.create_key, f"fair-{t}") for t in "abc"}
    return stack, keys


def _assert_a_flood(run: Run, phase: str, refused_by: dict[str, int]) -> None:
    """The flood was one (A sent at least three times its quota while B was measured), the
    edge refused it (the gateway, the exact authority behind it, refused at most the odd
    call the two limits' clocks disagree on), and A got its quota's worth through: at most
    the bucket's rate plus the burst it refills while paused between windows (10% for the
    clocks), and at least half the rate. Bounds that hold however loaded the machine is."""
    report = run.reports[phase]
    assert report["statusCodeDistribution"].get("ResourceExhausted", 0) > 0, report
    rates = rates_in(report, run.windows[phase], run.walls[phase])
    assert rates["sent"] >= 3 * RATE_PER_S, rates
    refills = BURST * len(run.windows[phase]) / run.walls[phase]
    assert 0.5 * RATE_PER_S <= rates["ok"] <= 1.1 * (RATE_PER_S + refills), (rates, refills)
    assert refused_by["edge"] >= 0.95 * (refused_by["edge"] + refused_by["gateway"]), refused_by


@pytest.mark.e2e
@pytest.mark.timeout(300)
async def test_a_flooding_past_its_quota_never_starves_b(
    make_stack: Callable[..., ProcessStack], tmp_path: Path
) -> None:
    stack, keys = await _fair_stack(make_stack)
    # At normal priority: the flood's client competes for the same two cores.
    flood = Driver("a", stack.edge_address, A_RPS, idle=False)
    run = await run_phases(
        stack, keys, {"flood": flood}, ["alone", "flood"], rounds=1, samples=CHECK_SAMPLES,
        out=tmp_path,
    )  # fmt: skip
    # B was served throughout: measure_b asserts every reply as it is made.
    assert len(run.pooled("flood")) == len(run.pooled("alone")) == CHECK_SAMPLES
    _assert_a_flood(run, "flood", edge_refusals(stack))


@pytest.mark.e2e
@pytest.mark.timeout(1800)
@pytest.mark.skipif(not BENCH, reason="a benchmark: make bench-fairness")
async def test_bench_fairness(make_stack: Callable[..., ProcessStack], tmp_path: Path) -> None:
    """B's p99 alone, next to C at quota, and under A's flood at the lowest priority, at
    normal priority and (FAIRNESS_DIRECT_FLOOD) around the edge: every round reported;
    the target (flood within 20% of B's p99 without one) judged per round and pooled."""
    stack, keys = await _fair_stack(make_stack)
    drivers = {
        "at_quota": Driver("c", stack.edge_address, C_RPS, idle=True),
        "flood": Driver("a", stack.edge_address, A_RPS, idle=True),
        "flood_normal_priority": Driver("a", stack.edge_address, A_RPS, idle=False),
    }
    if DIRECT_FLOOD:
        drivers["flood_direct"] = Driver("a", stack.gateway_address, A_RPS, idle=True)
    phases = ["alone", *drivers]
    run = await run_phases(
        stack, keys, drivers, phases, rounds=BENCH_ROUNDS, samples=BENCH_SAMPLES, out=tmp_path
    )
    floods = [p for p in phases if p.startswith("flood")]

    def verdicts(by_phase: dict[str, list[float]]) -> dict[str, Any]:
        unflooded = p99(by_phase["alone"] + by_phase["at_quota"])
        row: dict[str, Any] = {p: _latency(v) for p, v in by_phase.items()}
        row["unflooded_p99_ms"] = _ms(unflooded)
        for p in floods:
            change = p99(by_phase[p]) / unflooded - 1
            row[f"{p}_vs_unflooded"] = round(change, 3)
            row[f"{p}_within_target"] = change <= TOLERANCE
        return row

    refused_by = edge_refusals(stack)
    result: dict[str, Any] = {
        "quota_per_s": RATE_PER_S,
        "b_rps": B_RATE_PER_S,
        "a_offered_rps": A_RPS,
        "c_rps": C_RPS,
        "target": f"B's p99 under a flood within {TOLERANCE:.0%} of its p99 without one",
        "samples_per_phase_and_round": BENCH_SAMPLES,
        "rounds": [verdicts(r) for r in run.rounds],
        "pooled": verdicts({p: run.pooled(p) for p in phases}),
        "cpu_cores": {
            p: {n: round(used / run.walls[p], 2) for n, used in run.cpu[p].items() if used > 0.005}
            for p in phases
        },
        "driver_status_codes": {
            name: report["statusCodeDistribution"] for name, report in run.reports.items()
        },
        "driver_rps_in_windows": {
            name: rates_in(run.reports[name], run.windows[name], run.walls[name])
            for name in drivers
        },
        "flood_refused_by": refused_by,
        "machine_load_average": os.getloadavg(),
    }
    RESULT_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULT_PATH.write_text(json.dumps(result, indent=1) + "\n")
    print("\n" + json.dumps(result, indent=1))
    print(f"\n| round | {' | '.join(f'{p} vs unflooded' for p in floods)} |")
    print("|---" * (len(floods) + 1) + "|")
    for label, row in [*((str(i + 1), r) for i, r in enumerate(result["rounds"])),
                       ("pooled", result["pooled"])]:  # fmt: skip
        cells = [f"{row[f'{p}_vs_unflooded']:+.1%}" for p in floods]
        print(f"| {label} | {' | '.join(cells)} |")
    _assert_a_flood(run, "flood", refused_by)


async def test_a_refusal_over_quota_skips_the_key_lookup_but_never_serves_a_bad_key(
    security_db: SecurityDb, telemetry_sink: Callable[..., TelemetrySink]
) -> None:
    gateway = await start_gateway(
        security_db.pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr="127.0.0.1:1",
        retrieval_addr="127.0.0.1:1",
        sql_addr="127.0.0.1:1",
        settings=GatewaySettings(rate_per_s=0.5, burst=1.0),
    )
    lookups = 0
    database = gateway.keys._db
    real = database.connection

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal lookups
        lookups += 1
        return real(*args, **kwargs)

    try:
        key = await gateway.key("quota-gate")
        database.connection = counted  # type: ignore[method-assign]
        request = gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1")

        async def code(presented: str) -> str:
            try:
                await gateway.stub.ValidateSql(request, metadata=bearer(presented), timeout=5)
            except grpc.aio.AioRpcError as exc:
                details = error_details(exc)
                return f"{details.code.name}/{details.reason}"
            return "OK"

        # The one token goes to the first call (the SQL service is unreachable: that is
        # the forwarded call failing, after admission).
        assert (await code(key)).startswith("UNAVAILABLE")
        assert lookups == 1
        # Over quota: refused before the database.
        for _ in range(5):
            assert await code(key) == "RESOURCE_EXHAUSTED/QUOTA_EXCEEDED"
        assert lookups == 1
        # The same key id with a wrong secret is not recognised: it is looked up and
        # refused as a bad key, whatever the tenant's quota.
        forged = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
        assert await code(forged) == "UNAUTHENTICATED/API_KEY_INVALID"
        assert lookups == 2
        # Revoked: once the bucket has a token again, the lookup refuses it at once.
        key_id = key.removeprefix("tdm_").split("_", 1)[0]
        await gateway.keys.revoke(key_id)
        await asyncio.sleep(2.1)
        assert await code(key) == "UNAUTHENTICATED/API_KEY_INVALID"
    finally:
        database.connection = real  # type: ignore[method-assign]
        await gateway.close()
