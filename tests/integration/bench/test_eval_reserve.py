"""Two evals on one embedded Postgres at once: the second waits for the first's databases
instead of dropping them under its questions (services/bench/reserve.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import psycopg
import pytest

from services.bench.sql_dataset import evaluate, load_databases, load_dataset

pytestmark = pytest.mark.integration

TINY = Path(__file__).resolve().parents[1] / "sql" / "tiny_dataset"
_WAITING_SQL = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"


def _second_run_state(pg_url: str, second: threading.Thread) -> str:
    """Whether the second run's setup is waiting on a lock or has already finished (it
    does one or the other; no clock decides)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while second.is_alive():
            row = conn.execute(_WAITING_SQL).fetchone()
            if row and row[0]:
                return "waiting"
            time.sleep(0.05)
    return "finished"


async def test_a_second_eval_waits_for_the_databases_the_first_is_asking(pg_url: str) -> None:
    dataset = load_dataset(TINY)
    seen: list[str] = []
    results: list[dict[str, str]] = []

    def second_setup() -> None:
        results.append(asyncio.run(load_databases(pg_url, dataset)))

    second = threading.Thread(target=second_setup)

    def after_each_question(_: str) -> None:
        # mid-run (a question answered, two to go): a second run of the same dataset starts
        if not seen:
            second.start()
            seen.append(_second_run_state(pg_url, second))

    report = await evaluate(dataset, admin_url=pg_url, progress=after_each_question)
    await asyncio.to_thread(second.join)
    # the second run's setup did not drop and re-create the first's databases mid-run…
    assert seen == ["waiting"]
    assert report["questions"] == 3 and report["errors"] == 0 and report["gold_errors"] == 0
    # …and loaded its own once the first was done
    assert list(results[0]) == ["shop"]
    async with await psycopg.AsyncConnection.connect(results[0]["shop"]) as conn:
        cur = await conn.execute("SELECT count(*) FROM sales.products")
        assert await cur.fetchone() == (3,)
