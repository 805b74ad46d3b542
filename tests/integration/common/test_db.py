"""Database access on the real embedded Postgres: migrations, pool, error mapping."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from services.common import (
    Database,
    DeadlineExceeded,
    Migration,
    Unavailable,
    apply_migrations,
    deadline_scope,
    map_db_error,
)
from tests.integration.pg_waits import WaitCounter

pytestmark = pytest.mark.integration


def _component() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


async def test_migrations_apply_once_and_enable_pgvector(pg_url):
    comp = _component()
    migrations = [
        Migration(
            comp, 1, "create", f"CREATE TABLE {comp}_items (id int PRIMARY KEY, v vector(3))"
        ),
        Migration(comp, 2, "column", f"ALTER TABLE {comp}_items ADD COLUMN note text"),
    ]
    first = await apply_migrations(pg_url, migrations)
    assert [(m.component, m.version) for m in first if m.component == comp] == [
        (comp, 1),
        (comp, 2),
    ]
    assert await apply_migrations(pg_url, migrations) == []
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = await cur.fetchone()
        assert row is not None and row[0] >= "0.7"
        await conn.execute(f"INSERT INTO {comp}_items VALUES (1, '[1,2,3]', 'n')")


async def test_concurrent_starts_apply_each_migration_exactly_once(pg_url):
    comp = _component()
    # A slow first migration widens the race window the advisory lock must close.
    migrations = [
        Migration(comp, 1, "slow", f"SELECT pg_sleep(0.3); CREATE TABLE {comp}_t (id int)"),
        Migration(comp, 2, "more", f"ALTER TABLE {comp}_t ADD COLUMN x int"),
    ]
    results = await asyncio.gather(*(apply_migrations(pg_url, migrations) for _ in range(4)))
    applied = [m for result in results for m in result if m.component == comp]
    assert sorted(m.version for m in applied) == [1, 2]
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM tandem_schema_migrations WHERE component = %s", (comp,)
        )
        assert await cur.fetchone() == (2,)


async def test_pool_registers_vector_type(pg_url):
    db = Database(pg_url, min_size=1, max_size=2)
    await db.open()
    try:
        async with db.connection() as conn:
            cur = await conn.execute("SELECT '[1,2,3]'::vector")
            row = await cur.fetchone()
        assert row is not None
        assert [float(x) for x in row[0]] == [1.0, 2.0, 3.0]
        assert await db.ping()
    finally:
        await db.close()


async def test_statement_timeout_maps_to_deadline_exceeded(pg_url):
    db = Database(pg_url, min_size=1, max_size=1)
    await db.open()
    try:
        with pytest.raises(DeadlineExceeded):
            async with db.connection() as conn:
                await conn.execute("SET statement_timeout = '50ms'")
                await conn.execute("SELECT pg_sleep(1)")
    finally:
        await db.close()


async def test_waiting_for_a_connection_never_outlives_the_request(pg_url):
    """A pool with no free connection answers UNAVAILABLE inside the request's deadline,
    not after the (longer) pool timeout."""
    db = Database(pg_url, min_size=1, max_size=1, timeout_s=5.0)
    await db.open()
    try:
        async with db.connection():
            loop = asyncio.get_running_loop()
            started = loop.time()
            with deadline_scope(0.5), pytest.raises(Unavailable) as err:
                async with db.connection():
                    pass
            waited = loop.time() - started
        assert err.value.reason == "DATABASE_UNAVAILABLE"
        assert 0.3 <= waited < 0.5
    finally:
        await db.close()


async def test_unreachable_database_maps_to_unavailable(tmp_path):
    url = f"postgresql://postgres@/postgres?host={tmp_path}&connect_timeout=1"
    with pytest.raises(psycopg.OperationalError) as err:
        await psycopg.AsyncConnection.connect(url)
    mapped = map_db_error(err.value)
    assert isinstance(mapped, Unavailable)
    assert mapped.reason == "DATABASE_UNAVAILABLE"
    db = Database(url, min_size=0, max_size=1, timeout_s=0.5)
    await db.pool.open(wait=False)
    try:
        assert not await db.ping()
    finally:
        await db.close()


async def test_autocommit_runs_a_lone_statement_outside_any_transaction(pg_url):
    database = Database(pg_url, min_size=1, max_size=1, vector=False)
    await database.open()
    try:
        async with database.autocommit() as conn:
            cur = await conn.execute("SELECT now() = statement_timestamp()")
            # in a transaction, now() is the transaction's start and differs
            assert await cur.fetchone() == (True,)
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        # the pooled connection (the only one) is back to transactions for the next user
        async with database.connection() as conn:
            assert not conn.autocommit
            await conn.execute("SELECT 1")
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    finally:
        await database.close()


async def test_tenant_transaction_sets_the_tenant_commits_and_rolls_back(pg_url):
    table = f"t{uuid.uuid4().hex[:8]}_rows"
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute(f"CREATE TABLE {table} (v text)")
    database = Database(pg_url, min_size=1, max_size=1, vector=False)
    await database.open()
    try:
        # quoting: the tenant travels as a literal, so a quote cannot end it
        odd = "acme'; DROP TABLE " + table + "; --"
        async with database.tenant_transaction(odd, store="the test store") as conn:
            cur = await conn.execute("SELECT current_setting('tandem.tenant_id')")
            assert await cur.fetchone() == (odd,)
            await conn.execute(f"INSERT INTO {table} VALUES ('kept')")
        with pytest.raises(RuntimeError):
            async with database.tenant_transaction("acme", store="the test store") as conn:
                await conn.execute(f"INSERT INTO {table} VALUES ('dropped')")
                raise RuntimeError("half-way")
        async with await psycopg.AsyncConnection.connect(pg_url) as other:
            cur = await other.execute(f"SELECT v FROM {table}")
            assert await cur.fetchall() == [("kept",)]  # committed, seen from outside
        async with database.connection() as conn:
            # the setting was local to each transaction: nothing is left for the next user
            cur = await conn.execute(
                "SELECT coalesce(current_setting('tandem.tenant_id', true), ''), "
                "now() = statement_timestamp()"
            )
            assert await cur.fetchone() == ("", False)  # and a fresh transaction of its own
    finally:
        await database.close()


async def test_a_tenant_transaction_waits_for_the_database_only_where_a_result_is_read(pg_url):
    table = f"t{uuid.uuid4().hex[:8]}_rows"
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute(f"CREATE TABLE {table} (v text)")
    relay = WaitCounter(pg_url)
    database = Database(await relay.start(), min_size=1, max_size=1, vector=False)
    await database.open()
    try:
        async with database.connection() as conn:  # the connection is made and idle
            await conn.execute("SELECT 1")
        relay.waits = 0
        async with database.tenant_transaction("acme", store="the test store") as conn:
            await conn.execute(f"INSERT INTO {table} VALUES ('one')")
            await conn.execute(f"INSERT INTO {table} VALUES ('two')")
        writes = relay.waits
        relay.waits = 0
        async with database.tenant_transaction("acme", store="the test store") as conn:
            cur = await conn.execute(f"SELECT count(*) FROM {table}")
            assert await cur.fetchone() == (2,)
            await conn.execute(f"INSERT INTO {table} VALUES ('three')")
        read_then_write = relay.waits
    finally:
        await database.close()
        await relay.close()
    # the start, the tenant, both writes and the commit: one wait
    assert writes == 1
    # up to the read, then the rest
    assert read_then_write == 2
