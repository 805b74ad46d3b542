"""An eval database stays as loaded: autovacuum never analyses its tables behind the
eval's back (the catalog would see planner statistics or not by chance, and the same
eval answer differently from run to run), while ``--analyze`` still analyses them."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from services.bench.sql_dataset import LoadOptions, load_databases, load_dataset
from services.sql import database_url

pytestmark = pytest.mark.integration

SCRIPT = """
CREATE TABLE shops (shop_id int PRIMARY KEY, city text);
CREATE SCHEMA sales;
CREATE TABLE sales.orders (order_id int, shop_id int, total numeric);
INSERT INTO shops SELECT g, 'city ' || (g % 7) FROM generate_series(1, 500) g;
INSERT INTO sales.orders SELECT g, g % 500 + 1, g * 1.5 FROM generate_series(1, 2000) g;
"""


def _dataset(root: Path) -> Path:
    (root / "databases").mkdir(parents=True)
    (root / "databases" / "fresh_shop.sql").write_text(SCRIPT)
    question = {
        "id": "f-1",
        "db": "fresh_shop",
        "category": "select",
        "question": "q?",
        "gold_sql": ["SELECT 1"],
    }
    (root / "questions.jsonl").write_text(json.dumps(question) + "\n")
    return root


def _state(url: str) -> dict[str, tuple[list[str], bool]]:
    """Each loaded table's storage options, and whether it has planner statistics."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT n.nspname || '.' || c.relname, coalesce(c.reloptions, '{}'), "
            "EXISTS (SELECT 1 FROM pg_statistic s WHERE s.starelid = c.oid) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname IN ('public', 'sales') ORDER BY 1"
        ).fetchall()
    return {name: (list(options), analysed) for name, options, analysed in rows}


@pytest.mark.parametrize("analyze", [False, True])
async def test_loaded_tables_are_never_autoanalysed(pg_url: str, tmp_path: Path, analyze) -> None:
    dataset = load_dataset(_dataset(tmp_path))
    options = LoadOptions(analyze=analyze)
    await load_databases(pg_url, dataset, options)
    state = _state(database_url(pg_url, options.prefix + "fresh_shop"))
    assert set(state) == {"public.shops", "sales.orders"}
    for options_of, analysed in state.values():
        assert options_of == ["autovacuum_enabled=false"]
        assert analysed is analyze  # statistics only when the eval asks for them
