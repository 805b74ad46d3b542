"""The gold snapshot check: a database that did not load as built is caught, a gold query
that reads the clock is not held to the day its snapshot was taken."""

from __future__ import annotations

import json
from pathlib import Path

from services.bench.sql_dataset import Dataset, DatasetQuestion, snapshot_mismatches


def _dataset(root: Path, gold_sql: str) -> Dataset:
    question = DatasetQuestion("basic-1", "shop", "aggregate", "How many sales?", "", (gold_sql,))
    (root / "gold_results.jsonl").write_text(
        json.dumps({"id": "basic-1", "rows": [[2]], "time_dependent": False}) + "\n"
    )
    return Dataset(root, ("shop",), (question,))


def test_a_snapshot_that_differs_is_reported(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, "SELECT COUNT(*) FROM sales")
    assert snapshot_mismatches(dataset, {"basic-1": [[(2.0,)]]}) == []
    assert snapshot_mismatches(dataset, {"basic-1": [[(3.0,)]]}) == ["basic-1"]


def test_a_gold_query_reading_the_clock_is_not_held_to_its_snapshot_day(tmp_path: Path) -> None:
    # defog advanced-28: "the past 7 days" over sales loaded relative to CURRENT_DATE's
    # week counts one sale more on a Monday than on the day its snapshot was taken
    for clock in ("CURRENT_DATE - INTERVAL '6 days'", "now() - interval '1 day'"):
        dataset = _dataset(tmp_path, f"SELECT COUNT(*) FROM sales WHERE sale_date >= {clock}")
        assert snapshot_mismatches(dataset, {"basic-1": [[(3.0,)]]}) == []
