"""Execution through the engine as the reader: limits, typed values, error mapping."""

from __future__ import annotations

import pytest

from services.common import DeadlineExceeded, InvalidArgument, deadline_scope
from services.sql import TargetRegistry
from tests.integration.sql.conftest import make_engine
from tests.unit.sql.corpus import HOSTILE, LEGITIMATE

pytestmark = pytest.mark.integration


@pytest.fixture
def engine(reader_target):
    return make_engine(TargetRegistry([reader_target], "warehouse"), max_result_bytes=4096)


async def test_row_cap_sets_truncated(engine):
    executed = await engine.execute("acme", "", "SELECT name FROM companies ORDER BY name",
                                    max_rows=7)  # fmt: skip
    result = executed.result
    assert len(result.rows) == 7 and result.truncated
    assert result.truncation_reason == 1  # ROW_CAP
    exact = await engine.execute("acme", "", "SELECT name FROM regions", max_rows=4)
    assert len(exact.result.rows) == 4 and not exact.result.truncated


async def test_size_cap_sets_truncated(engine):
    executed = await engine.execute("acme", "", "SELECT notes FROM activities", max_rows=1000)
    result = executed.result
    assert result.truncated and result.truncation_reason == 2  # SIZE_CAP
    assert 0 < sum(r.ByteSize() for r in result.rows) <= 4096


async def test_values_are_typed_and_lossless(engine):
    executed = await engine.execute(
        "acme",
        "",
        "SELECT 1.50::numeric AS n, 12345678901234567890::numeric AS big, 7 AS i, "
        "true AS b, DATE '2024-05-01' AS d, TIMESTAMP '2024-05-01 13:45:00.5' AS ts, "
        "CAST('2024-05-01 13:45:00+02' AS timestamptz) AS tstz, "
        "'{\"a\": 1.10}'::jsonb AS j, ARRAY[1, NULL] AS a, interval '1 year 2 days' AS iv, "
        "NULL::text AS nothing, 'infinity'::date AS forever",
    )
    result = executed.result
    types = [c.data_type for c in result.columns]
    assert types == [
        "numeric", "numeric", "integer", "boolean", "date", "timestamp without time zone",
        "timestamp with time zone", "jsonb", "integer[]", "interval", "text", "date",
    ]  # fmt: skip
    kinds = [v.WhichOneof("kind") for v in result.rows[0].values]
    assert kinds == [
        "decimal_value", "decimal_value", "int_value", "bool_value", "date_value",
        "datetime_value", "timestamp_value", "json_value", "array_value", "interval_value",
        "null_value", "date_value",
    ]  # fmt: skip
    values = result.rows[0].values
    assert values[0].decimal_value == "1.50"
    assert values[1].decimal_value == "12345678901234567890"
    assert values[5].datetime_value == "2024-05-01T13:45:00.500000"
    assert values[6].timestamp_value.ToJsonString() == "2024-05-01T11:45:00Z"
    assert values[7].json_value == '{"a": 1.10}'
    assert values[9].interval_value == "P1Y2D"
    assert values[11].date_value == "infinity"
    assert len(result.fingerprint) == 64


async def test_database_errors_map_to_the_documented_codes(engine):
    with pytest.raises(InvalidArgument) as err:
        await engine.execute("acme", "", "SELECT no_such_column FROM companies")
    assert (err.value.reason, err.value.metadata) == ("SQL_DATABASE_ERROR", {"sqlstate": "42703"})
    with pytest.raises(InvalidArgument) as err:
        await engine.execute("acme", "", "SELECT 1 / 0")
    assert err.value.metadata == {"sqlstate": "22012"}
    with pytest.raises(DeadlineExceeded) as timeout:
        await engine.execute(
            "acme", "", "SELECT count(*) FROM generate_series(1, 10000000000)",
            statement_timeout_s=0.2,
        )  # fmt: skip
    assert timeout.value.reason == "STATEMENT_TIMEOUT"


async def test_call_deadline_is_not_a_statement_timeout(engine):
    with deadline_scope(0.3), pytest.raises(DeadlineExceeded) as err:
        await engine.execute("acme", "", "SELECT count(*) FROM generate_series(1, 10000000000)")
    assert err.value.reason != "STATEMENT_TIMEOUT"


async def test_gate_refusal_never_reaches_the_database(reader_target):
    class CountingRunner:
        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        async def run(self, *args, **kwargs):
            self.calls += 1
            return await self.inner.run(*args, **kwargs)

    from services.sql import EngineLimits, SqlEngine, SqlGate, StatementRunner

    runner = CountingRunner(StatementRunner())
    engine = SqlEngine(
        TargetRegistry([reader_target], "warehouse"),
        gate=SqlGate(),
        runner=runner,  # type: ignore[arg-type]
        limits=EngineLimits(),
    )
    for sql, rule in HOSTILE:
        if not sql.strip() or len(sql) > 20_000:
            continue
        with pytest.raises(InvalidArgument) as err:
            await engine.execute("acme", "", sql)
        assert err.value.reason == "SQL_REJECTED"
        assert err.value.metadata == {"rule": rule.wire_name}
    assert runner.calls == 0


async def test_legitimate_reads_on_warehouse_tables_run_as_written(engine, reader_target):
    """The statement that runs is the regenerated one: it must mean what was written."""
    import psycopg

    from services.sql._warehouse import SCHEMA

    columns = {c.name for t in SCHEMA for c in t.columns}
    runnable = [
        sql for sql in LEGITIMATE
        if "audit_notes" not in sql and "revenue DESC NULLS" not in sql
    ]  # fmt: skip
    ran = 0
    for sql in runnable:
        try:
            executed = await engine.execute("acme", "", sql, max_rows=1000)
        except InvalidArgument as exc:
            assert exc.reason == "SQL_DATABASE_ERROR", sql  # e.g. columns the corpus invents
            continue
        ran += 1
        async with reader_target.pool.connection() as conn:
            await conn.execute("SET search_path = public")
            try:
                cur = await conn.execute(sql)
                original = await cur.fetchall()
            except psycopg.Error:
                continue
            finally:
                await conn.execute("RESET search_path")
        if "now()" in sql or "current_date" in sql:
            continue
        assert len(original) == len(executed.result.rows) or executed.result.truncated, sql
    assert ran >= 50 and columns


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM companies WHERE company_id = 1 ,",
        "SELECT name FROM companies WHERE name = '' ''",
    ],
)
async def test_text_postgres_refuses_never_runs_repaired(engine, sql):
    """sqlglot reads these (dropping the comma, joining the literals); Postgres does not,
    so the regenerated statement must not run in their place."""
    assert engine.gate(sql, await engine.targets.get("").get_catalog()).valid
    with pytest.raises(InvalidArgument) as err:
        await engine.execute("acme", "", sql)
    assert (err.value.reason, err.value.metadata) == ("SQL_DATABASE_ERROR", {"sqlstate": "42601"})


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) AS n FROM companies; -- note",
        "SELECT count(*) AS n FROM companies;  \n",
        "SELECT count(*) AS n FROM companies; /* checked */",
    ],
)
async def test_trailing_comment_after_final_semicolon_runs(engine, sql):
    executed = await engine.execute("acme", "", sql)
    assert len(executed.result.rows) == 1 and executed.result.rows[0].values[0].int_value > 0


async def test_acceptance_check_leaves_the_connection_clean(engine, reader_target):
    """The check's search path and prepared statement do not outlive it."""
    for _ in range(3):
        await engine.execute("acme", "", "SELECT name FROM regions")
    async with reader_target.pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM pg_prepared_statements")
        assert await cur.fetchone() == (0,)
        cur = await conn.execute("SHOW search_path")
        assert await cur.fetchone() == ("pg_catalog",)
