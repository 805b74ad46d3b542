"""``pipelined``: a transaction's statements sent together and read in one wait behave as
psycopg's pipeline did on the real server: rows in order, a failed statement's own error
once everything is read (the connection then usable after a rollback), and a call
cancelled midway never leaves a connection in pipeline mode for someone else."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from services.sql.gate._pipelined import pipelined
from services.sql.targets._targets import _configure

pytestmark = pytest.mark.integration

_CURSOR = b"DECLARE c NO SCROLL CURSOR FOR "


async def test_rows_come_in_order_with_their_types(pg_url):
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        fetched = await pipelined(
            conn,
            [b"BEGIN READ ONLY", b"SET LOCAL statement_timeout = 2000",
             _CURSOR + b"SELECT g, 'x' || g AS t FROM generate_series(1, 5) AS g",
             b"FETCH FORWARD 3 FROM c", b"ROLLBACK"],
            3,
        )  # fmt: skip
        assert fetched.rows == [(1, "x1"), (2, "x2"), (3, "x3")]
        assert fetched.type_oids == [23, 25]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


async def test_a_failed_statement_raises_its_own_error_and_the_connection_recovers(pg_url):
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await pipelined(
                conn,
                [b"BEGIN READ ONLY", _CURSOR + b"SELECT 1 / (g - 2) FROM generate_series(1, 3) g",
                 b"FETCH FORWARD 3 FROM c", b"ROLLBACK"],
                2,
            )  # fmt: skip
        # the failed transaction is the caller's to end, as after psycopg's pipeline
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        await conn.execute("ROLLBACK")
        cursor = await conn.execute("SELECT 42")
        assert await cursor.fetchone() == (42,)


async def test_a_read_only_transaction_refuses_a_write(pg_url):
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            await pipelined(
                conn, [b"BEGIN READ ONLY", b"CREATE TABLE pipelined_never (x int)", b"ROLLBACK"], 1
            )
        await conn.execute("ROLLBACK")


async def test_a_cancelled_call_closes_its_connection(pg_url):
    conn = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    try:
        task = asyncio.create_task(
            pipelined(
                conn,
                [
                    b"BEGIN READ ONLY",
                    _CURSOR + b"SELECT pg_sleep(5)",
                    b"FETCH FORWARD 1 FROM c",
                    b"ROLLBACK",
                ],
                2,
            )
        )
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert conn.closed
    finally:
        await conn.close()


async def _ours(conn: psycopg.AsyncConnection) -> list[str]:
    cursor = await conn.execute(
        "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'tandem\\_%' ORDER BY 1"
    )
    return [row[0] for row in await cursor.fetchall()]


async def test_a_repeated_statement_is_prepared_once_on_its_connection(pg_url):
    """Postgres parses and analyses a preparable text once per connection: its second run
    executes the statement prepared by the first, with the same rows."""
    statements = [b"BEGIN READ ONLY", _CURSOR + b"SELECT g FROM generate_series(1, 3) g",
                  b"FETCH FORWARD 3 FROM c", b"ROLLBACK"]  # fmt: skip
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        first = await pipelined(conn, statements, 2, preparable=[True] * 4)
        held = await _ours(conn)
        second = await pipelined(conn, statements, 2, preparable=[True] * 4)
        assert await _ours(conn) == held == sorted(s.decode() for s in statements)
        assert first.rows == second.rows == [(1,), (2,), (3,)]


async def test_prepared_statements_per_connection_are_bounded(pg_url, monkeypatch):
    monkeypatch.setattr("services.sql.gate._prepared.PREPARED_MAX", 2)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        for n in range(4):
            fetched = await pipelined(conn, [f"SELECT {n}".encode()], 0, preparable=[True])
            assert fetched.rows == [(n,)]
        assert await _ours(conn) == ["SELECT 2", "SELECT 3"]


async def test_a_statement_that_fails_to_prepare_is_not_held(pg_url):
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.UndefinedTable):
            await pipelined(conn, [b"SELECT * FROM no_such_table"], 0, preparable=[True])
        await conn.execute("CREATE TEMP TABLE no_such_table (x int)")
        await conn.execute("INSERT INTO no_such_table VALUES (7)")
        fetched = await pipelined(conn, [b"SELECT * FROM no_such_table"], 0, preparable=[True])
        assert fetched.rows == [(7,)]


async def test_a_rollback_through_psycopg_leaves_the_prepared_answers_in_place(pg_url):
    """psycopg sends DEALLOCATE ALL on a ROLLBACK it sees while it holds prepared
    statements of its own: a warehouse connection as the pool configures it holds none,
    so the answers' prepared statements survive a failed statement's rollback."""
    statements = [b"BEGIN READ ONLY", _CURSOR + b"SELECT 7", b"FETCH FORWARD 1 FROM c", b"ROLLBACK"]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await _configure(conn)
        for _ in range(6):  # often enough for psycopg to prepare it, were it to
            await conn.execute("SELECT 1 WHERE 1 = %s", (1,))
        first = await pipelined(conn, statements, 2, preparable=[True] * 4)
        await conn.execute("ROLLBACK")  # as after a failed statement
        again = await pipelined(conn, statements, 2, preparable=[True] * 4)
        assert first.rows == again.rows == [(7,)]
