"""The dependency fault matrix on the whole stack as processes: Postgres, embedding,
retrieval and SQL are each killed (SIGKILL) and hung (SIGSTOP) while gateway callers have
requests in flight. Every call must end within its deadline plus 100 ms in one of the
outcomes documented for its RPC and that dependency (``EXPECTED``): a full answer,
``degraded = true`` with a reason naming the fault, or the documented status — never an
empty or unanswered reply that does not say it is degraded, a hang or another status. The
faulted process's health must show it; during a Postgres outage the services that use it
(retrieval, SQL, gateway) report NOT_SERVING for their service name, and SERVING again
within the recovery bound after it; once the dependency is back, the callers' next
requests must succeed within 5 s without restarting any caller.

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

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tests.faults.contract import decode
from tests.faults.procs import health
from tests.processes import POSTGRES, ProcessStack

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DEADLINE_S = 1.5
LATE_S = 0.1  # what "within the deadline" allows on top of it
RECOVERY_S = 5.0
# The services' dependency watcher probes every 2 s with a 2 s timeout (a stopped
# Postgres never answers): NOT_SERVING within two rounds, with room for a busy machine.
HEALTH_DETECT_S = 6.0
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


# Postgres's direct users and the name each reports its readiness under.
DB_DEPENDENTS = {
    "retrieval": "tandem.v1.RetrievalService",
    "sql": "tandem.v1.SqlService",
    "gateway": "tandem.v1.GatewayService",
}


@dataclass(frozen=True)
class Expected:
    """What one RPC may end in while one dependency is faulted (the protos' contract).

    ``statuses`` are the outcome labels of failed calls. A degraded reply must name at
    least one of ``causes`` and nothing outside ``causes | also`` (what follows from a
    cause, e.g. the plan step that failed on it). A full answer ("ok") is always allowed:
    calls that beat the fault, or finish after it is mended."""

    statuses: frozenset[str]
    causes: frozenset[str] = frozenset()
    also: frozenset[str] = frozenset()

    def allows(self, outcome: str) -> bool:
        if outcome == "ok" or outcome in self.statuses:
            return True
        if outcome.startswith("degraded:"):
            reasons = set(outcome.removeprefix("degraded:").split("+"))
            return bool(reasons & self.causes) and reasons <= self.causes | self.also
        return False


# The shared DEADLINE_EXCEEDED ends a call hung on a stopped process, or in flight when
# a process is killed. The gateway verifies every key in Postgres: with Postgres down,
# every RPC is UNAVAILABLE (reason DATABASE_UNAVAILABLE, with RetryInfo).
_DEADLINE = "DEADLINE_EXCEEDED"
_DB_DOWN = "UNAVAILABLE/DATABASE_UNAVAILABLE+RetryInfo"
# An Ask whose plan step failed on the fault says so; the router gives up at the deadline
# on a dependency that hangs (a stopped one, or Postgres's pools waiting out a kill).
_STEP = frozenset({"STEP_FAILED", "REPLAN_LIMIT_REACHED"})
_CAUSES: dict[tuple[str, str], frozenset[str]] = {
    (POSTGRES, "Search"): frozenset({"DATABASE_UNAVAILABLE"}),
    # DEPENDENCY_ERROR (component "conversations"): the gateway could not store the turn.
    (POSTGRES, "Ask"): frozenset(
        {"DATABASE_UNAVAILABLE", "RETRIEVAL_UNAVAILABLE", "SQL_UNAVAILABLE", "DEPENDENCY_ERROR"}
    ),
    ("embedding", "Search"): frozenset({"EMBEDDING_UNAVAILABLE"}),
    ("embedding", "Ask"): frozenset({"EMBEDDING_UNAVAILABLE", "RETRIEVAL_UNAVAILABLE"}),
    ("retrieval", "Search"): frozenset({"RETRIEVAL_UNAVAILABLE"}),
    ("retrieval", "Ask"): frozenset({"RETRIEVAL_UNAVAILABLE"}),
    ("sql", "Ask"): frozenset({"SQL_UNAVAILABLE"}),
}
# Statuses besides DEADLINE_EXCEEDED. Search and Ask fail open (degraded, not an error)
# on everything behind the gateway; AskSql cannot do without the SQL service (the
# gateway's DEPENDENCY_UNAVAILABLE) or its warehouse (SqlService's DATABASE_UNAVAILABLE
# or CATALOG_UNAVAILABLE, relayed).
_STATUSES: dict[tuple[str, str], frozenset[str]] = {
    (POSTGRES, "Search"): frozenset({_DB_DOWN}),
    (POSTGRES, "AskSql"): frozenset(
        {
            _DB_DOWN,
            "UNAVAILABLE/CATALOG_UNAVAILABLE+RetryInfo",
            "UNAVAILABLE/CATALOG_LOADING+RetryInfo",
        }
    ),
    (POSTGRES, "Ask"): frozenset({_DB_DOWN}),
    # the SQL service down (the gateway's DEPENDENCY_UNAVAILABLE) or, restarted and
    # serving before its catalog is loaded, saying so itself (CATALOG_UNAVAILABLE, or
    # CATALOG_LOADING while the load is under way)
    ("sql", "AskSql"): frozenset(
        {
            "UNAVAILABLE/DEPENDENCY_UNAVAILABLE+RetryInfo",
            "UNAVAILABLE/CATALOG_UNAVAILABLE+RetryInfo",
            "UNAVAILABLE/CATALOG_LOADING+RetryInfo",
        }
    ),
}


def expected(dependency: str, fault: str, rpc: str) -> Expected:
    """The documented outcomes of ``rpc`` while ``dependency`` is ``fault``-ed."""
    causes = _CAUSES.get((dependency, rpc), frozenset())
    also: frozenset[str] = frozenset()
    if rpc == "Ask":
        also = _STEP
        if fault == "stop" or dependency == POSTGRES:
            causes |= {"DEADLINE_EXCEEDED"}
    return Expected(_STATUSES.get((dependency, rpc), frozenset()) | {_DEADLINE}, causes, also)


@dataclass
class Call:
    rpc: str
    started: float
    ended: float
    # ok | degraded:<REASON>[+<REASON>] | EMPTY | UNANSWERED:<outcome>
    # | <STATUS>[/<reason>][+RetryInfo]
    outcome: str

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
    # Postgres: when its users' service health read NOT_SERVING after the fault, and
    # SERVING again after the restore.
    health_down_after_s: float | None = None
    health_back_after_s: float | None = None
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
    label = seen.code.name
    if seen.reason and seen.reason != label:
        label += f"/{seen.reason}"
    return f"{label}+RetryInfo" if seen.retries else label


def _degraded(degradations: Any) -> str:
    """``degraded:`` and the reasons' names (a degraded reply that names none: NONE)."""
    prefix = len("DEGRADATION_REASON_")
    names = sorted({cpb.DegradationReason.Name(d.reason)[prefix:] for d in degradations})
    return "degraded:" + ("+".join(names) or "NONE")


Stub: TypeAlias = "gpb_grpc.GatewayServiceAsyncStub"
Request: TypeAlias = "Callable[[Stub, Any], Awaitable[str]]"


async def _search(stub: Stub, metadata: Any) -> str:
    reply = await stub.Search(
        gpb.GatewayServiceSearchRequest(query="renewal risk Growth tier"),
        metadata=metadata,
        timeout=DEADLINE_S,
    )
    if reply.degraded:
        return _degraded(reply.degradations)
    return "ok" if reply.hits else "EMPTY"


async def _ask_sql(stub: Stub, metadata: Any) -> str:
    reply = await stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question="How many companies are there?"),
        metadata=metadata,
        timeout=DEADLINE_S,
    )
    if reply.degraded:
        return _degraded(reply.degradations)
    if reply.outcome != spb.SQL_ASK_OUTCOME_ANSWERED or not reply.result.rows:
        return f"UNANSWERED:{spb.SqlAskOutcome.Name(reply.outcome)}"
    return "ok"


async def _ask(stub: Stub, metadata: Any) -> str:
    reply = await stub.Ask(
        gpb.GatewayServiceAskRequest(
            question="Which accounts mention renewal risk, and how many companies are there?"
        ),
        metadata=metadata,
        timeout=DEADLINE_S,
    )
    answer = reply.answer
    if answer.degraded:
        return _degraded(answer.degradations)
    if answer.outcome != qpb.ANSWER_OUTCOME_ANSWERED:
        return f"UNANSWERED:{qpb.AnswerOutcome.Name(answer.outcome)}"
    return "ok"


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
    results = await asyncio.gather(
        *(health(stack.address(n), timeout_s=0.5, tls=stack.probe_tls(n), peer=n) for n in names)
    )
    return dict(zip(names, results, strict=True))


async def _dependents_health(stack: ProcessStack) -> dict[str, str]:
    """Each of Postgres's users' health for its own service name."""
    results = await asyncio.gather(
        *(
            health(stack.address(n), timeout_s=0.5, service=service, tls=stack.probe_tls(n), peer=n)
            for n, service in DB_DEPENDENTS.items()
        )
    )
    return dict(zip(DB_DEPENDENTS, results, strict=True))


async def _until_dependents(
    stack: ProcessStack, status: str, since: float, timeout_s: float
) -> tuple[float | None, dict[str, str]]:
    """Seconds from ``since`` until every user of Postgres reports ``status`` (None if not
    within ``timeout_s``), and what they reported last."""
    while True:
        seen = await _dependents_health(stack)
        now = time.monotonic()
        if all(v == status for v in seen.values()):
            return round(now - since, 3), seen
        if now - since >= timeout_s:
            return None, seen
        await asyncio.sleep(0.1)


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
        # Hold the fault for a little over one deadline, so calls meet it (and for
        # Postgres, until its users have noticed).
        down = None
        if dependency == POSTGRES:
            down = asyncio.create_task(
                _until_dependents(stack, "NOT_SERVING", faulted_at, HEALTH_DETECT_S)
            )
        await _sleep_observing(DEADLINE_S + 0.5)
        if down is not None:
            cell.health_down_after_s, cell.health_during_fault = await down
        else:
            cell.health_during_fault = await _health_of(stack, [dependency, "gateway"])
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
        if dependency == POSTGRES:
            cell.health_back_after_s, _ = await _until_dependents(
                stack, "SERVING", restored_at, RECOVERY_S
            )
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
    for c in callers.calls:
        if not expected(dependency, fault, c.rpc).allows(c.outcome):
            cell.violations.append(f"{c.rpc} ended {c.outcome}")
        if c.latency_s > DEADLINE_S + LATE_S:
            cell.violations.append(f"{c.rpc} took {c.latency_s:.3f} s")
    if dependency == POSTGRES:
        if cell.health_down_after_s is None:
            cell.violations.append(
                f"not NOT_SERVING within {HEALTH_DETECT_S} s: {cell.health_during_fault}"
            )
        if cell.health_back_after_s is None:
            cell.violations.append(f"not SERVING again within {RECOVERY_S} s")
    else:
        # A killed process refuses the connection; a stopped one never answers.
        state = cell.health_during_fault[dependency]
        process_health = "UNAVAILABLE" if fault == "kill" else "DEADLINE_EXCEEDED"
        if state != process_health:
            cell.violations.append(f"{dependency} health {state} while {fault}ed")
    if cell.recovery_s is None:
        cell.violations.append(f"no full recovery within {RECOVERY_S} s")
    restarted = [n for n in others if stack.pid(n) != pids_before[n]]
    if restarted:
        cell.violations.append(f"callers restarted: {restarted}")
    assert cell.in_flight_at_fault > 0
    assert during, "no call met the fault"
    # The fault was felt: some call that met it did not end in a full answer.
    assert any(c.outcome != "ok" for c in during), cell
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
        if cell.dependency == POSTGRES:
            health_text += (
                f" (service names; NOT_SERVING after {cell.health_down_after_s} s, "
                f"SERVING again {cell.health_back_after_s} s after the restore)"
            )
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
