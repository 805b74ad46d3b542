"""SQLite and DuckDB warehouses on real files: the catalog in the Postgres path's terms,
statements transpiled and run read-only under the timeout and row cap, and AskQuestion
end to end through the real gRPC server."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import grpc
import pytest

from services.common import TandemError
from services.sql import (
    EngineLimits,
    SqlEngine,
    SqlGate,
    SqlSettings,
    StatementRunner,
    TargetConfig,
    TargetRegistry,
)
from services.sql._server import build_deps, create_server, ready
from services.sql.gate import FailureKind, Limits, StatementError
from services.sql.targets import EngineTarget
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings
from tests.integration.sql.engines.conftest import TargetFactory

pytestmark = pytest.mark.integration

# runs for hours on every engine: 40^7 rows counted
SLOW_SQL = (
    "SELECT count(*) FROM companies a, companies b, companies c, companies d, companies e, "
    "companies f, companies g"
)


def _engine(target: object, **limits: object) -> SqlEngine:
    return SqlEngine(
        TargetRegistry([target], "w"),  # type: ignore[list-item]
        gate=SqlGate(),
        runner=StatementRunner(),
        limits=EngineLimits(**limits),  # type: ignore[arg-type]
    )


def _values(result: object) -> list[list[object]]:
    from services.sql.results import decode

    return [[decode(v) for v in row.values] for row in result.rows]  # type: ignore[attr-defined]


async def test_the_catalog_has_tables_types_declared_and_inferred_keys_and_values(
    file_target: TargetFactory,
) -> None:
    target = file_target()
    assert await target.open()
    catalog = await target.get_catalog()
    schema = catalog.tables[0].schema  # main; the database's name on MySQL
    names = [t.qualified for t in catalog.tables]
    assert names == [
        f"{schema}.activities",
        f"{schema}.companies",
        f"{schema}.contacts",
        f"{schema}.notes",
        f"{schema}.opportunities",
    ]
    companies = catalog.table("companies")
    assert companies is not None
    assert companies.primary_key == ("company_id",)
    types = {c.name: c.data_type for c in companies.columns}
    assert types["name"] in ("text", "character varying")
    assert types["annual_revenue"] == "numeric"
    assert types["created_at"].startswith("timestamp")
    industry = companies.column("industry")
    assert industry is not None and industry.sample_values == (
        "Energy",
        "Finance",
        "Healthcare",
        "Retail",
    )
    contacts = catalog.table("contacts")
    assert contacts is not None
    assert [(fk.columns, fk.referenced_table) for fk in contacts.foreign_keys] == [
        (("company_id",), f"{schema}.companies")
    ]
    # notes declares nothing: its key and its join are read from the data, as on Postgres
    notes = catalog.table("notes")
    assert notes is not None and notes.primary_key == ("note_id",) and notes.key_evidence
    assert any(
        j.child == f"{schema}.notes" and j.parent == f"{schema}.companies"
        for j in catalog.joins or ()
    )


async def test_statements_run_in_the_engines_dialect_with_postgres_results(
    file_target: TargetFactory,
) -> None:
    target = file_target()
    assert await target.open()
    engine = _engine(target)
    ran = await engine.execute(
        "t1",
        "w",
        "SELECT industry, count(*), sum(annual_revenue) AS revenue FROM companies "
        "WHERE name ILIKE '%company 1%' GROUP BY industry ORDER BY revenue DESC NULLS LAST "
        "LIMIT 2",
    )
    assert [c.name for c in ran.result.columns] == ["industry", "count", "revenue"]
    # Company 10..19, ILIKE matched case-insensitively: Energy 11, 15, 19; Finance 10, 14, 18
    assert [r[:2] for r in _values(ran.result)] == [["Energy", 3], ["Finance", 3]]
    assert [float(str(r[2])) for r in _values(ran.result)] == [45001.5, 42001.5]
    dates = await engine.execute(
        "t1",
        "w",
        "SELECT date_trunc('month', close_date) AS month, EXTRACT(YEAR FROM close_date) AS y, "
        "count(*) AS n FROM opportunities WHERE close_date >= CAST('2025-06-01' AS DATE) "
        "AND close_date < CAST('2025-06-01' AS DATE) + INTERVAL '1 month' GROUP BY 1, 2",
    )
    rows = _values(dates.result)
    # a truncated date is an instant (timestamptz, in UTC), as on Postgres
    assert dates.result.columns[0].data_type == "timestamp with time zone"
    assert len(rows) == 1
    assert str(rows[0][0]).startswith("2025-06-01")
    assert int(str(rows[0][1])) == 2025
    assert rows[0][2] == 3  # i % 12 == 5 for i in 1..40: 5, 17, 29
    shaped = await engine.execute(
        "t1",
        "w",
        "SELECT count(*) FILTER (WHERE stage = 'won') AS won, "
        "date_trunc('week', max(close_date)) AS week, date_trunc('quarter', min(close_date)) "
        "AS quarter, EXTRACT(DOW FROM min(close_date)) AS dow, CAST(avg(amount) AS numeric) "
        "AS mean, count(DISTINCT (stage, lost_reason)) AS kinds FROM opportunities "
        "WHERE opportunity_id IN (1, 3, 6)",
    )
    # 2025-02-15 (a Saturday), 2025-04-15, 2025-07-15; 3 and 6 won; mean 2500 / 3;
    # rows (lost, NULL), (won, NULL), (won, NULL): two distinct row values
    won, week, quarter, dow, mean, kinds = _values(shaped.result)[0]
    assert kinds == 2
    assert won == 2
    assert str(week).replace("T", " ").startswith("2025-07-14 00:00:00")
    assert str(quarter).replace("T", " ").startswith("2025-01-01 00:00:00")
    assert int(str(dow)) == 6
    assert abs(float(str(mean)) - 2500 / 3) < 1e-8
    joined = await engine.execute(
        "t1",
        "w",
        "SELECT c.name, o.amount FROM companies c JOIN opportunities o "
        "ON o.company_id = c.company_id WHERE o.stage = 'won' ORDER BY o.amount DESC LIMIT 3",
    )
    assert [r[0] for r in _values(joined.result)] == ["Company 20", "Company 17", "Company 14"]
    schema = (await target.get_catalog()).tables[0].schema
    assert ran.result.columns and joined.verdict.tables_used == (
        f"{schema}.companies",
        f"{schema}.opportunities",
    )


async def test_the_row_cap_truncates_and_the_timeout_interrupts(
    file_target: TargetFactory,
) -> None:
    target = file_target()
    assert await target.open()
    engine = _engine(target)
    capped = await engine.execute("t1", "w", "SELECT * FROM companies", max_rows=5)
    assert len(capped.result.rows) == 5
    assert capped.result.truncation_reason == pb.TRUNCATION_REASON_ROW_CAP
    started = time.monotonic()
    with pytest.raises(TandemError) as refused:
        await engine.execute("t1", "w", SLOW_SQL, statement_timeout_s=0.5)
    assert time.monotonic() - started < 3.0
    assert getattr(refused.value, "reason", "") == "STATEMENT_TIMEOUT"


async def test_the_connection_alone_refuses_writes_and_outside_access(
    file_target: TargetFactory, tmp_path: Path, engine: str
) -> None:
    target = file_target()
    assert await target.open()
    watched = sorted(tmp_path.rglob("*"))  # noqa: ASYNC240 - a small folder
    limits = Limits(statement_timeout_s=2.0)
    outside = tmp_path / "escape.db"
    writes = [
        "DELETE FROM companies",
        "UPDATE companies SET name = 'x'",
        "CREATE TABLE stolen (x INTEGER)",
    ]
    if engine == "duckdb":
        writes += [
            f"ATTACH '{outside}' AS escape",
            f"COPY companies TO '{outside}'",
            f"SELECT * FROM read_csv('{outside}')",
            "INSTALL httpfs",
            "SET enable_external_access = true",
        ]
    elif engine == "sqlite":
        writes += [
            f"ATTACH '{outside}' AS escape",
            f"VACUUM INTO '{outside}'",
            "PRAGMA writable_schema = 1",
            "SELECT load_extension('x')",
            "SELECT sql FROM sqlite_master",
        ]
    else:
        writes += [
            f"SELECT * FROM companies INTO OUTFILE '{outside}'",
            "CREATE TEMPORARY TABLE stolen AS SELECT * FROM companies",
            "SET GLOBAL max_connections = 1",
            "SELECT * FROM mysql.user",
            "GRANT ALL ON *.* TO CURRENT_USER()",
        ]
    for statement in writes:
        with pytest.raises(StatementError) as refused:
            await target.warehouse.run_unvetted(statement, limits)
        assert refused.value.kind in (FailureKind.PERMISSION, FailureKind.DATA), statement
    assert sorted(tmp_path.rglob("*")) == watched  # noqa: ASYNC240 - a small folder
    assert not outside.exists()
    count = await target.warehouse.run_unvetted("SELECT count(*) FROM companies", limits)
    assert count.rows[0].values[0].int_value == 40


async def test_ask_question_end_to_end_on_each_engine(
    warehouse_url: tuple[str, str], telemetry_sink
) -> None:
    settings = SqlSettings(reference_date=None, default_database="w")
    deps = await build_deps(
        settings,
        telemetry_sink("sql").telemetry,
        configs=[TargetConfig("w", warehouse_url[0], tenants=frozenset({"acme"}))],
    )
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    try:
        await ready(server, servicer, deps)
        schema = (await deps.targets.get("w").get_catalog()).tables[0].schema
        channel = grpc.aio.insecure_channel(server.address)
        stub = pb_grpc.SqlServiceStub(channel)
        counted = await stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question="How many companies are there?"),
            timeout=30,
        )
        assert counted.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, counted.message
        assert counted.result.rows[0].values[0].int_value == 40
        assert counted.result.database == "w"
        assert list(counted.result.tables_used) == [f"{schema}.companies"]
        grouped = await stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id="acme", question="How many companies are there per industry?"
            ),
            timeout=30,
        )
        assert grouped.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, grouped.message
        by_industry = {r.values[0].string_value: r.values[1].int_value for r in grouped.result.rows}
        assert by_industry == {"Healthcare": 10, "Retail": 10, "Finance": 10, "Energy": 10}
        assert grouped.result.chart.kind == pb.CHART_KIND_BAR
        described = await stub.DescribeSchema(pb.DescribeSchemaRequest(tenant_id="acme"))
        assert f"TABLE {schema}.companies" in described.catalog_text
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ExecuteSql(
                pb.ExecuteSqlRequest(
                    tenant_id="acme", sql="SELECT * FROM information_schema.tables"
                )
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        await channel.close()
    finally:
        await server.stop(0)
        await deps.close()


REJECTED = {
    # statements every gate passes and the engine itself rejects
    "sqlite": "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM opportunities",
    "duckdb": "SELECT (SELECT name FROM companies) AS n",
    "mysql": "SELECT (SELECT name FROM companies) AS n",  # 1242, an OperationalError
}


async def test_a_statement_the_engine_rejects_is_invalid_argument_never_unavailable(
    file_target: TargetFactory, engine: str
) -> None:
    target = file_target()
    assert await target.open()
    with pytest.raises(TandemError) as refused:
        await _engine(target).execute("t1", "w", REJECTED[engine])
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.reason == "SQL_DATABASE_ERROR"


async def test_a_folder_of_csv_and_parquet_files_is_served_as_tables_that_cannot_read_paths(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "regions.csv").write_text("region_id,name\n1,North\n2,South\n")
    writer = duckdb.connect()
    writer.execute(
        f"COPY (SELECT 1 AS region_id, 250.5 AS target) TO '{folder / 'targets.parquet'}' "
        "(FORMAT parquet)"
    )
    writer.close()
    target = EngineTarget(
        TargetConfig("w", f"duckdb://{folder}", tenants=frozenset({"*"})), pool_max_size=1
    )
    try:
        assert await target.open()
        catalog = await target.get_catalog()
        assert [t.name for t in catalog.tables] == ["regions", "targets"]
        ran = await _engine(target).execute(
            "t1",
            "w",
            "SELECT r.name, t.target FROM regions r JOIN targets t ON t.region_id = r.region_id",
        )
        assert [[r[0], float(str(r[1]))] for r in _values(ran.result)] == [["North", 250.5]]
        with pytest.raises(StatementError) as refused:
            await target.warehouse.run_unvetted(
                f"SELECT * FROM read_csv('{folder / 'regions.csv'}')", Limits()
            )
        assert refused.value.kind is FailureKind.PERMISSION
    finally:
        await target.close()
