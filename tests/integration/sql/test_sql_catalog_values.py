"""Stored values reach the catalog whether or not Postgres holds statistics: a database
restored a minute ago (never analysed) links "Acme's Diner", 'JFK' and 'Bank of Ohio'
exactly as an analysed one does, read from the data with the value index's bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from services.sql import introspect
from services.sql.demo._warehouse import database_url

pytestmark = pytest.mark.integration

_SCHEMA = [
    "CREATE TABLE airport (code text, city text, name text)",
    # 3 codes, 40 cities: samples for one, the value index for the other
    "INSERT INTO airport SELECT (ARRAY['JFK', 'ORD', 'SFO'])[1 + g % 3], 'City ' || g, "
    "CASE WHEN g = 1 THEN 'Bank of Ohio' WHEN g = 2 THEN 'Acme''s Diner' ELSE 'Name ' || g END "
    "FROM generate_series(1, 40) g",
]


@pytest.fixture
async def fresh(pg_url: str) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_values")
        await admin.execute("CREATE DATABASE tandem_values")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_values"), autocommit=True
    ) as conn:
        for statement in _SCHEMA:
            await conn.execute(statement)
        yield conn


async def test_values_come_from_the_data_without_statistics(fresh) -> None:
    stats = await (
        await fresh.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'airport'")
    ).fetchone()
    assert stats == (0,)  # as restored: nothing analysed yet
    before = (await introspect(fresh, "values")).table("airport")
    await fresh.execute("ANALYZE")
    after = (await introspect(fresh, "values")).table("airport")
    assert before is not None and after is not None
    for table in (before, after):
        code, city, name = table.columns
        assert code.sample_values == ("JFK", "ORD", "SFO") and not code.known_values
        assert not city.sample_values and len(city.known_values) == 40
        assert {"Bank of Ohio", "Acme's Diner"} <= set(name.known_values)
    assert before.columns == after.columns
