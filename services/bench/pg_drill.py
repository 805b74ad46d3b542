"""``tandem bench drill --postgres``: the primary Postgres lost under load.

Starts ``tandem run --pg-standby`` (an embedded primary and its synchronous standby, the
failover monitor in the supervisor) in a private data directory and drives a paced mix
through the edge: writes (IngestDocuments of one small document, TeachSql of one pair,
each unique, so every acknowledged one can be looked for afterwards) and reads (Search,
Ask in RETRIEVE mode, AskSql). Each round loses the primary while a write is in flight:

- ``kill``: its postmaster SIGKILLed (a crash; the data directory is intact);
- ``lost``: its data directory moved away, then its postmaster SIGKILLed (a lost disk:
  nothing can start there again; the node comes back only as a new standby).

The monitor promotes the standby; the next round waits until the pair is whole again (a
standby streaming synchronously) so every round starts from what an operator expects.

Reported: failed calls per RPC (and how many were in flight at a loss), for each round the
time from the loss until a write succeeds again and the share of Searches that failed
inside that window, and — after the load — every acknowledged write looked for on the
current primary: each acknowledged document with all its chunks, each acknowledged pair.
A write that failed is either wholly there (committed before the connection went) or not
at all: a document with fewer chunks than it had when acknowledged, or with none, is
half-applied and counted as such. Targets (issue 51): 0 acknowledged writes lost, writes
back within 15 s, Searches failed during a failover at most 1%.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import signal
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg

from services.bench.cost import start_stack, stop_stack
from services.bench.drill import Action, Call, CallFailed, Drill, drive, pct_ms
from services.pgha import EmbeddedNode, EmbeddedPair, Role, SqlNode, node_conninfo
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb

WRITES = frozenset({"IngestDocuments", "TeachSql"})
# Issue 51's targets.
WRITES_BACK_TARGET_S = 15.0
SEARCH_FAILED_TARGET = 0.01
ROUND_KINDS = ("kill", "lost")
# The demo warehouse's database name on the gateway's surface, and a statement it accepts.
TEACH_DATABASE = "warehouse"
TEACH_SQL = "SELECT count(*) AS companies FROM companies"


@dataclass(frozen=True)
class PgDrillSettings:
    data_dir: Path
    out: Path
    rps: float = 60.0  # calls started per second, whatever the latency
    warmup_s: float = 6.0  # load before the first loss
    settle_s: float = 5.0  # load once the pair is whole again, before the next loss
    rounds: int = 3  # losses, alternating ROUND_KINDS: kill, lost, kill
    port_offset: int = 2200
    timeout_s: float = 300.0


def _pair(data_dir: Path) -> EmbeddedPair:
    """The pair ``tandem run --pg-standby`` keeps under ``data_dir`` (its nodes' fixed
    sockets, read again at each look: the drill moves data directories away)."""
    return EmbeddedPair(data_dir)


def primary(data_dir: Path) -> EmbeddedNode | None:
    """The one running node that answers as primary, or None (none, or two)."""
    found = [
        node
        for name, node in _pair(data_dir).nodes.items()
        if node.running() and SqlNode(name, node.address).probe().role is Role.PRIMARY
    ]
    return found[0] if len(found) == 1 else None


def pair_whole(data_dir: Path) -> bool:
    """One primary, and a standby streaming to it synchronously."""
    states = [node.probe() for node in _pair(data_dir).sql_nodes()]
    primaries = [state for state in states if state.role is Role.PRIMARY]
    return len(primaries) == 1 and bool(primaries[0].sync_names)


@dataclass
class Loss:
    kind: str
    node: str
    at: float
    writes_back: float = math.nan  # when the first write started after the loss succeeded
    whole_again: float = math.nan  # when the pair had a synchronous standby again

    @property
    def writes_back_s(self) -> float:
        return self.writes_back - self.at


@dataclass
class Acknowledged:
    """Writes the stack acknowledged (to look for afterwards) and those that failed."""

    documents: dict[str, int] = field(default_factory=dict)  # document id -> chunks
    pairs: dict[str, str] = field(default_factory=dict)  # pair id -> question
    failed_documents: set[str] = field(default_factory=set)
    failed_pairs: set[str] = field(default_factory=set)  # questions


@dataclass
class PgDrill(Drill):
    losses: list[Loss] = field(default_factory=list)
    acknowledged: Acknowledged = field(default_factory=Acknowledged)
    errors: Counter[str] = field(default_factory=Counter)  # failed documents' reasons


def write_mix(
    stub: gpb_grpc.GatewayServiceAsyncStub, key: str, run: str, drill: PgDrill
) -> list[tuple[str, Action]]:
    """The mix: each write unique (``run`` and a counter in its id), recorded when
    acknowledged and when it failed; the reads are what the demo answers."""
    metadata = (("authorization", f"Bearer {key}"),)
    counter = iter(range(1 << 62))
    acked = drill.acknowledged

    async def ingest() -> None:
        document_id = f"pgdrill-{run}-{next(counter)}"
        request = gpb.GatewayServiceIngestDocumentsRequest(
            documents=[
                rpb.DocumentInput(
                    document_id=document_id,
                    title=f"Drill note {document_id}",
                    text=f"Failover drill note {document_id}: the renewal discount for "
                    "this account was approved by the regional manager after review.",
                )
            ]
        )
        try:
            finished = None
            async for event in stub.IngestDocuments(request, metadata=metadata, timeout=30):
                if event.HasField("document_finished"):
                    finished = event.document_finished
            if finished is None or finished.outcome != rpb.DOCUMENT_OUTCOME_INCLUDED:
                outcome = "none" if finished is None else rpb.DocumentOutcome.Name(finished.outcome)
                if finished is not None and finished.error.reason:
                    drill.errors[finished.error.reason] += 1
                raise CallFailed(outcome)
            acked.documents[document_id] = finished.chunk_count
        except (grpc.aio.AioRpcError, CallFailed):
            acked.failed_documents.add(document_id)
            raise

    async def teach() -> None:
        question = f"how many companies are there (drill {run} {next(counter)})?"
        request = gpb.GatewayServiceTeachSqlRequest(
            database=TEACH_DATABASE, question=question, sql=TEACH_SQL
        )
        try:
            response = await stub.TeachSql(request, metadata=metadata, timeout=30)
        except grpc.aio.AioRpcError:
            acked.failed_pairs.add(question)
            raise
        acked.pairs[response.pair.pair_id] = question

    def unary(rpc: str, request: Any) -> Action:
        return lambda: getattr(stub, rpc)(request, metadata=metadata, timeout=30)

    return [
        ("IngestDocuments", ingest),
        ("Search", unary("Search", gpb.GatewayServiceSearchRequest(query="discount approval"))),
        (
            "Ask",
            unary(
                "Ask",
                gpb.GatewayServiceAskRequest(
                    question="What does our pricing policy say about discount approval?",
                    mode=qpb.ASK_MODE_RETRIEVE,
                ),
            ),
        ),
        ("TeachSql", teach),
        ("Search", unary("Search", gpb.GatewayServiceSearchRequest(query="security review"))),
        (
            "AskSql",
            unary(
                "AskSql",
                gpb.GatewayServiceAskSqlRequest(question="top 5 opportunities by amount"),
            ),
        ),
    ]


def lose(node: EmbeddedNode, kind: str, round_no: int) -> None:
    """SIGKILL the node's postmaster; for ``lost``, move its data directory away first
    (the running server keeps its open files; nothing can start there again)."""
    pid = node.postmaster_pid()
    if pid is None:
        raise RuntimeError(f"{node.name} is not running")
    if kind == "lost":
        node.pgdata.rename(node.pgdata.with_name(f"{node.pgdata.name}.lost-{round_no}"))
    os.kill(pid, signal.SIGKILL)


async def _wait(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not await asyncio.to_thread(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout_s:.0f} s")
        await asyncio.sleep(0.25)


async def _lose_in_turn(settings: PgDrillSettings, drill: PgDrill, stop: asyncio.Event) -> None:
    await _wait(lambda: pair_whole(settings.data_dir), settings.timeout_s, "a whole pair")
    await asyncio.sleep(settings.warmup_s)
    for round_no in range(settings.rounds):
        kind = ROUND_KINDS[round_no % len(ROUND_KINDS)]
        node = await asyncio.to_thread(primary, settings.data_dir)
        if node is None:
            raise RuntimeError("no single primary before the loss")
        # Lose it while a write is in flight (at most ~10 s of polling).
        for _ in range(20_000):
            if any(drill.in_flight[rpc] for rpc in WRITES):
                break
            await asyncio.sleep(0.0005)
        loss = Loss(kind, node.pgdata.name, time.monotonic())
        await asyncio.to_thread(lose, node, kind, round_no)
        drill.losses.append(loss)
        await _wait(
            lambda loss=loss: _write_succeeded_since(drill, loss.at) is not None,
            settings.timeout_s,
            "a successful write",
        )
        loss.writes_back = _write_succeeded_since(drill, loss.at) or math.nan
        await _wait(lambda: pair_whole(settings.data_dir), settings.timeout_s, "a whole pair")
        loss.whole_again = time.monotonic()
        await asyncio.sleep(settings.settle_s)
    stop.set()


def _write_succeeded_since(drill: Drill, at: float) -> float | None:
    """When the first write started after ``at`` was answered OK."""
    done = [
        c.started + c.latency_s
        for c in drill.calls
        if c.rpc in WRITES and c.status == "OK" and c.started >= at
    ]
    return min(done) if done else None


def check_writes(node: EmbeddedNode, acked: Acknowledged) -> dict[str, Any]:
    """Every acknowledged write looked for on ``node`` (the primary now), as the owner."""
    documents = sorted(set(acked.documents) | acked.failed_documents)
    with psycopg.connect(node_conninfo(node.address), autocommit=True) as conn:
        chunks: dict[str, int] = dict(
            conn.execute(
                "SELECT d.document_id, count(c.chunk_id) FROM retrieval_documents d "
                "LEFT JOIN retrieval_chunks c USING (tenant_id, document_id) "
                "WHERE d.document_id = ANY(%s) GROUP BY d.document_id",
                (documents,),
            ).fetchall()
        )
        pair_rows = conn.execute(
            "SELECT pair_id::text, question FROM sql_confirmed_pairs "
            "WHERE pair_id::text = ANY(%s) OR question = ANY(%s)",
            (list(acked.pairs), sorted(acked.failed_pairs)),
        ).fetchall()
    pairs_found = {pair_id for pair_id, _ in pair_rows}
    questions_found = {question for _, question in pair_rows}
    lost_documents = [d for d, n in acked.documents.items() if d not in chunks or chunks[d] < n]
    half = [d for d in acked.failed_documents if d in chunks and chunks[d] == 0]
    return {
        "acknowledged_documents": len(acked.documents),
        "acknowledged_pairs": len(acked.pairs),
        "lost_documents": sorted(lost_documents),
        "lost_pairs": sorted(p for p in acked.pairs if p not in pairs_found),
        "failed_documents": len(acked.failed_documents),
        "failed_documents_committed": sum(1 for d in acked.failed_documents if d in chunks),
        "failed_documents_half_applied": sorted(half),
        "failed_pairs": len(acked.failed_pairs),
        "failed_pairs_committed": len(acked.failed_pairs & questions_found),
    }


def summarise(drill: PgDrill, writes: dict[str, Any]) -> dict[str, Any]:
    rpcs: dict[str, Any] = {}
    first = min((loss.at for loss in drill.losses), default=math.inf)
    for rpc in sorted({c.rpc for c in drill.calls}):
        calls = [c for c in drill.calls if c.rpc == rpc]
        failed = [c for c in calls if c.status != "OK"]
        rpcs[rpc] = {
            "calls": len(calls),
            "failed": len(failed),
            "failed_by_status": dict(Counter(c.status for c in failed)),
            "in_flight_at_a_loss": sum(1 for c in calls if _in_flight(c, drill.losses)),
            "p50_ms": pct_ms([c.latency_s for c in calls], 50),
            "p99_ms": pct_ms([c.latency_s for c in calls], 99),
            # the stack's pace before anything was lost, to read the rest against
            "p50_before_ms": pct_ms([c.latency_s for c in calls if c.started < first], 50),
        }
    rounds: list[dict[str, Any]] = []
    for loss in drill.losses:
        window = [
            c for c in drill.calls if c.rpc == "Search" and loss.at <= c.started <= loss.writes_back
        ]
        searches_failed = sum(1 for c in window if c.status != "OK")
        rounds.append(
            {
                "kind": loss.kind,
                "node": loss.node,
                "writes_back_s": round(loss.writes_back_s, 2),
                "whole_again_s": round(loss.whole_again - loss.at, 2),
                "searches_in_window": len(window),
                "searches_failed_in_window": searches_failed,
            }
        )
    searches = sum(r["searches_in_window"] for r in rounds)
    searches_failed = sum(r["searches_failed_in_window"] for r in rounds)
    lost = len(writes["lost_documents"]) + len(writes["lost_pairs"])
    worst_back = max((r["writes_back_s"] for r in rounds), default=math.nan)
    search_share = searches_failed / searches if searches else 0.0
    return {
        "rpcs": rpcs,
        "rounds": rounds,
        "writes": writes,
        "failed_document_reasons": dict(drill.errors.most_common(5)),
        "acknowledged_writes_lost": lost,
        "worst_writes_back_s": worst_back,
        "searches_failed_during_failover": round(search_share, 4),
        "target_met": (
            lost == 0
            and not writes["failed_documents_half_applied"]
            and worst_back <= WRITES_BACK_TARGET_S
            and search_share <= SEARCH_FAILED_TARGET
            and len(rounds) > 0
        ),
    }


def _in_flight(call: Call, losses: Sequence[Loss]) -> bool:
    return any(call.started <= loss.at <= call.started + call.latency_s for loss in losses)


def render(results: dict[str, Any]) -> str:
    lines = [
        f"postgres drill: {results['stack']}, {results['rps']:g} calls/s through the edge",
        "",
        f"{'rpc':<17}{'calls':>7}{'failed':>8}{'p50 ms':>9}{'p99 ms':>9}{'p50 before':>12}"
        f"{'in flight at a loss':>21}",
    ]
    for rpc, row in results["rpcs"].items():
        lines.append(
            f"{rpc:<17}{row['calls']:>7}{row['failed']:>8}{row['p50_ms']:>9}{row['p99_ms']:>9}"
            f"{row['p50_before_ms']:>12}{row['in_flight_at_a_loss']:>21}"
        )
        if row["failed"]:
            lines.append(f"{'':<17}failed: {row['failed_by_status']}")
    lines.append("")
    for r in results["rounds"]:
        lines.append(
            f"{r['kind']:<5} {r['node']:<12} writes back after {r['writes_back_s']} s, pair whole "
            f"after {r['whole_again_s']} s; Searches failed meanwhile "
            f"{r['searches_failed_in_window']}/{r['searches_in_window']}"
        )
    w = results["writes"]
    lines += [
        "",
        f"acknowledged: {w['acknowledged_documents']} documents, {w['acknowledged_pairs']} pairs; "
        f"lost: {len(w['lost_documents'])} documents, {len(w['lost_pairs'])} pairs",
        f"failed writes: {w['failed_documents']} documents ({w['failed_documents_committed']} "
        f"committed whole, {len(w['failed_documents_half_applied'])} half-applied), "
        f"{w['failed_pairs']} pairs ({w['failed_pairs_committed']} committed)",
        f"targets: 0 acknowledged writes lost ({results['acknowledged_writes_lost']}), "
        f"writes back <= {WRITES_BACK_TARGET_S:g} s ({results['worst_writes_back_s']}), "
        f"Searches failed during failover <= {SEARCH_FAILED_TARGET:.0%} "
        f"({results['searches_failed_during_failover']:.1%}): "
        + ("met" if results["target_met"] else "MISSED"),
    ]
    return "\n".join(lines)


async def _run(settings: PgDrillSettings, target: str, api_key: str) -> PgDrill:
    drill = PgDrill()
    stop = asyncio.Event()
    async with grpc.aio.insecure_channel(target) as channel:
        stub: gpb_grpc.GatewayServiceAsyncStub = gpb_grpc.GatewayServiceStub(channel)
        mix = write_mix(stub, api_key, uuid.uuid4().hex[:8], drill)
        driver = asyncio.create_task(drive(mix, settings.rps, drill, stop))
        try:
            await _lose_in_turn(settings, drill, stop)
        finally:
            stop.set()
            await driver
    return drill


def main(settings: PgDrillSettings) -> dict[str, Any]:
    """The drill on a ``tandem run --pg-standby`` it starts (in a fresh data directory,
    removed first: the drill moves data directories away) and stops."""
    shutil.rmtree(settings.data_dir, ignore_errors=True)
    stack = start_stack(
        "pg-drill",
        settings.data_dir,
        port_offset=settings.port_offset,
        source=None,
        timeout_s=settings.timeout_s,
        extra_args=("--pg-standby",),
    )
    try:
        drill = asyncio.run(_run(settings, stack.target, stack.api_key))
        node = primary(settings.data_dir)
        if node is None:
            raise RuntimeError("no single primary after the drill")
        writes = check_writes(node, drill.acknowledged)
    finally:
        stop_stack(stack)
    results = {"rps": settings.rps, "stack": "tandem run --pg-standby", **summarise(drill, writes)}
    settings.out.parent.mkdir(parents=True, exist_ok=True)
    settings.out.write_text(json.dumps(results, indent=2) + "\n")
    # every call, seconds from the first loss, to read a window again afterwards
    zero = min((loss.at for loss in drill.losses), default=0.0)
    with settings.out.with_suffix(".calls.jsonl").open("w") as out:
        for call in drill.calls:
            row = [call.rpc, round(call.started - zero, 3), round(call.latency_s, 4), call.status]
            out.write(json.dumps(row) + "\n")
    print(render(results))
    print(f"wrote {settings.out}")
    return results
