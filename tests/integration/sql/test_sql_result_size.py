"""The result-size cap is applied by Postgres before a value is sent: a huge value (computed
or stored compressed) never crosses the wire, the rows before it come back, and the
wrapper that measures changes nothing else (names, types, order, values)."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from services.common import InvalidArgument
from services.sql import Limits, Safeguards, SqlGate, TargetRegistry
from services.sql.demo._warehouse import database_url
from services.sql.gate._execute import (
    SERVER_BUDGET_FACTOR,
    OutputColumn,
    execute_unvetted,
    measured_statement,
)
from services.sql.results._values import column_kind, encode
from tandem.v1 import sql_service_pb2 as pb
from tests.integration.sql.conftest import make_engine
from tests.unit.sql.corpus import LEGITIMATE

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
LIMITS = Limits(max_rows=50, statement_timeout_s=20.0, max_result_bytes=MIB)
BUDGET = SERVER_BUDGET_FACTOR * LIMITS.max_result_bytes

# About 50 MB each, compressible and not, of the kinds of value a query can compute.
HUGE = {
    "repeat": "repeat('x', 50000000)",
    "md5s": "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 1500000) AS g)",
    "array": "(SELECT array_agg(md5(g::text)) FROM generate_series(1, 1500000) AS g)",
    "jsonb": "(SELECT jsonb_agg(md5(g::text)) FROM generate_series(1, 1500000) AS g)",
    "bytea": "decode(repeat('ab', 25000000), 'hex')",
}


@pytest.fixture
def engine(reader_target):
    return make_engine(TargetRegistry([reader_target], "warehouse"), max_result_bytes=MIB)


async def _measured_fetch(pool: Any, text: str, count: int) -> tuple[list[Any], int]:
    """One fetch of the measured statement: its rows, and the bytes of values received."""
    async with pool.connection() as conn, conn.transaction():
        cursor = await conn.execute(f"SELECT * FROM (\n{text}\n) AS s LIMIT 0", binary=True)
        outputs = [OutputColumn(d.name, d.type_code) for d in cursor.description or []]
        async with conn.cursor(name="measured") as server:
            await server.execute(measured_statement(text, outputs, BUDGET))
            rows = await server.fetchmany(count)
            received = server.pgresult
            assert received is not None
            sent = sum(
                len(received.get_value(r, c) or b"")
                for r in range(received.ntuples)
                for c in range(received.nfields)
            )
    return rows, sent


async def test_a_huge_value_mid_result_returns_the_rows_before_it(engine):
    executed = await engine.execute(
        "acme",
        "",
        "SELECT company_id AS id, CASE WHEN rank = 4 THEN repeat('x', 600000) "
        'ELSE name END AS "Company Name", company_id AS id, NULL AS nothing, '
        "CASE WHEN rank = 4 THEN repeat('y', 600000) END AS more "
        "FROM (SELECT company_id, name, row_number() OVER (ORDER BY company_id DESC) AS rank "
        "FROM companies) AS c ORDER BY rank",
        max_rows=10,
    )
    result = executed.result
    assert result.truncated and result.truncation_reason == pb.TRUNCATION_REASON_SIZE_CAP
    assert [(c.name, c.data_type) for c in result.columns] == [
        ("id", "integer"), ("Company Name", "text"), ("id", "integer"), ("nothing", "text"),
        ("more", "text"),
    ]  # fmt: skip
    ids = [row.values[0].int_value for row in result.rows]
    assert len(ids) == 3 and ids == sorted(ids, reverse=True)
    assert all(row.values[1].string_value for row in result.rows)


@pytest.mark.parametrize("value", list(HUGE.values()), ids=list(HUGE))
async def test_a_huge_value_is_null_on_the_wire(owner_url, open_pool, value: str):
    """What psycopg received: the rows before the huge one in full, then NULL."""
    text = (
        f"SELECT g AS id, CASE WHEN g = 3 THEN {value} END AS blob "
        "FROM generate_series(1, 5) AS g ORDER BY g"
    )
    pool = await open_pool(owner_url)
    rows, sent = await _measured_fetch(pool, text, 10)
    assert [row[-1] for row in rows] == [False, False, True, True, True]
    assert [row[0] for row in rows[:2]] == [1, 2] and all(v is None for v in rows[2][:2])
    assert sent < 1024


@pytest.mark.parametrize("value", list(HUGE.values()), ids=list(HUGE))
async def test_a_single_huge_value_comes_back_as_no_rows(owner_url, open_pool, value: str):
    pool = await open_pool(owner_url)
    result = await execute_unvetted(pool, f"SELECT {value} AS blob", LIMITS, Safeguards())
    assert result.truncated and result.truncation_reason == pb.TRUNCATION_REASON_SIZE_CAP
    assert not result.rows and [c.name for c in result.columns] == ["blob"]


@pytest.fixture(scope="module")
def stored_blobs(pg_url: str) -> str:
    """A scratch database holding values of 30 MB that Postgres stored compressed to a
    few hundred kB: their stored size is under the cap, their text far over it."""

    async def setup() -> str:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute("DROP DATABASE IF EXISTS tandem_sizes")
            await admin.execute("CREATE DATABASE tandem_sizes")
        url = database_url(pg_url, "tandem_sizes")
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(
                "CREATE TABLE blobs (id int PRIMARY KEY, body text, doc jsonb, tags text[], "
                "bin bytea)"
            )
            await conn.execute(
                "INSERT INTO blobs VALUES (1, 'a', '{}', '{a}', '\\x00'), "
                "(2, repeat('x', 30000000), to_jsonb(repeat('ab', 15000000)), "
                "ARRAY[repeat('y', 30000000)], decode(repeat('00', 30000000), 'hex')), "
                "(3, 'c', '[]', '{c}', '\\x01')"
            )
        return url

    return asyncio.run(setup())


@pytest.mark.parametrize("column", ["body", "doc", "tags", "bin"])
async def test_a_stored_compressed_value_is_measured_as_sent(stored_blobs, open_pool, column):
    pool = await open_pool(stored_blobs)
    async with pool.connection() as conn:
        cursor = await conn.execute(
            psycopg.sql.SQL(
                "SELECT pg_column_compression({c}), pg_column_size({c}) "
                "FROM public.blobs WHERE id = 2"
            ).format(c=psycopg.sql.Identifier(column))
        )
        compression, stored = await cursor.fetchone() or (None, 0)
    assert compression is not None and stored < LIMITS.max_result_bytes  # not vacuous
    text = f"SELECT id, {column} FROM public.blobs ORDER BY id"
    rows, sent = await _measured_fetch(pool, text, 10)
    assert [row[-1] for row in rows] == [False, True, True] and sent < 1024
    result = await execute_unvetted(pool, text, LIMITS, Safeguards())
    assert result.truncated and result.truncation_reason == pb.TRUNCATION_REASON_SIZE_CAP
    assert [row.values[0].int_value for row in result.rows] == [1]


async def test_a_fetch_brings_at_most_the_budget(owner_url, open_pool):
    """Values of about 1 MB each: a fetch of 200 rows would bring 200 MB; the running
    total stops them at the budget."""
    text = "SELECT g, repeat(md5(g::text), 30000) AS filler FROM generate_series(1, 1000) AS g"
    pool = await open_pool(owner_url)
    rows, sent = await _measured_fetch(pool, text, 200)
    kept = [row for row in rows if not row[-1]]
    assert len(rows) == 200 and 0 < len(kept) < 200
    assert sent <= BUDGET
    result_set = await execute_unvetted(pool, text, Limits(max_rows=1000), Safeguards())
    assert result_set.truncation_reason == pb.TRUNCATION_REASON_SIZE_CAP
    assert len(result_set.rows) == 1


async def _plain(conn: psycopg.AsyncConnection[Any], text: str) -> tuple[list[str], list[Any]]:
    """The statement alone, as the executor ran it before it measured anything."""
    cursor = conn.cursor(name="plain")
    await cursor.execute(text)
    description = cursor.description or []
    types = {}
    for d in description:
        row = await (
            await conn.execute("SELECT format_type(%s::oid, NULL)", (d.type_code,))
        ).fetchone()
        types[d.type_code] = str(row[0]) if row else ""
    kinds = [column_kind(types[d.type_code]) for d in description]
    rows = [
        pb.SqlRow(values=[encode(v, k) for v, k in zip(record, kinds, strict=True)])
        for record in await cursor.fetchmany(1001)
    ]
    await cursor.close()
    return [d.name for d in description], rows


ORDERED = [
    "SELECT name, name AS name, company_id, 1 FROM companies ORDER BY company_id DESC",
    'SELECT count(*), count(*) AS "count", max(name) FROM companies',
    "SELECT DISTINCT ON (region_id) region_id, name FROM companies "
    "ORDER BY region_id, company_id DESC",
    "SELECT company_id, row_number() OVER (ORDER BY name DESC) AS rn FROM companies "
    "ORDER BY rn LIMIT 25",
    *(sql for sql in LEGITIMATE if "ORDER BY" in sql.upper()),
]


async def test_the_measured_statement_returns_what_the_statement_alone_returns(
    engine, reader_target
):
    """Names (duplicates and all), order and values, row for row; ``truncated`` aside."""
    catalog = await reader_target.get_catalog()
    compared = 0
    for sql in ORDERED:
        verdict = SqlGate().check(sql, catalog)
        if not verdict.valid:
            continue
        try:
            executed = await engine.execute("acme", "", sql, max_rows=1000)
        except InvalidArgument:  # columns the corpus invents, say
            continue
        async with reader_target.pool.connection() as conn, conn.transaction():
            names, rows = await _plain(conn, verdict.normalized_sql)
        result = executed.result
        assert [c.name for c in result.columns] == names, sql
        assert list(result.rows) == rows[: len(result.rows)], sql
        assert result.truncated or len(result.rows) == len(rows), sql
        compared += 1
    assert compared >= 10


async def test_fixed_size_outputs_come_in_the_order_the_measuring_wrapper_gives(pg_url, open_pool):
    """Outputs that are all small fixed-size values (counts, ids) skip the measuring
    levels (nothing to measure); the statement is still planned as a cursor's, so rows
    come in the order the full wrapper gives. The join below has no ORDER BY and is
    planned differently for a cursor (fast start) than for a plain SELECT: a wrapper that
    lost the cursor's planning would return another order."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute(
            "DROP TABLE IF EXISTS public.tandem_fixed_b, public.tandem_fixed_a;"
            "CREATE TABLE public.tandem_fixed_a (id int PRIMARY KEY, k int);"
            "CREATE TABLE public.tandem_fixed_b (id int PRIMARY KEY, a_id int, v int);"
            "CREATE INDEX ON public.tandem_fixed_b (a_id);"
            "INSERT INTO public.tandem_fixed_a SELECT g, g % 97 FROM generate_series(1, 20000) g;"
            "INSERT INTO public.tandem_fixed_b "
            "SELECT g, (g * 7919) % 20000 + 1, g % 13 FROM generate_series(1, 40000) g;"
            "ANALYZE public.tandem_fixed_a; ANALYZE public.tandem_fixed_b"
        )
        text = (
            "SELECT a.id, b.id AS b_id, a.k + b.v AS total FROM public.tandem_fixed_a AS a "
            "JOIN public.tandem_fixed_b AS b ON b.a_id = a.id WHERE a.k < 90"
        )
        outputs = [OutputColumn("id", 23), OutputColumn("b_id", 23), OutputColumn("total", 23)]
        try:
            async with admin.transaction():
                await admin.execute(
                    "DECLARE full_wrapper NO SCROLL CURSOR FOR\n"
                    + measured_statement(text, outputs, BUDGET)
                )
                expected = [
                    r[:-1]
                    for r in await (await admin.execute("FETCH 30 FROM full_wrapper")).fetchall()
                ]
            plain = (await (await admin.execute(text)).fetchall())[:30]
            pool = await open_pool(pg_url)
            result = await execute_unvetted(
                pool, text, Limits(max_rows=30, statement_timeout_s=10.0), Safeguards()
            )
        finally:
            await admin.execute("DROP TABLE IF EXISTS public.tandem_fixed_b, public.tandem_fixed_a")
    got = [tuple(v.int_value for v in row.values) for row in result.rows]
    assert plain != expected  # the cursor's plan is not the plain statement's
    assert got == expected and result.truncated
