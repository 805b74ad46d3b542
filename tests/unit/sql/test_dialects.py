"""The gated Postgres text written in SQLite's and DuckDB's dialects (MySQL's: on a real
server, tests/integration/sql/engines): run on real
in-memory databases of each engine, it gives what Postgres gives (dates and times,
ILIKE, casts, NULL ordering, LIMIT/OFFSET, output column names)."""

from __future__ import annotations

import sqlite3
from typing import Any

import duckdb
import pytest

from services.sql.gate import Dialect, to_dialect

ROWS = [
    (1, "Alpha", "2024-03-15", "2024-03-15 13:45:00", 10.5),
    (2, "beta", "2024-08-02", "2024-08-02 08:00:00", None),
    (3, "Gamma", "2023-12-31", "2023-12-31 23:59:59", 3.25),
]


TYPES = {"id": "integer", "name": "text", "d": "date", "ts": "timestamp without time zone"}


def _run(dialect: Dialect, postgres: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    text = to_dialect(postgres, dialect, TYPES.get)
    if dialect is Dialect.SQLITE:
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE t (id INTEGER, name TEXT, d DATE, ts TIMESTAMP, x REAL)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
        cursor = conn.execute(text)
        rows = cursor.fetchall()
        return [c[0] for c in cursor.description], rows
    dconn = duckdb.connect(":memory:")
    dconn.execute("CREATE TABLE t (id INTEGER, name VARCHAR, d DATE, ts TIMESTAMP, x DOUBLE)")
    dconn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [list(r) for r in ROWS])
    result = dconn.execute(text)
    rows = result.fetchall()
    return [str(c[0]) for c in result.description or ()], rows


def _text(value: Any) -> str:
    """A value as Postgres prints it in UTC, without the offset a truncated date carries."""
    return str(value).replace("T", " ").removesuffix("+00:00")


@pytest.mark.parametrize("dialect", [Dialect.SQLITE, Dialect.DUCKDB])
def test_ilike_limit_offset_and_null_ordering_read_as_on_postgres(dialect: Dialect) -> None:
    _, rows = _run(
        dialect, "SELECT name FROM t WHERE name ILIKE '%A%' ORDER BY id LIMIT 2 OFFSET 1"
    )
    assert [r[0] for r in rows] == ["beta", "Gamma"]
    # Postgres puts NULLs last ascending and first descending
    _, rows = _run(dialect, "SELECT id FROM t ORDER BY x")
    assert [r[0] for r in rows] == [3, 1, 2]
    _, rows = _run(dialect, "SELECT id FROM t ORDER BY x DESC")
    assert [r[0] for r in rows] == [2, 1, 3]
    _, rows = _run(dialect, "SELECT id FROM t ORDER BY x DESC NULLS LAST")
    assert [r[0] for r in rows] == [1, 3, 2]


@pytest.mark.parametrize("dialect", [Dialect.SQLITE, Dialect.DUCKDB])
def test_date_trunc_extract_and_intervals_give_postgres_values(dialect: Dialect) -> None:
    names, rows = _run(
        dialect,
        "SELECT date_trunc('month', ts), date_trunc('year', d) AS y, "
        "date_trunc('quarter', d) AS q, date_trunc('week', ts) AS w, "
        "date_trunc('day', ts) AS dd, EXTRACT(YEAR FROM d) AS yr, "
        "EXTRACT(MONTH FROM ts) AS mo, EXTRACT(QUARTER FROM d) AS qu, "
        "EXTRACT(DOW FROM d) AS dow FROM t WHERE id = 1",
    )
    assert names[0] == "date_trunc"  # named as Postgres names it
    got = [_text(v) for v in rows[0]]
    assert got[:5] == [
        "2024-03-01 00:00:00",
        "2024-01-01 00:00:00",
        "2024-01-01 00:00:00",
        "2024-03-11 00:00:00",  # the Monday of its week, as in Postgres
        "2024-03-15 00:00:00",
    ]
    assert [int(v) for v in rows[0][5:]] == [2024, 3, 1, 5]
    _, rows = _run(
        dialect,
        "SELECT id FROM t WHERE d >= CAST('2024-08-01' AS DATE) - INTERVAL '30 days' "
        "AND d < CAST('2024-03-01' AS DATE) + INTERVAL '6 months' ORDER BY id",
    )
    assert [r[0] for r in rows] == [2]


@pytest.mark.parametrize("dialect", [Dialect.SQLITE, Dialect.DUCKDB])
def test_casts_aggregates_and_output_names(dialect: Dialect) -> None:
    names, rows = _run(
        dialect,
        "SELECT count(*), sum(x), round(avg(x)::numeric, 2) AS mean, CAST(max(id) AS text) FROM t",
    )
    assert names == ["count", "sum", "mean", "max"]
    assert rows[0][0] == 3 and float(rows[0][1]) == 13.75
    assert float(rows[0][2]) == 6.88 and str(rows[0][3]) == "3"


@pytest.mark.parametrize("dialect", [Dialect.SQLITE, Dialect.DUCKDB])
def test_a_date_columns_arithmetic_and_truncation_stay_postgress(dialect: Dialect) -> None:
    _, rows = _run(
        dialect,
        "SELECT d - 7 AS before, d + 20 AS after, date_trunc('month', d) AS m FROM t WHERE id = 1",
    )
    before, after, month = (_text(v) for v in rows[0])
    assert (before, after) == ("2024-03-08", "2024-04-04")
    # a timestamp (with the session's UTC offset on SQLite), as Postgres's date_trunc gives
    assert month.startswith("2024-03-01 00:00:00")
