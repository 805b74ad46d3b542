"""Tenant fairness on the stack as processes: tenant A floods far past its quota (and gets
RESOURCE_EXHAUSTED) while tenant B, inside its own quota, keeps its latency.

B's latency is measured in interleaved windows, so that every phase sees the same
background load of a shared machine: B alone; B next to a neighbour using most of its
quota (C); B while A floods at ten times its quota (A also gets its quota's worth of calls
through). A's flood and C's load come from separate processes (``tandem load``, the repo's
ghz-compatible driver) paused with SIGSTOP outside their windows, so the test's own client
measures B alone. The drivers run under SCHED_IDLE: a flood's client runs on the
attacker's machines, and on a 2-core machine the Python driver's quarter of a core at 500
calls a second otherwise competes with the system it floods.

The target: B's p99 under the flood within 20% of its p99 without one (the alone and
neighbour windows pooled). The test also checks that the flood was one (A sent most of
ten times its quota while B was measured, and got its quota's worth through), so a weak
driver cannot pass it; and that the edge, not the gateway, refused it.

Every call goes through the edge (nginx, ``gateway.edge``, the product's front door),
which refuses a key past its quota in compiled code in its own process; the gateway, the
exact per-tenant authority behind it, sees little more than the quota. ``make
bench-fairness`` adds a fourth phase with A flooding the gateway directly, around the
edge, side by side; numbers in ``bench-results/fairness.json`` (with the CPU each process
used) and the session notes.
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

# Up to three rounds of 30 s phases (four phases in make bench-fairness), plus start-up.
pytestmark = pytest.mark.timeout(720)

__all__ = ["security_db"]

RATE_PER_S = 50
BURST = 50
# B and C stay inside the quota; A offers ten times it.
B_RATE_PER_S = float(os.environ.get("FAIRNESS_B_RPS", "40"))
# A p99 of 240 calls is the third-slowest call: on a quiet machine the same code read
# +3%, +24% and +4% in three runs. 1200 calls (30 s a phase) make it the 12th slowest.
B_SAMPLES = int(os.environ.get("FAIRNESS_SAMPLES", "1200"))
C_RPS = int(0.8 * RATE_PER_S)
A_RPS = int(os.environ.get("FAIRNESS_A_RPS", str(10 * RATE_PER_S)))
WINDOWS = 4
# ``make bench-fairness``: also measure B while A floods the gateway directly, around the
# edge (how it was before the edge), side by side in the same interleaved windows.
DIRECT_FLOOD = os.environ.get("FAIRNESS_DIRECT_FLOOD") == "1"
# The flood may never make B's p99 more than this many times its p99 without a flood.
STARVATION_FACTOR = 2.0  # checked first: a worse miss than the target says more
TOLERANCE = 0.20
MAX_ROUNDS = 3
RESULT_PATH = REPO_ROOT / "bench-results" / "fairness.json"
REQUEST = gpb.GatewayServiceValidateSqlRequest(
    sql="SELECT name, industry FROM companies WHERE industry = 'Healthcare' LIMIT 5"
)


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


async def measure_b(
    stub: gpb_grpc.GatewayServiceAsyncStub, key: str, samples: int = B_SAMPLES
) -> list[float]:
    """B's latencies, one call at a time on a fixed schedule (open loop: a slow call
    does not push the next one back, so it cannot hide queueing)."""
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
    address: str, key: str, rps: int, seconds: float, out: Path
) -> subprocess.Popen[bytes]:
    """``tandem load`` calling ValidateSql at ``address`` as the tenant of ``key``, at the
    lowest CPU priority: a flood's client runs on the attacker's machines, not ours, so on a
    shared 2-core machine it should not take CPU from the system it floods (at 500 calls a
    second the Python driver uses a quarter of a core)."""
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
    # SCHED_IDLE: it runs only on a core nothing else wants (nice 19 still delays a waking
    # service by a scheduler slice).
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


@pytest.mark.e2e
async def test_a_flooding_past_its_quota_keeps_b_within_20_percent_of_its_p99_without_a_flood(
    make_stack: Callable[..., ProcessStack], tmp_path: Path
) -> None:
    quota = {"GATEWAY_RATE_PER_S": str(RATE_PER_S), "GATEWAY_BURST": str(BURST)}
    # The edge reads the same quota (its per-key limit defaults to it).
    stack = await asyncio.to_thread(make_stack, service_env={"gateway": quota, "edge": quota})
    keys = {t: await asyncio.to_thread(stack.create_key, f"fair-{t}") for t in "abc"}
    per_window = B_SAMPLES // WINDOWS
    phases: dict[str, list[float]] = {"alone": [], "at_quota": [], "flood": []}
    if DIRECT_FLOOD:
        phases["flood_direct"] = []
    # Long enough for a second round; the drivers are stopped (SIGINT) once B is measured.
    seconds = MAX_ROUNDS * (len(phases) * B_SAMPLES / B_RATE_PER_S + WINDOWS * 1.0) + 8
    edge = stack.edge_address
    drivers = {
        "flood": start_load(edge, keys["a"], A_RPS, seconds, tmp_path / "flood.json"),
        "at_quota": start_load(edge, keys["c"], C_RPS, seconds, tmp_path / "at_quota.json"),
    }
    if DIRECT_FLOOD:
        drivers["flood_direct"] = start_load(
            stack.gateway_address, keys["a"], A_RPS, seconds, tmp_path / "flood_direct.json"
        )
    pids = {**stack.pids(), **{name: p.pid for name, p in drivers.items()}}
    cpu: dict[str, dict[str, float]] = {phase: {} for phase in phases}
    walls = dict.fromkeys(phases, 0.0)
    windows: dict[str, list[tuple[float, float]]] = {phase: [] for phase in phases}
    rounds = 0

    async def measure_round(stub: gpb_grpc.GatewayServiceAsyncStub) -> None:
        """Every phase once per window, interleaved, ``B_SAMPLES`` calls per phase."""
        for _ in range(WINDOWS):
            for phase in phases:
                running = drivers.get(phase)
                if running is not None:
                    running.send_signal(signal.SIGCONT)
                    await asyncio.sleep(0.4)  # back at its rate
                before, wall = cpu_seconds(pids), time.monotonic()
                began = time.time()
                phases[phase] += await measure_b(stub, keys["b"], per_window)
                windows[phase].append((began, time.time()))
                after, wall = cpu_seconds(pids), time.monotonic() - wall
                walls[phase] += wall
                for name in after.keys() & before.keys():
                    cpu[phase][name] = cpu[phase].get(name, 0.0) + after[name] - before[name]
                if running is not None:
                    running.send_signal(signal.SIGSTOP)
                    await asyncio.sleep(0.3)  # its calls in flight finish

    try:
        async with grpc.aio.insecure_channel(stack.edge_address) as channel:
            stub = gpb_grpc.GatewayServiceStub(channel)
            await asyncio.sleep(1.0)  # the drivers connect and reach their rates
            for driver in drivers.values():
                driver.send_signal(signal.SIGSTOP)
            await measure_b(stub, keys["b"], 100)  # warm-up: channels, pools, caches
            # A p99 on a shared 2-core machine moves by +-15% between runs of the same
            # code (1 first round in 4 or 5 misses); a round that misses the target is
            # followed by another, judged on all rounds pooled, never on the last alone.
            while rounds < MAX_ROUNDS:
                await measure_round(stub)
                rounds += 1
                if p99(phases["flood"]) <= unflooded_p99(phases) * (1 + TOLERANCE):
                    break
    finally:
        for driver in drivers.values():
            driver.send_signal(signal.SIGCONT)
            driver.send_signal(signal.SIGINT)  # stop and write the report, as ghz does
        for driver in drivers.values():
            await asyncio.to_thread(driver.communicate, None, 60)
    reports = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in drivers}
    assert reports["flood"]["statusCodeDistribution"].get("ResourceExhausted", 0) > 0
    assert "ResourceExhausted" not in reports["at_quota"]["statusCodeDistribution"]

    result: dict[str, Any] = {
        "quota_per_s": RATE_PER_S,
        "b_rps": B_RATE_PER_S,
        "a_offered_rps": A_RPS,
        "c_rps": C_RPS,
        "rounds": rounds,
        "samples_per_phase": {p: len(v) for p, v in phases.items()},
        "b_latency_ms": {
            p: {"p50": _ms(sorted(v)[len(v) // 2]), "p99": _ms(p99(v)), "max": _ms(max(v))}
            for p, v in phases.items()
        },
        "cpu_cores": {
            p: {n: round(used / walls[p], 2) for n, used in cpu[p].items() if used > 0.005}
            for p in phases
        },
        "driver_status_codes": {
            name: report["statusCodeDistribution"] for name, report in reports.items()
        },
        "machine_load_average": os.getloadavg(),
        "driver_rps_in_windows": {
            name: rates_in(reports[name], windows[name], walls[name]) for name in drivers
        },
    }
    flood, neighbour, alone = (p99(phases[p]) for p in ("flood", "at_quota", "alone"))
    unflooded = unflooded_p99(phases)
    result["p99_flood_vs_unflooded"] = round(flood / unflooded - 1, 3)
    result["p99_flood_vs_at_quota"] = round(flood / neighbour - 1, 3)
    result["p99_flood_vs_alone"] = round(flood / alone - 1, 3)
    if DIRECT_FLOOD:
        result["p99_flood_direct_vs_unflooded"] = round(
            p99(phases["flood_direct"]) / unflooded - 1, 3
        )
    # Who refused A's calls through the edge, from the edge's access log.
    result["flood_refused_by"] = refused_by = edge_refusals(stack)
    RESULT_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULT_PATH.write_text(json.dumps(result, indent=1) + "\n")
    print("\n" + json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    # The flood was one: A sent most of ten times its quota while B was measured, and got
    # at least its quota's worth through.
    a_rates = result["driver_rps_in_windows"]["flood"]
    assert a_rates["sent"] >= 0.7 * A_RPS, result
    assert a_rates["ok"] >= 0.8 * RATE_PER_S, result
    # Regression guards, always enforced and reported first. The flood never reaches the
    # gateway's event loop: its CPU under the flood is that next to a neighbour at quota
    # plus A's admitted calls (around the edge, 500 refusals a second added 0.15-0.55 of a
    # core). And a flood never starves B.
    gateway_cores = {p: result["cpu_cores"][p].get("gateway", 0.0) for p in ("flood", "at_quota")}
    assert gateway_cores["flood"] <= 1.5 * gateway_cores["at_quota"] + 0.05, result
    assert flood <= unflooded * STARVATION_FACTOR, result
    # The target: B's p99 under the flood within 20% of its p99 without one.
    assert flood <= unflooded * (1 + TOLERANCE), result
    # The edge refused the flood; the gateway, the exact authority behind it, refused at
    # most the odd call the two limits' clocks disagree on (A still got its quota's worth,
    # asserted above).
    assert refused_by["edge"] >= 0.95 * (refused_by["edge"] + refused_by["gateway"]), result


def unflooded_p99(phases: dict[str, list[float]]) -> float:
    """B's p99 without a flood: alone and next to a neighbour at quota, pooled (twice the
    samples; on this machine the two differ by noise, either way round)."""
    return p99(phases["alone"] + phases["at_quota"])


def edge_refusals(stack: ProcessStack) -> dict[str, int]:
    """Refusals of the run by layer, from the edge's access log (privacy-safe JSON)."""
    counts = {"edge": 0, "gateway": 0}
    for entry in stack.edge_access_log():
        if entry["grpc_status"] == "8":
            counts["edge" if entry["edge_reply"] == "over_quota" else "gateway"] += 1
    return counts


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
