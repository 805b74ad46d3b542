"""Each execution layer alone stops a write: the READ ONLY transaction, the SELECT-only
role, the server cursor, and the timeouts, each with the others switched off and the
gate bypassed. A write that no layer stops really lands, so the tests are not vacuous."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from services.sql import FailureKind, Limits, Safeguards, StatementError, grant_read_only
from services.sql.demo._warehouse import database_url, ensure_reader_role
from services.sql.gate._execute import execute_unvetted

pytestmark = pytest.mark.integration

# A statement the gate passes that runs for minutes: a cross join of two series,
# each within the gate's bound, counted.
SLOW_SQL = "SELECT count(*) FROM generate_series(1, 1000000) AS a, generate_series(1, 1000000) AS b"


NO_LAYERS = Safeguards(read_only_transaction=False, server_timeout=False, client_timeout=False)
ONLY_READ_ONLY = Safeguards(read_only_transaction=True, server_timeout=False, client_timeout=False)
LIMITS = Limits(max_rows=10, statement_timeout_s=5.0)


@pytest.fixture(scope="module")
def ledger(pg_url: str, warehouse) -> dict[str, str]:
    """A scratch database with a table, a function that writes it, and a reader."""

    async def setup() -> dict[str, str]:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute("DROP DATABASE IF EXISTS tandem_layers")
            await admin.execute("CREATE DATABASE tandem_layers")
            await ensure_reader_role(admin, warehouse.reader_role)
        url = database_url(pg_url, "tandem_layers")
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("CREATE TABLE ledger (id int PRIMARY KEY, amount int NOT NULL)")
            await conn.execute("INSERT INTO ledger VALUES (1, 100), (2, 200)")
            await conn.execute(
                "CREATE FUNCTION bump() RETURNS int LANGUAGE sql VOLATILE AS "
                "'UPDATE public.ledger SET amount = amount + 1 RETURNING amount'"
            )
            await grant_read_only(conn, "tandem_layers", warehouse.reader_role, schemas=["public"])
        reader = psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="tandem_layers")
        return {"owner": url, "reader": reader}

    return asyncio.run(setup())


async def _total(url: str) -> int:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        row = await (await conn.execute("SELECT sum(amount) FROM ledger")).fetchone()
        assert row is not None
        return int(row[0])


async def _run(pool, text: str, safeguards: Safeguards, limits: Limits = LIMITS):
    return await execute_unvetted(pool, text, limits, safeguards)


async def test_with_no_layer_the_write_lands(ledger, open_pool):
    pool = await open_pool(ledger["owner"])
    before = await _total(ledger["owner"])
    # The function returns the incremented amount: the UPDATE really ran (and the
    # executor's rollback, which ends every statement, undid it).
    result = await _run(pool, "SELECT public.bump()", NO_LAYERS)
    assert [row.values[0].int_value for row in result.rows] == [101]
    assert await _total(ledger["owner"]) == before


async def test_read_only_transaction_alone_refuses_writes(ledger, open_pool, owner_url):
    pool = await open_pool(ledger["owner"])  # a superuser: no role layer at all
    for text in ("SELECT public.bump()", "SELECT * FROM public.ledger FOR UPDATE"):
        with pytest.raises(StatementError) as err:
            await _run(pool, text, ONLY_READ_ONLY)
        assert (err.value.kind, err.value.sqlstate) == (FailureKind.PERMISSION, "25006")
    warehouse_pool = await open_pool(owner_url)
    with pytest.raises(StatementError) as err:
        await _run(warehouse_pool, "SELECT * FROM public.companies FOR UPDATE", ONLY_READ_ONLY)
    assert err.value.sqlstate == "25006"


async def test_role_alone_refuses_writes(ledger, open_pool, warehouse):
    pool = await open_pool(ledger["reader"])  # read-write transaction, no timeouts
    refused = [
        "SELECT public.bump()",
        "SELECT * FROM public.ledger FOR UPDATE",
        "SELECT lo_create(0)",
        "SELECT pg_advisory_lock(42)",
        "SELECT pg_notify('channel', 'payload')",
        "SELECT set_config('statement_timeout', '0', false)",
    ]
    for text in refused:
        with pytest.raises(StatementError) as err:
            await _run(pool, text, NO_LAYERS)
        assert (err.value.kind, err.value.sqlstate) == (FailureKind.PERMISSION, "42501"), text
    assert await _total(ledger["owner"]) == 300
    warehouse_pool = await open_pool(warehouse.reader_url)
    with pytest.raises(StatementError) as err:
        await _run(warehouse_pool, "SELECT * FROM public.companies FOR UPDATE", NO_LAYERS)
    assert err.value.sqlstate == "42501"


async def test_server_cursor_alone_refuses_non_queries_and_stacking(ledger, open_pool):
    pool = await open_pool(ledger["owner"])  # superuser, read-write: only DECLARE stands
    for text in (
        "UPDATE public.ledger SET amount = 0",
        "SELECT 1; UPDATE public.ledger SET amount = 0",
        "WITH u AS (UPDATE public.ledger SET amount = 0 RETURNING id) SELECT * FROM u",
        "SELECT * INTO public.stolen FROM public.ledger",
    ):
        with pytest.raises(StatementError) as err:
            await _run(pool, text, NO_LAYERS)
        assert err.value.kind in (FailureKind.DATA, FailureKind.OTHER), text
    assert await _total(ledger["owner"]) == 300


async def test_statement_timeout_cuts_a_sleep_that_slipped_past(owner_url, open_pool):
    pool = await open_pool(owner_url)
    started = time.perf_counter()
    with pytest.raises(StatementError) as err:
        await _run(
            pool,
            "SELECT pg_sleep(60)",
            Safeguards(read_only_transaction=False, server_timeout=True, client_timeout=False),
            Limits(statement_timeout_s=0.3),
        )
    assert (err.value.kind, err.value.sqlstate) == (FailureKind.TIMEOUT, "57014")
    assert time.perf_counter() - started < 5


async def test_client_timeout_cuts_it_when_the_server_timeout_is_gone(owner_url, open_pool):
    pool = await open_pool(owner_url)
    started = time.perf_counter()
    with pytest.raises(StatementError) as err:
        await _run(
            pool,
            "SELECT pg_sleep(60)",
            Safeguards(read_only_transaction=False, server_timeout=False, client_timeout=True),
            Limits(statement_timeout_s=0.3, client_grace_s=0.2),
        )
    assert err.value.kind is FailureKind.TIMEOUT
    assert time.perf_counter() - started < 5
    # the cancelled query left the pool healthy
    result = await _run(pool, "SELECT 1", NO_LAYERS)
    assert len(result.rows) == 1


async def test_a_slow_gated_query_is_cut_as_the_reader(reader_target):
    from services.sql import SqlGate, StatementRunner

    verdict = SqlGate().check(
        SLOW_SQL,
        await reader_target.get_catalog(),
    )
    assert verdict.valid
    started = time.perf_counter()
    with pytest.raises(StatementError) as err:
        await StatementRunner().run(
            reader_target.pool, verdict, Limits(statement_timeout_s=0.3), database="warehouse"
        )
    assert err.value.kind is FailureKind.TIMEOUT
    assert time.perf_counter() - started < 5
