"""A statement's memory and temp files are bounded by the database, and running out is
said as what it is: the executor's ``work_mem``/``hash_mem_multiplier`` are the
statement's own, the demo reader role cannot lift its ``temp_file_limit``, and a
statement the database stops for a resource (SQLSTATE classes 53 and 54) is
RESOURCE_EXHAUSTED with reason SQL_RESOURCE_LIMIT, never a data error and never
"nothing matches". Each runs on the real embedded Postgres as the reader role."""

from __future__ import annotations

import grpc
import psycopg_pool
import pytest
from psycopg.conninfo import make_conninfo

from services.sql import FailureKind, Limits, Safeguards, StatementError
from services.sql.gate._execute import execute_unvetted, memory_options, session_work_mem_kb
from tests.integration.pg_waits import WaitCounter

pytestmark = pytest.mark.integration

LIMITS = Limits(max_rows=10, statement_timeout_s=5.0, work_mem_kb=2048)


async def test_the_statement_runs_under_its_own_memory_settings(warehouse, open_pool):
    pool = await open_pool(warehouse.reader_url)
    result = await execute_unvetted(
        pool,
        "SELECT current_setting('work_mem'), current_setting('hash_mem_multiplier'), "
        "current_setting('temp_file_limit')",
        LIMITS,
        Safeguards(),
    )
    values = [v.string_value for v in result.rows[0].values]
    assert values == ["2MB", "1", "1GB"]


async def test_the_reader_cannot_lift_its_temp_file_limit(warehouse, open_pool):
    pool = await open_pool(warehouse.reader_url)
    async with pool.connection() as conn:
        with pytest.raises(Exception) as err:
            await conn.execute("SET temp_file_limit = -1")
        assert getattr(err.value, "sqlstate", "") == "42501"
        await conn.rollback()


async def test_a_value_past_what_postgres_builds_is_a_resource_limit(warehouse, open_pool):
    """The gate bypassed (``execute_unvetted``): Postgres refuses a 1.1 GB string before
    allocating it (54000), and that is reported as a limit, not as bad data."""
    pool = await open_pool(warehouse.reader_url)
    with pytest.raises(StatementError) as err:
        await execute_unvetted(
            pool, "SELECT length(repeat(repeat('x', 1000000), 1100))", LIMITS, Safeguards()
        )
    assert err.value.kind is FailureKind.RESOURCE
    assert err.value.sqlstate == "54000"
    mapped = err.value.to_tandem()
    assert mapped.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert mapped.reason == "SQL_RESOURCE_LIMIT"
    assert mapped.metadata == {"sqlstate": "54000"}


async def test_temp_files_past_the_limit_are_a_resource_limit(pg_url):
    """A sort spilling past the session's ``temp_file_limit`` (set low here, as only a
    superuser can, for this pool's sessions) fails with 53400, mapped to the limit."""
    conninfo = make_conninfo(pg_url, options="-c temp_file_limit=1MB")
    async with psycopg_pool.AsyncConnectionPool(conninfo, min_size=1, open=False) as pool:
        with pytest.raises(StatementError) as err:
            await execute_unvetted(
                pool,
                "SELECT count(DISTINCT md5(g::text)) FROM generate_series(1, 200000) AS g",
                LIMITS,
                Safeguards(),
            )
    assert err.value.kind is FailureKind.RESOURCE
    assert err.value.sqlstate == "53400"
    assert err.value.to_tandem().reason == "SQL_RESOURCE_LIMIT"


async def test_memory_limits_the_connection_already_holds_cost_no_statement(pg_url, open_pool):
    """A target's connections are opened with the statements' memory settings
    (``memory_options``): a statement whose limits are those sends no ``SET LOCAL`` for
    them (two statements fewer per answer) and still runs under them; other limits are
    set for the statement's transaction as before."""
    relay = WaitCounter(pg_url)
    pool = await open_pool(await relay.start())  # opened like a target's: 8192 kB
    text = "SELECT current_setting('work_mem'), current_setting('hash_mem_multiplier')"
    seen, counts = [], []
    try:
        for work_mem_kb in (8192, 2048, 8192):
            limits = Limits(max_rows=10, statement_timeout_s=5.0, work_mem_kb=work_mem_kb)
            await execute_unvetted(pool, text, limits, Safeguards())  # connections made
            relay.statements = 0
            result = await execute_unvetted(pool, text, limits, Safeguards())
            counts.append(relay.statements)
            seen.append([v.string_value for v in result.rows[0].values])
    finally:
        await relay.close()
    assert seen == [["8MB", "1"], ["2MB", "1"], ["8MB", "1"]]
    assert counts[1] - counts[0] == 2 and counts[2] == counts[0]


def test_memory_options_are_read_back_only_when_they_are_ours_alone():
    assert session_work_mem_kb(memory_options(8192).encode()) == 8192
    assert session_work_mem_kb(b"-c TimeZone=UTC " + memory_options(512).encode()) == 512
    assert session_work_mem_kb(memory_options(512).encode() + b" -c work_mem=1GB") == 0
    assert session_work_mem_kb(b"-c work_mem=512kB") == 0  # no hash multiplier of 1
    assert session_work_mem_kb(None) == 0 and memory_options(0) == ""
