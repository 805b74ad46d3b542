"""The dependency fault matrix on the whole stack as processes: Postgres, embedding,
retrieval and SQL are each killed (SIGKILL) and hung (SIGSTOP) while gateway callers have
requests in flight. Every call must end within its deadline plus 100 ms with a full
answer, a degraded one, UNAVAILABLE with RetryInfo or DEADLINE_EXCEEDED — never a hang or
another status; the faulted process's health must show it; and once the dependency is
back, the callers' next requests must succeed within 5 s without restarting any caller.

Each cell's observed outcomes and recovery time go to ``bench-results/fault-matrix.json``
and a table printed at the end of the session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import grpc
import psycopg
import pytest

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tests.faults.contract import decode
from tests.faults.procs import health
from tests.processes import POSTGRES, ProcessStack

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DEADLINE_S = 1.5
LATE_S = 0.1  # what "within the deadline" allows on top of it
RECOVERY_S = 5.0
CALLERS = 4
RESULTS = Path(__file__).resolve().parents[2] / "bench-results" / "fault-matrix.json"
DEPENDENCIES = (POSTGRES, "embedding", "retrieval", "sql")
FAULTS = ("kill", "stop")
DOCS = [
    rpb.DocumentInput(
        document_id=f"brief-{i}",
        title=f"Account brief {i}",
        text=(
            f"Account {i} renews in March. The champion is the operations director; the "
            "risk is vendor consolidation, and pricing for the Growth tier was discussed."
        ),
    )
    for i in range(6)
]


@dataclass
class Call:
    rpc: str
    started: float
    ended: float
    outcome: str  # ok | degraded | <STATUS>[+RetryInfo]

    @property
    def latency_s(self) -> float:
        return self.ended - self.started


@dataclass
class Cell:
    dependency: str
    fault: str
    # Outcomes of the calls in flight when the fault hit, of those started and finished
    # during the outage, and of those started during it that finished after the restore
    # (a call hung by SIGSTOP that outlives the resume and then succeeds: "ok").
    in_flight_outcomes: dict[str, int] = field(default_factory=dict)
    outage_outcomes: dict[str, int] = field(default_factory=dict)
    across_restore_outcomes: dict[str, int] = field(default_factory=dict)
    in_flight_at_fault: int = 0
    max_latency_s: float = 0.0
    health_during_fault: dict[str, str] = field(default_factory=dict)
    restore_s: float = 0.0
    recovery_s: float | None = None
    violations: list[str] = field(default_factory=list)


MATRIX: dict[str, Cell] = {}


@pytest.fixture(scope="module")
def fault_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    """A private stack for destructive tests, generous quotas, short drain."""
    stack = ProcessStack(
        tmp_path_factory.mktemp("fault-stack"),
        env={"GATEWAY_RATE_PER_S": "10000", "GATEWAY_BURST": "10000", "DB_CONNECT_TIMEOUT_S": "2"},
        grace_s=2.0,
    )
    with stack:
        yield stack
    if MATRIX:
        write_matrix()


def _classify(exc: grpc.aio.AioRpcError) -> str:
    seen = decode(exc)
    name = seen.code.name
    return f"{name}+RetryInfo" if seen.retries else name


Stub: TypeAlias = "gpb_grpc.GatewayServiceAsyncStub"
Request: TypeAlias = "Callable[[Stub, Any], Awaitable[str]]"


async def _search(stub: Stub, metadata: Any) -> str:
    reply = await stub.Search(
        gpb.GatewayServiceSearchRequest(query="renewal risk Growth tier"),
        metadata=metadata,
        timeout=DEADLINE_S,
    )
    return "degraded" if reply.degraded or not reply.hits else "ok"


async def _ask_sql(stub: Stub, metadata: Any) -> str:
    reply = await stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question="How many companies are there?"),
        metadata=metadata,
        timeout=DEADLINE_S,
    )
    return "degraded" if reply.degraded or not reply.result.rows else "ok"


async def _ask(stub: Stub, metadata: Any) -> str:
    reply = await stub.Ask(
        gpb.GatewayServiceAskRequest(
            question="Which accounts mention renewal risk, and how many companies are there?"
        ),
        metadata=metadata,
        timeout=DEADLINE_S,
    )
    answer = reply.answer
    answered = answer.outcome == qpb.ANSWER_OUTCOME_ANSWERED
    return "ok" if answered and not answer.degraded else "degraded"


# What a caller asks that depends on each dependency: the engine's own RPC, and Ask
# through the router (Postgres: everything needs it).
REQUESTS: dict[str, list[tuple[str, Request]]] = {
    POSTGRES: [("Search", _search), ("AskSql", _ask_sql), ("Ask", _ask)],
    "embedding": [("Search", _search), ("Ask", _ask)],
    "retrieval": [("Search", _search), ("Ask", _ask)],
    "sql": [("AskSql", _ask_sql), ("Ask", _ask)],
}


class Callers:
    """Gateway clients calling in a loop, recording every call."""

    def __init__(self, address: str, key: str, requests: list[tuple[str, Request]]) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.stub: Stub = gpb_grpc.GatewayServiceStub(self.channel)
        self.metadata = (("authorization", f"Bearer {key}"),)
        self.requests = requests
        self.calls: list[Call] = []
        self.in_flight: set[float] = set()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.progress = asyncio.Event()
        self.calling = asyncio.Event()

    async def one(self, rpc: str, request: Request) -> Call:
        started = time.monotonic()
        self.in_flight.add(started)
        self.calling.set()
        try:
            outcome = await request(self.stub, self.metadata)
        except grpc.aio.AioRpcError as exc:
            outcome = _classify(exc)
        finally:
            self.in_flight.discard(started)
        call = Call(rpc, started, time.monotonic(), outcome)
        self.calls.append(call)
        self.progress.set()
        self.progress = asyncio.Event()
        return call

    async def _loop(self, index: int) -> None:
        i = index
        while not self._stop.is_set():
            rpc, request = self.requests[i % len(self.requests)]
            i += 1
            call = await self.one(rpc, request)
            if call.outcome != "ok":
                # Failing fast must not turn into a busy loop on 2 cores.
                await asyncio.sleep(0.05)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._loop(i)) for i in range(CALLERS)]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        await self.channel.close()

    async def wait_full_success(self, after: float, timeout_s: float) -> float | None:
        """When every request kind has fully succeeded in a call started after ``after``."""
        deadline = time.monotonic() + timeout_s
        kinds = {rpc for rpc, _ in self.requests}
        while time.monotonic() < deadline:
            done = {c.rpc: c.ended for c in self.calls if c.started >= after and c.outcome == "ok"}
            if set(done) >= kinds:
                return max(done[k] for k in kinds)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                    await self.progress.wait()
        return None


def _tenant_key(stack: ProcessStack, dependency: str, fault: str) -> str:
    return stack.create_key(f"faults-{dependency}-{fault}".replace("_", "-"))


async def _ingest(address: str, key: str) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = gpb_grpc.GatewayServiceStub(channel)
        request = gpb.GatewayServiceIngestDocumentsRequest(documents=DOCS)
        async for _ in stub.IngestDocuments(
            request, metadata=(("authorization", f"Bearer {key}"),), timeout=120
        ):
            pass


def _make_durable(stack: ProcessStack) -> None:
    """Write out what is already committed before Postgres is killed.

    The test stack runs Postgres with ``synchronous_commit=off``: a commit returns before
    its WAL leaves Postgres's shared memory, so a SIGKILL within the WAL writer's delay
    loses it (here: the API key created for this cell, hence UNAUTHENTICATED for good).
    Production runs with synchronous commits, where that cannot happen; a CHECKPOINT
    gives the test the same starting point."""
    with psycopg.connect(stack.database_url(), autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def _postmaster_pid(stack: ProcessStack) -> int:
    """The postmaster's pid, from the first line of the data directory's postmaster.pid."""
    return int((stack.pgdata / "postmaster.pid").read_text().splitlines()[0])


async def _health_of(stack: ProcessStack, names: list[str]) -> dict[str, str]:
    results = await asyncio.gather(*(health(stack.address(n), timeout_s=0.5) for n in names))
    return dict(zip(names, results, strict=True))


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("dependency", DEPENDENCIES)
async def test_dependency_fault(fault_stack: ProcessStack, dependency: str, fault: str):
    stack = fault_stack
    cell = Cell(dependency, fault)
    MATRIX[f"{dependency}/{fault}"] = cell
    key = await asyncio.to_thread(_tenant_key, stack, dependency, fault)
    await _ingest(stack.gateway_address, key)
    services = ["embedding", "retrieval", "sql", "router", "gateway"]
    others = [n for n in services if n != dependency]
    pids_before = {n: stack.pid(n) for n in others}
    if dependency == POSTGRES:
        assert _postmaster_pid(stack) == stack.pid(POSTGRES)

    callers = Callers(stack.gateway_address, key, REQUESTS[dependency])
    callers.start()
    try:
        # Warm: every request kind answers fully before the fault.
        warm = await callers.wait_full_success(after=0.0, timeout_s=30.0)
        assert warm is not None, Counter(c.outcome for c in callers.calls)
        # Fault while calls are in flight.
        callers.calling.clear()
        await asyncio.wait_for(callers.calling.wait(), timeout=5.0)
        faulted_at = time.monotonic()
        cell.in_flight_at_fault = len(callers.in_flight)
        if fault == "kill":
            if dependency == POSTGRES:
                await asyncio.to_thread(_make_durable, stack)
            await asyncio.to_thread(stack.kill, dependency)
        else:
            await asyncio.to_thread(stack.pause, dependency)
        # Hold the fault for a little over one deadline, so calls meet it.
        await _sleep_observing(DEADLINE_S + 0.5)
        names = [dependency] if dependency != POSTGRES else ["retrieval", "sql"]
        cell.health_during_fault = await _health_of(stack, [*names, "gateway"])
        # Restore it.
        restore_started = time.monotonic()
        if fault == "kill":
            await asyncio.to_thread(stack.start_service, dependency)
        else:
            await asyncio.to_thread(stack.resume, dependency)
        restored_at = time.monotonic()
        cell.restore_s = round(restored_at - restore_started, 3)
        recovered = await callers.wait_full_success(after=restored_at, timeout_s=RECOVERY_S)
        cell.recovery_s = None if recovered is None else round(recovered - restored_at, 3)
    finally:
        await callers.stop()

    hit = [c for c in callers.calls if c.started < faulted_at <= c.ended]
    started = [c for c in callers.calls if faulted_at <= c.started <= restored_at]
    outage = [c for c in started if c.ended <= restored_at]
    across = [c for c in started if c.ended > restored_at]
    during = hit + started
    cell.in_flight_outcomes = dict(Counter(f"{c.rpc}:{c.outcome}" for c in hit))
    cell.outage_outcomes = dict(Counter(f"{c.rpc}:{c.outcome}" for c in outage))
    cell.across_restore_outcomes = dict(Counter(f"{c.rpc}:{c.outcome}" for c in across))
    cell.max_latency_s = round(max((c.latency_s for c in during), default=0.0), 3)
    allowed = {"ok", "degraded", "UNAVAILABLE+RetryInfo", "DEADLINE_EXCEEDED"}
    for c in callers.calls:
        if c.outcome not in allowed:
            cell.violations.append(f"{c.rpc} ended {c.outcome}")
        if c.latency_s > DEADLINE_S + LATE_S:
            cell.violations.append(f"{c.rpc} took {c.latency_s:.3f} s")
    if dependency != POSTGRES:
        state = cell.health_during_fault[dependency]
        if state == "SERVING":
            cell.violations.append(f"{dependency} health SERVING while {fault}ed")
    if cell.recovery_s is None:
        cell.violations.append(f"no full recovery within {RECOVERY_S} s")
    restarted = [n for n in others if stack.pid(n) != pids_before[n]]
    if restarted:
        cell.violations.append(f"callers restarted: {restarted}")
    assert cell.in_flight_at_fault > 0
    assert during, "no call met the fault"
    assert not cell.violations, cell


async def _sleep_observing(seconds: float) -> None:
    # The fault is held for a fixed window on purpose: this is the outage being measured.
    await asyncio.sleep(seconds)


def write_matrix() -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "deadline_s": DEADLINE_S,
        "late_allowed_s": LATE_S,
        "recovery_limit_s": RECOVERY_S,
        "callers": CALLERS,
        "cells": [asdict(cell) for cell in MATRIX.values()],
    }
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n")


def _counts(outcomes: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items())) or "-"


def matrix_table() -> list[str]:
    """The matrix as text lines (printed at the end of the session)."""
    lines: list[str] = []
    for cell in MATRIX.values():
        recovery = "FAILED" if cell.recovery_s is None else f"{cell.recovery_s:.2f} s"
        health_text = ", ".join(f"{k}={v}" for k, v in cell.health_during_fault.items())
        lines += [
            f"{cell.dependency} / {cell.fault}: recovery {recovery} after restore "
            f"(restore took {cell.restore_s:.2f} s); max call latency "
            f"{cell.max_latency_s:.2f} s (deadline {DEADLINE_S} s)"
            + (f"; VIOLATIONS {cell.violations}" if cell.violations else ""),
            f"    in flight at the fault ({cell.in_flight_at_fault}): "
            f"{_counts(cell.in_flight_outcomes)}",
            f"    started and ended during the outage: {_counts(cell.outage_outcomes)}",
            f"    started during it, ended after the restore: "
            f"{_counts(cell.across_restore_outcomes)}",
            f"    health during the fault: {health_text}",
        ]
    return lines
