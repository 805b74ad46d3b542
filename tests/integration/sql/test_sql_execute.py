"""Execution through the engine as the reader: limits, typed values, error mapping."""

from __future__ import annotations

from collections import Counter

import pytest

from services.common import DeadlineExceeded, InvalidArgument, deadline_scope
from services.sql import TargetRegistry
from tandem.v1 import sql_service_pb2 as spb
from tests.integration.sql.conftest import make_engine
from tests.unit.sql.corpus import HOSTILE, LEGITIMATE

pytestmark = pytest.mark.integration

# A statement the gate passes that runs for minutes: a cross join of two series,
# each within the gate's bound, counted.
SLOW_SQL = "SELECT count(*) FROM generate_series(1, 1000000) AS a, generate_series(1, 1000000) AS b"


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
            "acme", "", SLOW_SQL,
            statement_timeout_s=0.2,
        )  # fmt: skip
    assert timeout.value.reason == "STATEMENT_TIMEOUT"


async def test_call_deadline_is_not_a_statement_timeout(engine):
    with deadline_scope(0.3), pytest.raises(DeadlineExceeded) as err:
        await engine.execute(
            "acme",
            "",
            SLOW_SQL,
        )
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


# Statements of the corpus that Postgres refuses as written (and the engine must refuse
# too): measured none, on today's warehouse.
REFUSED_AS_WRITTEN = 0
# Window functions ordered by a column with ties (close_date): which of the tied rows
# gets which number is not fixed by the text, so past the row cap only the count holds.
TIE_ORDERED = {
    "SELECT row_number() OVER w, lag(amount) OVER w, lead(amount, 2) OVER w FROM "
    "opportunities WINDOW w AS (ORDER BY close_date)",
    "SELECT sum(amount) OVER (ORDER BY close_date ROWS BETWEEN UNBOUNDED PRECEDING AND "
    "CURRENT ROW) FROM opportunities",
}


def _comparable(row: spb.SqlRow) -> tuple[object, ...]:
    """A row's values, numbers as numbers: the regenerated text may spell a function so
    that Postgres types it differently (date_part: double; EXTRACT: numeric)."""
    values: list[object] = []
    for value in row.values:
        kind = value.WhichOneof("kind")
        if kind in ("int_value", "double_value", "decimal_value"):
            values.append(float(getattr(value, kind)))
        else:
            values.append(value.SerializeToString(deterministic=True))
    return tuple(values)


async def test_legitimate_reads_on_warehouse_tables_run_as_written(reader_target):
    """The statement that runs is the regenerated one: it must mean what was written, so
    it returns the same rows, value for value, and fails exactly when the original does."""
    import psycopg

    from services.sql.results._values import column_kind, encode

    engine = make_engine(TargetRegistry([reader_target], "warehouse"), max_result_bytes=2**24)
    runnable = [
        sql for sql in LEGITIMATE
        if "audit_notes" not in sql and "revenue DESC NULLS" not in sql
    ]  # fmt: skip
    ran, refused, clock, counted = 0, 0, 0, set()
    for sql in runnable:
        engine_error: str | None = None
        try:
            executed = await engine.execute("acme", "", sql, max_rows=1000)
        except InvalidArgument as exc:
            engine_error = exc.reason
        async with reader_target.pool.connection() as conn:
            await conn.execute("SET search_path = public")
            try:
                cur = await conn.execute(sql)
                original: list[tuple[object, ...]] | None = await cur.fetchall()
            except psycopg.Error:
                original = None
            finally:
                await conn.execute("RESET search_path")
        if original is None or engine_error is not None:
            # Refused as written and as run, never only one of them.
            assert (original is None, engine_error) == (True, "SQL_DATABASE_ERROR"), sql
            refused += 1
            continue
        ran += 1
        if "now()" in sql or "current_date" in sql:
            clock += 1  # the two runs read the clock at different times
            continue
        result = executed.result
        kinds = [column_kind(c.data_type) for c in result.columns]
        wanted = Counter(
            _comparable(spb.SqlRow(values=[encode(v, k) for v, k in zip(row, kinds, strict=True)]))
            for row in original
        )
        got = Counter(_comparable(r) for r in result.rows)
        if not result.truncated:
            assert got == wanted, sql
        elif sql in TIE_ORDERED:
            counted.add(sql)
            assert len(result.rows) == 1000 < len(original), sql
        else:  # the row cap kept a part of the rows, and only real ones
            assert len(result.rows) == 1000 and got <= wanted, sql
    assert refused == REFUSED_AS_WRITTEN and counted == TIE_ORDERED, (refused, counted)
    assert ran + refused == len(runnable) and ran >= 50 and clock <= 5, (ran, clock)


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
    """The check's search path and prepared statement do not outlive it (the statements
    the runner keeps prepared for its own repeated texts are not the check's)."""
    for _ in range(3):
        await engine.execute("acme", "", "SELECT name FROM regions")
    async with reader_target.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'tandem_accept_%'"
        )
        assert await cur.fetchone() == (0,)
        cur = await conn.execute("SHOW search_path")
        assert await cur.fetchone() == ("pg_catalog",)
