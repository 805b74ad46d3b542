"""A catalog reads a database the same before and after Postgres analyses it: a user's
warehouse is analysed (autovacuum sees to it a minute after a restore), and the answers
must not change because planner statistics appeared. Row counts are counted, not taken
from ``pg_class.reltuples`` (-1 until analysed); a small table's values are read from the
data, not from ``pg_stats`` (whose histogram drops a lone value one row holds)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from services.sql.catalog import Catalog, load_catalog
from services.sql.demo._warehouse import database_url

pytestmark = pytest.mark.integration

_SCHEMA = [
    # no keys declared: the key and the join are inferred from the data
    "CREATE TABLE account (account_id integer, status text, holder text)",
    "CREATE TABLE payment (payment_id integer, account_id integer, method text)",
    # 'frozen' is held by one row: analysed, it is neither common nor in a histogram
    "INSERT INTO account SELECT g, CASE WHEN g = 1 THEN 'frozen' WHEN g % 2 = 0 "
    "THEN 'active' ELSE 'closed' END, 'Holder ' || g FROM generate_series(1, 40) g",
    "INSERT INTO payment SELECT g, 1 + g % 40, CASE WHEN g % 3 = 0 THEN 'card' "
    "ELSE 'transfer' END FROM generate_series(1, 300) g",
]


@pytest.fixture
async def fresh(pg_url: str) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_analysed")
        await admin.execute("CREATE DATABASE tandem_analysed")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_analysed"), autocommit=True
    ) as conn:
        for statement in _SCHEMA:
            await conn.execute(statement)
        for table in ("account", "payment"):
            await conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        yield conn


async def _before_and_after_analyze(
    conn: psycopg.AsyncConnection[object],
) -> tuple[Catalog, Catalog]:
    public = "SELECT count(*) FROM pg_stats WHERE schemaname = 'public'"
    assert await (await conn.execute(public)).fetchone() == (0,)  # as restored
    before, _ = await load_catalog(conn, "analysed")
    await conn.execute("ANALYZE")
    assert await (await conn.execute(public)).fetchone() != (0,)
    after, _ = await load_catalog(conn, "analysed")
    return before, after


async def test_row_counts_are_the_same_before_and_after_analyze(fresh) -> None:
    before, after = await _before_and_after_analyze(fresh)
    for catalog in (before, after):
        assert [(t.name, t.row_estimate) for t in catalog.tables] == [
            ("account", 40),
            ("payment", 300),
        ]


async def test_values_and_joins_are_the_same_before_and_after_analyze(fresh) -> None:
    before, after = await _before_and_after_analyze(fresh)
    for catalog in (before, after):
        account = catalog.table("account")
        status = account.column("status") if account is not None else None
        assert status is not None and status.sample_values == ("active", "closed", "frozen")
    assert before.tables == after.tables  # every column's samples and value index, keys
    assert before.joins == after.joins
