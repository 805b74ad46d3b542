"""``tandem bench restore-drill``: a backup is only a backup once it has been restored.

In a private data directory: ``tandem run`` with ``TANDEM_BACKUP_DIR`` set (the server
archives its WAL), the demo documents, a base backup, then more writes — documents
ingested through the edge, API keys created, SQL pairs taught — some before a noted
time T and some after. The WAL is archived, the source stopped, and the backup restored
twice into fresh data directories: to T, and to the latest. A stack is started on each,
and its document, chunk, key and pair counts and a sample of search results (the same
ids in the same order) are compared with the source's at T and at the end. Target:
identical. Reported as JSON and markdown naming the commit.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pgserver
import psycopg
from psycopg import sql

from services.backup import restore_base_backup, restore_secrets, save_secrets, take_base_backup
from services.bench.cost import start_stack, stop_stack
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb

# Tables whose rows a restore must bring back, by what they hold.
COUNTED = {
    "documents": "retrieval_documents",
    "chunks": "retrieval_chunks",
    "keys": "api_keys",
    "pairs": "sql_confirmed_pairs",
}
# Searches whose hits (document and chunk ids, in order) are compared.
QUERIES = (
    "renewal risk",
    "pricing objections on the last call",
    "security review status",
    "who is the champion at the account",
    "restore drill document about backups",
)
_KEY_FILE = "demo-api-key"  # tandem run's record of the demo key (services.cli._run)
_TENANT = "demo"
_DATABASE = "warehouse"


@dataclass(frozen=True)
class RestoreDrillSettings:
    data_dir: Path
    out: Path
    port_offset: int = 3000
    timeout_s: float = 300.0


@dataclass(frozen=True)
class Snapshot:
    """What the drill compares: row counts and search hits."""

    counts: dict[str, int]
    searches: dict[str, list[str]]


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@contextmanager
def _joined(data_dir: Path) -> Iterator[str]:
    """The URL of the server on ``data_dir/pg``, this process a user of it until the end
    (when the stack has stopped, leaving stops the server)."""
    server: Any = pgserver.get_server(data_dir.resolve() / "pg", cleanup_mode="stop")  # type: ignore[attr-defined]
    try:
        yield server.get_uri("postgres")
    finally:
        server.cleanup()


def _counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        counts = {}
        for what, table in COUNTED.items():
            query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
            row = conn.execute(query).fetchone()
            counts[what] = int(row[0]) if row else 0
        return counts


async def _searches(stub: gpb_grpc.GatewayServiceAsyncStub, key: str) -> dict[str, list[str]]:
    metadata = (("authorization", f"Bearer {key}"),)
    hits: dict[str, list[str]] = {}
    for query in QUERIES:
        response = await stub.Search(
            gpb.GatewayServiceSearchRequest(query=query, top_k=8), metadata=metadata, timeout=30
        )
        hits[query] = [f"{h.document_id}#{h.chunk_id}" for h in response.hits]
    return hits


async def _snapshot(target: str, key: str, url: str) -> Snapshot:
    async with grpc.aio.insecure_channel(target) as channel:
        searches = await _searches(gpb_grpc.GatewayServiceStub(channel), key)
    return Snapshot(await asyncio.to_thread(_counts, url), searches)


async def _write(target: str, key: str, url: str, batch: str) -> None:
    """One batch of writes of each kind: two documents, a key, a taught pair."""
    from gateway import key_administration  # noqa: PLC0415

    metadata = (("authorization", f"Bearer {key}"),)
    documents = [
        rpb.DocumentInput(
            document_id=f"restore-drill-{batch}-{i}",
            title=f"Restore drill {batch} {i}",
            text=(
                f"Restore drill document about backups, batch {batch}, number {i}. "
                "The base backup and the WAL archive bring it back after a lost machine."
            ),
        )
        for i in range(2)
    ]
    async with grpc.aio.insecure_channel(target) as channel:
        stub = gpb_grpc.GatewayServiceStub(channel)
        async for _ in stub.IngestDocuments(
            gpb.GatewayServiceIngestDocumentsRequest(documents=documents),
            metadata=metadata,
            timeout=120,
        ):
            pass
        await stub.TeachSql(
            gpb.GatewayServiceTeachSqlRequest(
                database=_DATABASE,
                question=f"how many regions are there (drill batch {batch})",
                sql=f"SELECT count(*) AS regions_{batch} FROM regions",
            ),
            metadata=metadata,
            timeout=60,
        )
    async with key_administration(url) as keys:
        await keys.create(_TENANT, label=f"restore drill {batch}")


def _archive_now(url: str, timeout_s: float = 60.0) -> str:
    """Close the current WAL segment and wait until it is archived: the drill's "latest"
    is everything written (a real loss would lose the unarchived tail; status says so)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()
        segment = str(row[0]) if row else ""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            done = conn.execute("SELECT last_archived_wal FROM pg_stat_archiver").fetchone()
            if done and done[0] and done[0] >= segment:
                return segment
            time.sleep(0.2)
    raise RuntimeError(f"WAL segment {segment} was not archived within {timeout_s:.0f} s")


def _compare(expected: Snapshot, got: Snapshot) -> dict[str, Any]:
    searches_same = {q: expected.searches[q] == got.searches.get(q) for q in expected.searches}
    return {
        "expected_counts": expected.counts,
        "restored_counts": got.counts,
        "counts_identical": expected.counts == got.counts,
        "searches_identical": all(searches_same.values()),
        "searches_differing": [q for q, same in searches_same.items() if not same],
        "hits_compared": sum(len(h) for h in expected.searches.values()),
    }


def _restored_round(
    settings: RestoreDrillSettings,
    *,
    backups: Path,
    source_dir: Path,
    name: str,
    api_key: str,
    to_time: datetime | None,
    expected: Snapshot,
) -> dict[str, Any]:
    target_dir = settings.data_dir / name
    started = time.monotonic()
    restored = restore_base_backup(backups, target_dir / "pg", to_time=to_time)
    restore_s = time.monotonic() - started
    restore_secrets(backups, target_dir)  # the key pepper: the restored keys verify
    # The demo key's record: the restored stack reuses the key (it is in the restored
    # database) instead of creating one, which would change the key count.
    shutil.copy2(source_dir / _KEY_FILE, target_dir / _KEY_FILE)
    stack = start_stack(
        name,
        target_dir,
        port_offset=settings.port_offset,
        source=None,
        timeout_s=settings.timeout_s,
    )
    try:
        with _joined(target_dir) as url:
            # Searched with the source's key: a key issued before the backup still verifies.
            got = asyncio.run(_snapshot(stack.target, api_key, url))
            stop_stack(stack)
    finally:
        stop_stack(stack)
    return {
        "target": restored.target,
        "reached": restored.reached,
        "timeline": restored.timeline,
        "restore_s": round(restore_s, 2),
        **_compare(expected, got),
    }


def main(settings: RestoreDrillSettings) -> dict[str, Any]:
    if settings.data_dir.exists():
        shutil.rmtree(settings.data_dir)
    source_dir = settings.data_dir / "source"
    backups = settings.data_dir / "backups"
    stack = start_stack(
        "restore-drill-source",
        source_dir,
        port_offset=settings.port_offset,
        source=None,
        timeout_s=settings.timeout_s,
        extra_env={"TANDEM_BACKUP_DIR": str(backups.resolve())},
    )
    try:
        with _joined(source_dir) as url:
            asyncio.run(_write(stack.target, stack.api_key, url, "a"))
            started = time.monotonic()
            base = take_base_backup(url, backups)
            save_secrets(source_dir, backups)
            backup_s = time.monotonic() - started
            asyncio.run(_write(stack.target, stack.api_key, url, "b"))
            at_t = asyncio.run(_snapshot(stack.target, stack.api_key, url))
            time.sleep(0.5)
            t = datetime.now(UTC)
            time.sleep(0.5)
            asyncio.run(_write(stack.target, stack.api_key, url, "c"))
            latest = asyncio.run(_snapshot(stack.target, stack.api_key, url))
            segment = _archive_now(url)
            stop_stack(stack)
    finally:
        stop_stack(stack)
    rounds = {
        "to_t": _restored_round(
            settings,
            backups=backups,
            source_dir=source_dir,
            name="restored-t",
            api_key=stack.api_key,
            to_time=t,
            expected=at_t,
        ),
        "latest": _restored_round(
            settings,
            backups=backups,
            source_dir=source_dir,
            name="restored-latest",
            api_key=stack.api_key,
            to_time=None,
            expected=latest,
        ),
    }
    results = {
        "commit": commit(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "base_backup": base.path.name,
        "base_backup_mb": round(base.bytes / 1e6, 1),
        "base_backup_s": round(backup_s, 2),
        "last_archived_wal": segment,
        "t": t.isoformat(),
        "rounds": rounds,
        "target_met": all(
            r["counts_identical"] and r["searches_identical"] for r in rounds.values()
        ),
    }
    _publish(settings, results)
    return results


def render(results: dict[str, Any]) -> str:
    lines = [
        f"# Restore drill ({results['commit']}, {results['when']})",
        "",
        f"Base backup {results['base_backup']}: {results['base_backup_mb']} MB in "
        f"{results['base_backup_s']} s; WAL archived to {results['last_archived_wal']}; "
        f"T = {results['t']}.",
        "",
        "| restore | reached | restore s | "
        + " | ".join(f"{k} (source/restored)" for k in COUNTED)
        + " | searches identical |",
        "|---|---|---|" + "---|" * len(COUNTED) + "---|",
    ]
    for name, r in results["rounds"].items():
        cells = [f"{r['expected_counts'][k]}/{r['restored_counts'][k]}" for k in COUNTED]
        lines.append(
            f"| {name} ({r['target']}) | {r['reached']} | {r['restore_s']} | "
            + " | ".join(cells)
            + f" | {'yes' if r['searches_identical'] else 'NO'} ({r['hits_compared']} hits) |"
        )
    verdict = "met" if results["target_met"] else "MISSED"
    lines += ["", f"Target (identical counts and search results): {verdict}."]
    return "\n".join(lines)


def _publish(settings: RestoreDrillSettings, results: dict[str, Any]) -> None:
    import json  # noqa: PLC0415

    table = render(results)
    settings.out.parent.mkdir(parents=True, exist_ok=True)
    settings.out.write_text(json.dumps(results, indent=2) + "\n")
    settings.out.with_suffix(".md").write_text(table + "\n")
    print(table)
    print(f"\nwrote {settings.out} and {settings.out.with_suffix('.md')}")
