"""The dataset eval end to end on a made-up three-question dataset: the database is
re-created and loaded with psql into the real embedded Postgres, gold SQL runs as the
owner, questions go through the real AskQuestion RPC with their instructions to the real
Gemini generator (the scripted local endpoint answering), and the report counts
answered / correct / refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from services.bench.sql_dataset import (
    DATABASE_PREFIX,
    READER_ROLE,
    LoadOptions,
    evaluate,
    load_dataset,
)
from services.sql.demo._warehouse import database_url
from tests.fakes.gemini import FakeGemini, Reply
from tests.fakes.gemini_sql import gemini_sql_generator

pytestmark = pytest.mark.integration

TINY = Path(__file__).parent / "tiny_dataset"
PRICE_RULE = "Price means the list price, cheapest first."


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini() as endpoint:
        yield endpoint


def script_tiny(fake: FakeGemini) -> None:
    """The model's replies to the three questions, asked in order: tiny-0 right, tiny-1
    in the wrong order; for tiny-2 (the weather) the endpoint is down and the offline
    generator, taking over, refuses it (a model's understanding cannot refuse)."""
    fake.script(
        "understand_sql",
        Reply.json({"restatement": "Count products."}),
        Reply.json({"restatement": "List products by price."}),
        Reply.error(503),
    )
    fake.script("identify_tables", *(Reply.json({"tables": ["sales.products"]}) for _ in "ab"))
    fake.script(
        "generate_sql",
        Reply.json({"sql": "SELECT count(*) AS n FROM sales.products"}),
        Reply.json({"sql": "SELECT name, price FROM sales.products ORDER BY price DESC LIMIT 10"}),
    )


async def test_the_tiny_dataset_end_to_end(pg_url: str, fake: FakeGemini) -> None:
    script_tiny(fake)
    generator = gemini_sql_generator(fake)
    try:
        report = await evaluate(load_dataset(TINY), admin_url=pg_url, generator=generator)
    finally:
        await generator.aclose()

    assert (report["questions"], report["answered"], report["correct"]) == (3, 2, 1)
    assert (report["refused"], report["exhausted"], report["errors"]) == (1, 0, 0)
    assert report["gold_errors"] == 0 and report["gold_snapshot_mismatches"] == []
    items = {item["id"]: item for item in report["items"]}
    # Matched the second gold variant only.
    assert items["tiny-0"]["correct"] and items["tiny-0"]["outcome"] == "ANSWERED"
    # Right rows, wrong order, and the question asks for an order.
    assert items["tiny-1"]["order_sensitive"] and not items["tiny-1"]["correct"]
    assert "ORDER BY" in items["tiny-1"]["sql"].upper()
    assert items["tiny-2"]["outcome"] == "UNANSWERABLE" and not items["tiny-2"]["correct"]
    assert report["by_category"]["list"]["refused"] == 1
    assert report["by_database"]["shop"]["accuracy"] == pytest.approx(1 / 3, abs=1e-4)
    assert report["latency_ms_p50"] is not None
    # Each question's instructions reached the model with it, and only with it.
    prompts = [str(r.body) for r in fake.requests_for("understand_sql")]
    assert [PRICE_RULE in p for p in prompts] == [False, True, False]
    assert fake.pending() == 0


async def test_a_second_run_reloads_the_database_and_the_reader_stays_read_only(
    pg_url: str, fake: FakeGemini
) -> None:
    dataset = load_dataset(TINY)
    generator = gemini_sql_generator(fake)
    try:
        script_tiny(fake)
        await evaluate(dataset, admin_url=pg_url, generator=generator)
        owner = database_url(pg_url, DATABASE_PREFIX + "shop")
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await conn.execute("INSERT INTO sales.products VALUES (99, 'Stray', 1)")
        script_tiny(fake)
        report = await evaluate(dataset, admin_url=pg_url, generator=generator)
    finally:
        await generator.aclose()
    # The stray row is gone: the database was dropped and loaded again.
    assert report["correct"] == 1 and report["gold_snapshot_mismatches"] == []
    reader = psycopg.conninfo.make_conninfo(owner, user=READER_ROLE)
    async with await psycopg.AsyncConnection.connect(reader, autocommit=True) as conn:
        cur = await conn.execute("SELECT count(*) FROM sales.products")
        assert await cur.fetchone() == (3,)
        # Past the role's read-only default, the grants alone still refuse a write.
        await conn.execute("SET default_transaction_read_only = off")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute("INSERT INTO sales.products VALUES (100, 'No', 1)")


_KEYS_SQL = """
SELECT count(*) FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_namespace n ON n.oid = con.connamespace
WHERE n.nspname = 'sales' AND con.contype IN ('p', 'f', 'u')
"""
_STATS_SQL = "SELECT count(*) FROM pg_catalog.pg_stats WHERE schemaname = 'sales'"


async def test_databases_load_as_restored_unless_asked_and_keys_drop_after_the_gold(
    pg_url: str, fake: FakeGemini
) -> None:
    """By default a database is measured as a user restores it (keys declared, no
    planner statistics); --drop-keys loads a copy of its own with every key gone, once
    the gold queries have run; --analyze adds the statistics."""
    dataset = load_dataset(TINY)
    generator = gemini_sql_generator(fake)
    counts: dict[str, tuple[int, int]] = {}
    try:
        for name, options in (
            ("plain", LoadOptions()),
            ("no keys, analysed", LoadOptions(drop_keys=True, analyze=True)),
        ):
            script_tiny(fake)
            report = await evaluate(dataset, admin_url=pg_url, generator=generator, options=options)
            assert report["gold_errors"] == 0 and report["correct"] == 1
            assert (report["keys_dropped"], report["analyzed"]) == (
                options.drop_keys,
                options.analyze,
            )
            owner = database_url(pg_url, options.prefix + "shop")
            async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
                keys = await (await conn.execute(_KEYS_SQL)).fetchone()
                stats = await (await conn.execute(_STATS_SQL)).fetchone()
                assert keys is not None and stats is not None
                counts[name] = (keys[0], stats[0])
    finally:
        await generator.aclose()
    assert counts["plain"][0] == 2 and counts["plain"][1] == 0
    assert counts["no keys, analysed"][0] == 0 and counts["no keys, analysed"][1] > 0
    assert LoadOptions(drop_keys=True).prefix != DATABASE_PREFIX


DATASETS = Path(__file__).resolve().parents[4] / "shared" / "datasets"
DEV = DATASETS / "sql"
SPIDER = DATASETS / "sql-spider"


@pytest.mark.skipif(not (DEV / "questions.jsonl").exists(), reason="no development benchmark")
@pytest.mark.parametrize("drop_keys", [False, True], ids=["keys", "no-keys"])
async def test_the_offline_generator_on_the_development_benchmark(
    pg_url: str, drop_keys: bool
) -> None:
    """A floor at the measured level (64 of 104 correct, 4 answered wrongly, keys or no
    keys, loaded as a user restores the databases: no planner statistics; read by names
    alone), so a regression of the linker on data nobody here wrote turns the build
    red, and so does a rise in confident wrong answers; refusals stay refusals.

    64, not the 65 of earlier stops: ``advanced-55`` was right only through a join of two
    tables on a shared ``device_type`` category, which the join finder no longer takes for
    a reference (a handful of categories two tables both hold joins rows that have nothing
    to do with each other); it is refused now ("no join path")."""
    report = await evaluate(
        load_dataset(DEV), admin_url=pg_url, options=LoadOptions(drop_keys=drop_keys)
    )
    assert report["gold_errors"] == 0 and report["gold_snapshot_mismatches"] == []
    assert report["errors"] == 0
    assert report["correct"] >= 64, report["by_category"]
    answered_wrong = [
        i["id"] for i in report["items"] if i["outcome"] == "ANSWERED" and not i["correct"]
    ]
    assert len(answered_wrong) <= 4, answered_wrong
    for category, row in report["by_category"].items():
        assert row["correct"] > 0, category  # every category above zero
    refused = [i for i in report["items"] if i["outcome"] == "UNANSWERABLE"]
    assert refused and all(i["message"] for i in refused)  # a refusal says what was missing


@pytest.mark.skipif(not (SPIDER / "questions.jsonl").exists(), reason="no Spider dev set")
@pytest.mark.parametrize("drop_keys", [False, True], ids=["keys", "no-keys"])
async def test_the_offline_generator_on_spider_dev(pg_url: str, drop_keys: bool) -> None:
    """Floors at the measured level on 12 databases nobody here wrote, read by names alone
    as loaded here (261 of 477 correct with keys, 259 without), and precision per half:
    the study half's 94.5% (94.4% keyless) and the blind half's 96.6% (95.9% keyless),
    counted from its totals only."""
    report = await evaluate(
        load_dataset(SPIDER), admin_url=pg_url, options=LoadOptions(drop_keys=drop_keys)
    )
    assert report["gold_errors"] == 0 and report["errors"] == 0
    assert report["correct"] >= (259 if drop_keys else 261), report["by_category"]
    assert report["precision"] >= 0.95, report["by_category"]
    halves = report["halves"]
    assert halves["study"]["precision"] >= 0.944, halves["study"]["by_category"]
    assert halves["blind"]["precision"] >= 0.959, halves["blind"]["by_category"]
