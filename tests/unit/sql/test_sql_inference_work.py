"""Keys and joins inferred for a keyless database do not depend on how busy the server was
while the catalog loaded (ISSUE-45, s66): inference was bounded by 20 s of wall clock, so
on a slow server the tables and candidates read last kept no key, their joins only the
names' word for them, and a reference no name points at was dropped. The bound is now
counted work (reads, rows scanned); seconds are only a guard whose stop the catalog says.

The database is a real SQLite file read through the file warehouse's catalog connection;
the server's slowness is its clock, moved on each read (no sleeps, the same every run)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services.sql.catalog import Catalog, _inference_work, describe, infer_joins
from services.sql.gate import Dialect
from services.sql.targets._warehouses import CatalogConnection, EngineWarehouse


def _shop(path: Path) -> None:
    """Keyless: ``orders.customer_id`` names ``customers``; ``orders.item_code`` names no
    table, and only the data shows it holds ``items.sku`` (a text code)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE customers (id INTEGER, name TEXT);
        CREATE TABLE items (sku TEXT, title TEXT);
        CREATE TABLE orders (id INTEGER, customer_id INTEGER, item_code TEXT, qty INTEGER);
        """
    )
    conn.executemany("INSERT INTO customers VALUES (?, ?)", [(i, f"c{i}") for i in range(1, 41)])
    conn.executemany(
        "INSERT INTO items VALUES (?, ?)", [(f"SKU-{i:03}", f"item {i}") for i in range(30)]
    )
    conn.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?)",
        [(i, 1 + i % 40, f"SKU-{i % 30:03}", i % 7) for i in range(1, 201)],
    )
    conn.commit()
    conn.close()


class _Server:
    """The warehouse's catalog connection on a server whose every read takes
    ``per_read`` seconds of the clock the load is timed by."""

    def __init__(self, warehouse: EngineWarehouse, per_read: float) -> None:
        self._conn = CatalogConnection(warehouse)
        self.per_read = per_read
        self.now = 0.0
        self.reads = 0

    def clock(self) -> float:
        return self.now

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with self._conn.transaction():
            yield

    async def execute(self, statement: Any, params: Any = ()) -> Any:
        text = statement if isinstance(statement, str) else statement.as_string(None)
        if not text.startswith("SET"):
            self.now += self.per_read
            self.reads += 1
        return await self._conn.execute(statement, params)


@pytest.fixture
def warehouse(tmp_path: Path) -> Iterator[EngineWarehouse]:
    path = tmp_path / "shop.sqlite"
    _shop(path)
    found = EngineWarehouse("shop", Dialect.SQLITE, f"sqlite:///{path}")
    yield found
    found.engine.close()


async def _inferred(warehouse: EngineWarehouse, per_read: float) -> tuple[Catalog, _Server]:
    structure = warehouse.engine.structure("shop", ())
    server = _Server(warehouse, per_read)
    found = await infer_joins(server, structure, clock=server.clock)  # type: ignore[arg-type]
    return found, server


async def test_a_slow_server_infers_the_keys_and_joins_an_idle_one_does(
    warehouse: EngineWarehouse,
) -> None:
    """Five seconds a read (a busy machine): the 20 s budget was spent after four reads
    (the three keys and ``customer_id``), and the join of ``item_code``, which only its
    values confirm, was dropped. The same keys and joins as on an idle server now."""
    idle, _ = await _inferred(warehouse, per_read=0.0)
    slow, server = await _inferred(warehouse, per_read=5.0)
    lines = describe(idle)
    assert "key orders(id): inferred, id is never null and never repeats in 200 rows" in lines
    assert any(
        line.startswith("join main.orders.customer_id -> main.customers.id") and "40 of 40" in line
        for line in lines
    ), lines
    assert any(line.startswith("join main.orders.item_code -> main.items.sku") for line in lines), (
        lines
    )
    assert describe(slow) == lines
    assert server.now > 20.0  # past the old budget of seconds
    assert slow.incomplete == ""


async def test_the_work_bound_gives_the_same_catalog_on_any_server(
    warehouse: EngineWarehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for four reads only, the catalog is smaller, and the same whatever the
    server's speed: the keys of the tables read first, the rest as their names say. A
    bound the data sets is no fault: the catalog is not marked incomplete."""
    monkeypatch.setattr(_inference_work, "INFERENCE_READS_MAX", 4)
    idle, first = await _inferred(warehouse, per_read=0.0)
    slow, _ = await _inferred(warehouse, per_read=50.0)
    assert first.reads == 4
    assert describe(slow) == describe(idle)
    assert not any(line.startswith("join main.orders.item_code") for line in describe(idle))
    assert idle.incomplete == slow.incomplete == ""


async def test_a_server_past_the_guard_loads_a_catalog_that_says_so(
    warehouse: EngineWarehouse, caplog: pytest.LogCaptureFixture
) -> None:
    """A hundred seconds a read: the guard stops inference after three reads, and the
    catalog says its keys and joins are incomplete (``sql-check`` prints it, the log
    warns with the counts) instead of holding fewer of them silently."""
    with caplog.at_level(logging.INFO, logger="tandem.sql.joins"):
        slow, server = await _inferred(warehouse, per_read=100.0)
    assert server.reads == 3
    assert slow.incomplete.startswith("key and join inference incomplete: 0 reads timed out, ")
    assert slow.incomplete in describe(slow)
    warned = [r for r in caplog.records if r.getMessage() == "join inference incomplete"]
    assert len(warned) == 1
    assert warned[0].levelno == logging.WARNING


def _areas(path: Path, *, zones: bool = True) -> None:
    """``sites.area_code`` names no table; its codes are values of two keys alike
    (``regions.region_code``, ``zones.zone_code``): ambiguity, no evidence of either.
    Without ``zones`` they are the values of one key only."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE regions (region_code TEXT, region_name TEXT);
        CREATE TABLE sites (id INTEGER, area_code TEXT);
        """
    )
    codes = [f"R{i}" for i in range(1, 10)]
    conn.executemany("INSERT INTO regions VALUES (?, ?)", [(c, f"region {c}") for c in codes])
    if zones:
        conn.execute("CREATE TABLE zones (zone_code TEXT, zone_name TEXT)")
        conn.executemany("INSERT INTO zones VALUES (?, ?)", [(c, f"zone {c}") for c in codes])
    conn.executemany("INSERT INTO sites VALUES (?, ?)", [(i, codes[i % 9]) for i in range(1, 50)])
    conn.commit()
    conn.close()


async def test_a_key_left_unread_by_the_work_bound_makes_no_only_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work left covers the read against ``regions`` and not the one against
    ``zones``: the one key found holding the codes is not known to be the only one, so no
    join is inferred — as with every key read, where both hold them."""
    path = tmp_path / "areas.sqlite"
    _areas(path)
    warehouse = EngineWarehouse("areas", Dialect.SQLITE, f"sqlite:///{path}")
    try:
        structure = warehouse.engine.structure("areas", ())
        every = await infer_joins(_Server(warehouse, 0.0), structure)  # type: ignore[arg-type]
        assert not any(line.startswith("join ") for line in describe(every))
        monkeypatch.setattr(_inference_work, "INFERENCE_READS_MAX", 4)  # 3 keys, 1 key tried
        server = _Server(warehouse, 0.0)
        bounded = await infer_joins(server, structure)  # type: ignore[arg-type]
        assert server.reads == 4
        assert not any(line.startswith("join ") for line in describe(bounded))
    finally:
        warehouse.engine.close()


async def test_a_file_warehouse_finds_the_only_key_holding_a_column(tmp_path: Path) -> None:
    """Every value of ``area_code`` is read (no ``LIMIT``: SQLite rejects ``LIMIT NULL``,
    which left every such read failed and no join found on a file warehouse)."""
    path = tmp_path / "areas.sqlite"
    _areas(path, zones=False)
    warehouse = EngineWarehouse("areas", Dialect.SQLITE, f"sqlite:///{path}")
    try:
        structure = warehouse.engine.structure("areas", ())
        found = await infer_joins(_Server(warehouse, 0.0), structure)  # type: ignore[arg-type]
    finally:
        warehouse.engine.close()
    assert (
        "join main.sites.area_code -> main.regions.region_code (inferred: the only key "
        "holding them; 9 of 9 distinct values found in main.regions)"
    ) in describe(found)


class _Cancelling(_Server):
    """Cancels every read of ``orders`` as a statement timeout does."""

    async def execute(self, statement: Any, params: Any = ()) -> Any:
        text = statement if isinstance(statement, str) else statement.as_string(None)
        if '"orders"' in text:
            raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
        return await super().execute(statement, params)


async def test_a_read_stopped_by_its_timeout_marks_the_catalog_incomplete(
    warehouse: EngineWarehouse,
) -> None:
    """A statement timeout is a guard of seconds too: the reads it stops are counted and
    the catalog says its keys and joins are incomplete, not silently fewer."""
    server = _Cancelling(warehouse, 0.0)
    structure = warehouse.engine.structure("shop", ())
    found = await infer_joins(server, structure)  # type: ignore[arg-type]
    assert "key orders(id)" not in "\n".join(describe(found))
    assert found.incomplete.startswith("key and join inference incomplete: 4 reads timed out")
