"""The unseen-databases text-to-SQL dev set (services/bench/devsets/sql-unseen) is what
its README says: four databases split into a study and a blind half with every category
in both, each .sql under 2 MB, and, loaded with psql into the real embedded Postgres as
the eval loads it, every gold query runs, returns rows (no more than the eval asks for)
and equals its snapshot."""

from __future__ import annotations

from collections import Counter

import pytest

from services.bench.devsets.build_sql_unseen import HERE
from services.bench.sql_dataset import (
    MAX_ROWS,
    blind_databases,
    gold_results,
    load_databases,
    load_dataset,
    load_halves,
    snapshot_mismatches,
)

pytestmark = pytest.mark.integration

CATEGORIES = {
    "select",
    "where",
    "aggregate",
    "group_by",
    "order_limit",
    "join",
    "nested",
    "set_op",
}
MAX_SCRIPT_BYTES = 2_000_000


def test_the_halves_parse_and_each_holds_every_category() -> None:
    dataset = load_dataset(HERE)
    assert load_halves(HERE) == {
        "study": ("nycflights13", "northwind", "employee"),
        "blind": ("chinook",),
    }
    assert blind_databases(dataset) == {"chinook"}
    for db in dataset.databases:
        counts = Counter(q.category for q in dataset.questions if q.db == db)
        assert set(counts) == CATEGORIES, (db, counts)
        assert 30 <= sum(counts.values()) <= 40, (db, counts)
        assert dataset.script(db).stat().st_size < MAX_SCRIPT_BYTES
    assert len({q.id for q in dataset.questions}) == len(dataset.questions)


async def test_every_gold_query_runs_and_equals_its_snapshot(pg_url: str) -> None:
    dataset = load_dataset(HERE)
    await load_databases(pg_url, dataset)
    gold = await gold_results(pg_url, dataset.questions)
    failing = {
        i: v[0]
        for i, v in gold.items()
        if isinstance(v[0], str) or not v[0] or len(v[0]) > MAX_ROWS  # a cut answer: wrong
    }
    assert failing == {}
    assert snapshot_mismatches(dataset, gold) == []
