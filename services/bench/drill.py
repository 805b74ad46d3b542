"""``tandem bench drill``: replicas that survive a kill.

Starts ``tandem run --replicas 2`` in a private data directory (shifted ports, quota
raised) — or, with ``--attach``, a stack already up whose replicas are containers (``make
container-test`` runs it on the compose stack) — and drives a paced mix of gateway calls
through the edge: the idempotent Search, AskSql and DescribeSchema, and Ask (RETRIEVE),
which is not (a retried Ask runs its plan again). While the load runs, one replica each of
retrieval, sql and router is killed with SIGKILL in turn — a crash, not a drain — and its
supervisor (``tandem run``, or the container's restart policy) restarts it; the next kill
waits until it serves again. Callers reach the replicas over channels that balance over
both and retry UNAVAILABLE (``services.common.create_channel``), so a call in flight on
the killed process is retried on the other, and new calls skip it until it serves.

Reported per RPC: calls, failures by status, p50/p99 over the run and p99 of the calls
that started inside a kill window (from the kill until the replica serves again), and
each kill's outage (kill → SERVING). The target: 0 failed idempotent calls.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import grpc
import psutil

from services.bench.cost import STACK_PORTS, start_stack, stop_stack
from services.common import load_credentials, tls_directory
from services.launch import REPLICA_PORT_STEP, REPLICATED, wait_serving
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import router_service_pb2 as qpb

# What is killed, in this order: one replica of each replicated service.
KILLED = REPLICATED
IDEMPOTENT = frozenset({"Search", "AskSql", "DescribeSchema"})
# The gateway RPCs of the mix whose calls cross each killed service: a kill waits until
# one of them is in flight, so it lands on work, not on an idle moment.
CROSSES = {
    "retrieval": frozenset({"Search", "Ask"}),
    "sql": frozenset({"AskSql", "DescribeSchema"}),
    "router": frozenset({"Ask"}),
}


@dataclass(frozen=True)
class DrillSettings:
    data_dir: Path
    out: Path
    rps: float = 60.0  # calls started per second, whatever the latency
    warmup_s: float = 5.0  # load before the first kill
    settle_s: float = 4.0  # load after a replica is back before the next kill
    rounds: int = 3  # each kills one replica of every service in KILLED
    port_offset: int = 2000
    timeout_s: float = 300.0


@dataclass
class Call:
    rpc: str
    started: float
    latency_s: float
    status: str


@dataclass
class Kill:
    service: str
    replica: str  # the process's port or the container's name
    at: float
    back: float = math.nan

    @property
    def outage_s(self) -> float:
        return self.back - self.at


@dataclass
class Drill:
    calls: list[Call] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    in_flight: Counter[str] = field(default_factory=Counter)  # calls started, not answered


def _requests() -> list[tuple[str, Any]]:
    """The mix, one of each per round: what the demo warehouse and documents answer."""
    return [
        ("Search", gpb.GatewayServiceSearchRequest(query="security review", top_k=5)),
        ("AskSql", gpb.GatewayServiceAskSqlRequest(question="how many companies are there?")),
        ("DescribeSchema", gpb.GatewayServiceDescribeSchemaRequest()),
        ("Search", gpb.GatewayServiceSearchRequest(query="discount approval", top_k=5)),
        (
            "Ask",
            gpb.GatewayServiceAskRequest(
                question="What does our pricing policy say about discount approval?",
                mode=qpb.ASK_MODE_RETRIEVE,
            ),
        ),
        ("AskSql", gpb.GatewayServiceAskSqlRequest(question="top 5 opportunities by amount")),
    ]


# One call of a mix: awaited, it answers or raises the call's AioRpcError (or CallFailed).
Action = Callable[[], Awaitable[Any]]


class CallFailed(Exception):
    """A call answered OK whose content says it failed (a document not included):
    counted under ``status``."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


def unary_mix(stub: gpb_grpc.GatewayServiceStub, key: str) -> list[tuple[str, Action]]:
    """The idempotent mix of ``_requests`` as actions on ``stub`` with ``key``."""
    metadata = (("authorization", f"Bearer {key}"),)

    def action(rpc: str, request: Any) -> Action:
        return lambda: getattr(stub, rpc)(request, metadata=metadata, timeout=30)

    return [(rpc, action(rpc, request)) for rpc, request in _requests()]


async def drive(
    mix: Sequence[tuple[str, Action]], rps: float, drill: Drill, stop: asyncio.Event
) -> None:
    """Start the mix's calls in turn at ``rps`` until ``stop``, whatever their latency (a
    slow call does not hold the next one back); each is timed from send to answer."""
    interval = 1.0 / rps
    pending: set[asyncio.Task[None]] = set()

    async def one(rpc: str, action: Action) -> None:
        started = time.monotonic()
        status = "OK"
        drill.in_flight[rpc] += 1
        try:
            await action()
        except grpc.aio.AioRpcError as exc:
            status = exc.code().name
        except CallFailed as exc:
            status = exc.status
        finally:
            drill.in_flight[rpc] -= 1
        drill.calls.append(Call(rpc, started, time.monotonic() - started, status))

    n = 0
    next_at = time.monotonic()
    while not stop.is_set():
        rpc, action = mix[n % len(mix)]
        n += 1
        task = asyncio.create_task(one(rpc, action))
        pending.add(task)
        task.add_done_callback(pending.discard)
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    if pending:
        await asyncio.wait(pending)


class Replica(Protocol):
    """One replica the drill kills: SIGKILL, then back when its supervisor (``tandem
    run``, or the container runtime's restart policy) has it SERVING again."""

    @property
    def service(self) -> str: ...

    @property
    def name(self) -> str: ...

    def kill(self) -> None: ...

    def wait_back(self, timeout_s: float) -> None: ...


def _listener(port: int) -> int | None:
    """The pid listening on ``port``, if any."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            return conn.pid
    return None


@dataclass
class ProcessReplica:
    """A replica ``tandem run --replicas`` started, found by the port it listens on."""

    service: str
    port: int
    tls_dir: Path | None
    _pid: int = 0

    @property
    def name(self) -> str:
        return f"port {self.port}"

    def kill(self) -> None:
        pid = _listener(self.port)
        if pid is None:
            raise RuntimeError(f"no {self.service} replica listens on {self.port}")
        self._pid = pid
        os.kill(pid, signal.SIGKILL)

    def wait_back(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while (pid := _listener(self.port)) is None or pid == self._pid:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {self.port} again in {timeout_s:.0f} s")
            time.sleep(0.1)
        tls = load_credentials(self.tls_dir, "supervisor") if self.tls_dir else None
        left = max(1.0, deadline - time.monotonic())
        wait_serving(f"127.0.0.1:{self.port}", left, tls=tls, peer=self.service)


@dataclass
class ContainerReplica:
    """A replica that is a podman container (``runtime``: the command, flags included):
    its process killed, back when the restart policy has restarted it and its health
    check passes."""

    service: str
    name: str
    runtime: Sequence[str] = ("podman",)
    _before: int = 0

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.runtime, *args], capture_output=True, text=True, timeout=60, check=False
        )

    def _restarts(self) -> int:
        out = self._run("inspect", "--format", "{{.RestartCount}}", self.name).stdout.strip()
        return int(out or 0)

    def kill(self) -> None:
        # The container's main process, SIGKILLed from the host: a crash, which the
        # restart policy answers (`podman kill` would be an operator's stop, which
        # `unless-stopped` leaves stopped).
        self._before = self._restarts()
        pid = self._run("inspect", "--format", "{{.State.Pid}}", self.name).stdout.strip()
        if not pid.isdigit() or pid == "0":
            raise RuntimeError(f"{self.name} is not running (pid {pid!r})")
        os.kill(int(pid), signal.SIGKILL)

    def wait_back(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (
                self._restarts() > self._before
                and self._run("healthcheck", "run", self.name).returncode == 0
            ):
                return
            time.sleep(0.5)
        raise TimeoutError(f"{self.name} not restarted and healthy within {timeout_s:.0f} s")


async def _kill_in_turn(
    replicas: Sequence[Replica], settings: DrillSettings, drill: Drill, stop: asyncio.Event
) -> None:
    await asyncio.sleep(settings.warmup_s)
    for replica in [r for _ in range(settings.rounds) for r in replicas]:
        # Kill while a call that crosses the service is in flight (at most ~10 s of polling:
        # the calls start and end on this event loop, so a sleep is when they move on).
        for _ in range(20_000):
            if any(drill.in_flight[rpc] for rpc in CROSSES[replica.service]):
                break
            await asyncio.sleep(0.0005)
        kill = Kill(replica.service, replica.name, time.monotonic())
        await asyncio.to_thread(replica.kill)
        drill.kills.append(kill)
        await asyncio.to_thread(replica.wait_back, settings.timeout_s)
        kill.back = time.monotonic()
        await asyncio.sleep(settings.settle_s)
    stop.set()


def pct_ms(values: Sequence[float], pct: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, math.ceil(pct / 100 * len(ordered)) - 1)] * 1000, 1)


def summarise(drill: Drill) -> dict[str, Any]:
    """Per RPC: calls, failures by status, latency overall and inside kill windows."""
    windows = [(k.at, k.back) for k in drill.kills]

    def in_window(call: Call) -> bool:
        return any(a <= call.started <= b for a, b in windows)

    def in_flight(call: Call) -> bool:
        return any(call.started <= k.at <= call.started + call.latency_s for k in drill.kills)

    rpcs: dict[str, Any] = {}
    for rpc in sorted({c.rpc for c in drill.calls}):
        calls = [c for c in drill.calls if c.rpc == rpc]
        failed = [c for c in calls if c.status != "OK"]
        during = [c.latency_s for c in calls if in_window(c)]
        rpcs[rpc] = {
            "idempotent": rpc in IDEMPOTENT,
            "calls": len(calls),
            "failed": len(failed),
            "failed_by_status": dict(Counter(c.status for c in failed)),
            "failed_in_flight_at_a_kill": sum(1 for c in failed if in_flight(c)),
            "in_flight_at_a_kill": sum(1 for c in calls if in_flight(c)),
            "p50_ms": pct_ms([c.latency_s for c in calls], 50),
            "p99_ms": pct_ms([c.latency_s for c in calls], 99),
            "calls_during_kills": len(during),
            "p99_during_kills_ms": pct_ms(during, 99),
        }
    idempotent_failed = sum(v["failed"] for r, v in rpcs.items() if r in IDEMPOTENT)
    return {
        "rpcs": rpcs,
        "kills": [
            {"service": k.service, "replica": k.replica, "outage_s": round(k.outage_s, 2)}
            for k in drill.kills
        ],
        "idempotent_failed": idempotent_failed,
        "target_met": idempotent_failed == 0 and {k.service for k in drill.kills} == set(KILLED),
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        f"kill drill: {results.get('stack', 'tandem run --replicas 2')}, "
        f"{results['rps']:g} calls/s through the edge",
        "",
        f"{'rpc':<16}{'calls':>7}{'failed':>8}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'during kills':>14}{'p99 then':>10}{'in flight at a kill':>21}",
    ]
    for rpc, row in results["rpcs"].items():
        mark = "" if row["idempotent"] else " (not idempotent)"
        lines.append(
            f"{rpc:<16}{row['calls']:>7}{row['failed']:>8}{row['p50_ms']:>9}{row['p99_ms']:>9}"
            f"{row['calls_during_kills']:>14}{row['p99_during_kills_ms']:>10}"
            f"{row['in_flight_at_a_kill']:>21}{mark}"
        )
        if row["failed"]:
            lines.append(
                f"{'':<16}failed: {row['failed_by_status']}, "
                f"{row['failed_in_flight_at_a_kill']} of them in flight at a kill"
            )
    lines.append("")
    for kill in results["kills"]:
        lines.append(
            f"killed {kill['service']} ({kill['replica']}): serving again after "
            f"{kill['outage_s']} s"
        )
    verdict = "met" if results["target_met"] else "MISSED"
    lines.append(f"failed idempotent calls: {results['idempotent_failed']} (target 0: {verdict})")
    return "\n".join(lines)


async def _run(
    settings: DrillSettings, target: str, api_key: str, replicas: Sequence[Replica]
) -> Drill:
    drill = Drill()
    stop = asyncio.Event()
    async with grpc.aio.insecure_channel(target) as channel:
        stub = gpb_grpc.GatewayServiceStub(channel)
        driver = asyncio.create_task(drive(unary_mix(stub, api_key), settings.rps, drill, stop))
        try:
            await _kill_in_turn(replicas, settings, drill, stop)
        finally:
            stop.set()
            await driver
    return drill


def _report(settings: DrillSettings, drill: Drill, where: str) -> dict[str, Any]:
    results = {"rps": settings.rps, "stack": where, **summarise(drill)}
    settings.out.parent.mkdir(parents=True, exist_ok=True)
    settings.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    print(f"wrote {settings.out}")
    return results


def main(settings: DrillSettings) -> dict[str, Any]:
    """The drill on a ``tandem run --replicas 2`` it starts (and stops)."""
    stack = start_stack(
        "drill",
        settings.data_dir,
        port_offset=settings.port_offset,
        source=None,
        timeout_s=settings.timeout_s,
        extra_args=("--replicas", "2"),
    )
    tls_dir = tls_directory({"TANDEM_DATA_DIR": str(settings.data_dir.resolve())})
    replicas = [
        ProcessReplica(
            service,
            STACK_PORTS[f"{service.upper()}_PORT"] + settings.port_offset + REPLICA_PORT_STEP,
            tls_dir,
        )
        for service in KILLED
    ]
    try:
        drill = asyncio.run(_run(settings, stack.target, stack.api_key, replicas))
    finally:
        stop_stack(stack)
    return _report(settings, drill, "tandem run --replicas 2")


def attached(
    settings: DrillSettings,
    target: str,
    api_key: str,
    containers: Mapping[str, str],
    runtime: Sequence[str] = ("podman",),
) -> dict[str, Any]:
    """The drill on a stack already up whose replicas are containers: ``containers``
    names, per service of ``KILLED``, the one to kill (its restart policy restarts it)."""
    missing = set(KILLED) - set(containers)
    if missing:
        raise ValueError(f"no container named to kill for {', '.join(sorted(missing))}")
    replicas = [ContainerReplica(s, containers[s], tuple(runtime)) for s in KILLED]
    drill = asyncio.run(_run(settings, target, api_key, replicas))
    return _report(settings, drill, f"containers at {target}")
