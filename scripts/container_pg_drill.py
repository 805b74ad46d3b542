"""The Postgres round of `make container-test` at the SQL level, run inside the gateway's
container (its DATABASE_URL names both nodes, target_session_attrs=read-write), as
scripts/container-test.sh drives it:

    podman exec <gateway> python -c "$(cat scripts/container_pg_drill.py)" write SECONDS > RECORD
    podman exec -i <gateway> python -c "$(cat scripts/container_pg_drill.py)" check < RECORD

`write` inserts one row every 50 ms into a scratch table for SECONDS, reconnecting after any
failure the way the services' pools do, and prints one JSON line per acknowledged or failed
write (what the script reads back as the record of acknowledged writes) while the script
SIGKILLs the primary's container. `check` (stdin: that record) reports the time from the
first failure to the next acknowledged write, and whether every acknowledged row is on the
node that now takes writes; it exits 1 if one is missing. The scratch table is dropped.

Only ids and timings are printed: no data of the stack's own tables.
"""

from __future__ import annotations

import json
import os
import sys
import time

import psycopg

TABLE = "tandem_container_pg_drill"


Connection = psycopg.Connection[tuple[object, ...]]


def _connect() -> Connection:
    return psycopg.connect(os.environ["DATABASE_URL"], autocommit=True, connect_timeout=3)


def write(seconds: float) -> int:
    with _connect() as setup:
        setup.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigint PRIMARY KEY)")
        setup.execute(f"TRUNCATE {TABLE}")
    conn: Connection | None = None
    deadline = time.monotonic() + seconds
    next_id = 0
    while time.monotonic() < deadline:
        next_id += 1
        started = time.time()
        try:
            if conn is None:
                conn = _connect()
            # statement_timeout: a commit waiting for a standby that is gone fails clearly
            # instead of hanging past the round.
            conn.execute("SET statement_timeout = '5s'")
            conn.execute(f"INSERT INTO {TABLE} (id) VALUES (%s)", (next_id,))
            node = f"{conn.info.host}:{conn.info.port}"
            done = time.time()
            print(
                json.dumps({"id": next_id, "ok": True, "at": started, "done": done, "node": node}),
                flush=True,
            )
        except psycopg.Error as error:
            print(
                json.dumps(
                    {"id": next_id, "ok": False, "at": started, "error": type(error).__name__}
                ),
                flush=True,
            )
            if conn is not None:
                conn.close()
            conn = None
        time.sleep(0.05)
    if conn is not None:
        conn.close()
    return 0


def check() -> int:
    records = [json.loads(line) for line in sys.stdin if line.startswith("{")]
    acked = [r["id"] for r in records if r["ok"]]
    failed = [r for r in records if not r["ok"]]
    outage_s = 0.0
    if failed:
        first_failure = failed[0]["at"]
        # Until the first write acknowledged after the first failure (a commit that waited
        # for the standby counts from its start to its acknowledgement).
        after = [r["done"] for r in records if r["ok"] and r["done"] > first_failure]
        outage_s = (after[0] - first_failure) if after else float("inf")
    # The node that takes writes now; wait for one (a restarted or promoted node) a minute.
    deadline = time.monotonic() + 60
    while True:
        try:
            conn = _connect()
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    with conn:
        present = {
            row[0] for row in conn.execute(f"SELECT id FROM {TABLE} WHERE id = ANY(%s)", (acked,))
        }
        primary = f"{conn.info.host}:{conn.info.port}"
        standbys = conn.execute(
            "SELECT application_name, state, sync_state FROM pg_stat_replication"
        ).fetchall()
        conn.execute(f"DROP TABLE {TABLE}")
    missing = sorted(set(acked) - present)
    report = {
        "writes": len(records),
        "acknowledged": len(acked),
        "failed": len(failed),
        "failed_by_error": {
            e: sum(r.get("error") == e for r in failed)
            for e in sorted({r["error"] for r in failed})
        },
        "writes_back_after_s": round(outage_s, 2),
        "acknowledged_missing": missing,
        "primary_before": next((r["node"] for r in records if r["ok"]), None),
        "primary_after": primary,
        "standbys_after": [list(s) for s in standbys],
    }
    print(json.dumps(report))
    return 1 if missing or outage_s == float("inf") else 0


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "write":
        sys.exit(write(float(sys.argv[2])))
    sys.exit(check())
