"""Numeric columns reach the catalog with their extent (least and greatest value), read
from the data: what decides whether "3 hours" may be meant as minutes the column counts
(``verify._units``). Text columns get none."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from services.sql import introspect
from services.sql.catalog import ROW_COUNT_CAP
from services.sql.demo._warehouse import database_url

pytestmark = pytest.mark.integration

_SCHEMA = [
    "CREATE TABLE flight (id int, dep_delay int, air_time real, origin text, note int)",
    "INSERT INTO flight SELECT g, g * 7 - 43, g * 1.5, 'JFK', NULL FROM generate_series(1, 100) g",
]


@pytest.fixture
async def flights(pg_url: str) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_extents")
        await admin.execute("CREATE DATABASE tandem_extents")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_extents"), autocommit=True
    ) as conn:
        for statement in _SCHEMA:
            await conn.execute(statement)
        yield conn


async def test_numeric_columns_carry_their_extent(flights) -> None:
    table = (await introspect(flights, "extents")).table("flight")
    assert table is not None
    extents = {c.name: c.extent for c in table.columns}
    assert extents == {
        "id": (1.0, 100.0),
        "dep_delay": (-36.0, 657.0),
        "air_time": (1.5, 150.0),
        "origin": None,  # text: no extent
        "note": None,  # no value stored
    }


async def test_a_large_table_takes_its_extent_from_the_planners_sample(flights) -> None:
    """A table of ROW_COUNT_CAP rows or more is not scanned for its extents once per load
    (a full scan of every numeric column of a warehouse's largest tables): the extent is
    the analysed sample's. A value stored after ANALYZE is outside it, which a scan would
    have read."""
    await flights.execute(
        "CREATE TABLE leg (id int, delay int)",
    )
    await flights.execute(
        "INSERT INTO leg SELECT g, g %% 500 FROM generate_series(1, %s) g",
        (ROW_COUNT_CAP + 1000,),
    )
    await flights.execute("ANALYZE leg")
    await flights.execute("INSERT INTO leg VALUES (0, 999999)")
    table = (await introspect(flights, "extents")).table("leg")
    assert table is not None
    extents = {c.name: c.extent for c in table.columns}
    low, high = extents["delay"] or (None, None)
    assert low is not None and high is not None
    assert low >= 0 and high <= 499  # the sample's bounds, not the late outlier


async def test_a_large_tables_year_span_is_the_planners_sample(flights) -> None:
    """A year column of a table of ROW_COUNT_CAP rows or more takes its span from the
    analysed sample, as the table's extents do, not from a min()/max() scan per load: a
    year stored after ANALYZE stays outside it. A table never analysed (no sample) is
    still read from the data."""
    await flights.execute("CREATE TABLE season (id int, season_year int)")
    await flights.execute(
        "INSERT INTO season SELECT g, 2000 + g %% 20 FROM generate_series(1, %s) g",
        (ROW_COUNT_CAP + 1000,),
    )
    await flights.execute("ANALYZE season")
    await flights.execute("INSERT INTO season VALUES (0, 2150)")
    await flights.execute("CREATE TABLE unread (id int, season_year int)")
    await flights.execute(
        "INSERT INTO unread SELECT g, 2000 + g %% 20 FROM generate_series(1, %s) g",
        (ROW_COUNT_CAP + 1000,),
    )
    catalog = await introspect(flights, "extents")
    season, unread = catalog.table("season"), catalog.table("unread")
    assert season is not None and unread is not None
    spans = {c.name: c.span for c in season.columns}
    assert spans == {"id": None, "season_year": (2000, 2019)}  # not the late 2150
    assert {c.name: c.span for c in unread.columns}["season_year"] == (2000, 2019)
