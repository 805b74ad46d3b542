"""Hostile SQL on the file engines, on a WRITABLE (privileged) connection: with the
connection-level layers off, the gates alone (the Postgres gate, then the dialect gate on
the transpiled text) stop every write. The Postgres corpora (bare statements and injected
ones) and each engine's own corpus go through the SQL engine's execute path on real
SQLite and DuckDB files: 0 executed writes (schema and row counts unchanged), 0 files
created, 0 sleeps (every call returns well within its timeout); and the dialect gate,
alone, refuses every statement of the engine's corpus under its rule."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from services.common import TandemError
from services.sql import (
    EngineLimits,
    SqlEngine,
    SqlGate,
    StatementRunner,
    TargetConfig,
    TargetRegistry,
)
from services.sql.gate import Dialect, DialectGate, Limits
from services.sql.targets import EngineTarget
from tests.integration.sql.engines.conftest import build, url
from tests.security.corpora.sql import READ, hostile_statements
from tests.security.corpora.sql_engines import BY_ENGINE
from tests.unit.sql.corpus import HOSTILE

pytestmark = pytest.mark.integration

TABLES = ("companies", "contacts", "opportunities", "activities", "notes")
CALL_LIMIT_S = 3.0  # the statement timeout is 1 s: no call may take longer than this


async def _state(target: EngineTarget) -> list[object]:
    """The warehouse's schema and every table's row count, read through the target."""
    warehouse = target.warehouse
    limits = Limits(statement_timeout_s=5.0, max_rows=1000)
    schema = (
        "SELECT name, sql FROM sqlite_master ORDER BY name"
        if warehouse.dialect is Dialect.SQLITE
        else "SELECT table_name, sql FROM duckdb_tables() ORDER BY table_name"
    )
    found: list[object] = [
        [r.values[1].string_value for r in (await warehouse.run_unvetted(schema, limits)).rows]
    ]
    for table in TABLES:
        counted = await warehouse.run_unvetted(f"SELECT count(*) FROM {table}", limits)
        found.append((table, counted.rows[0].values[0].int_value))
    return found


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
async def test_the_gates_alone_stop_every_hostile_statement_on_a_writable_connection(
    engine: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    path = build(engine, data)
    out = data / "escape.out"
    target = EngineTarget(
        TargetConfig("w", url(engine, path), tenants=frozenset({"*"})),
        pool_max_size=2,
        read_only=False,  # privileged: only the gates stand in the way
    )
    assert await target.open()
    sql = SqlEngine(
        TargetRegistry([target], "w"),
        gate=SqlGate(),
        runner=StatementRunner(),
        limits=EngineLimits(statement_timeout_s=1.0),
    )
    statements = (
        [(text, rule) for text, rule in HOSTILE]
        + [(s.sql, s.rule) for s in hostile_statements()]
        + [(text.format(out=out), rule) for text, rule in BY_ENGINE[engine]]
    )
    try:
        before = await _state(target)
        files = sorted(p.name for p in data.iterdir())
        problems: list[str] = []
        ran = refused = 0
        for text, rule in statements:
            started = time.monotonic()
            try:
                await sql.execute("attacker", "w", text)
                ran += 1
                if rule is not READ:
                    problems.append(f"ran, want {rule.name}: {text[:80]}")
            except TandemError:
                refused += 1
            if time.monotonic() - started > CALL_LIMIT_S:
                problems.append(f"took {time.monotonic() - started:.1f}s: {text[:80]}")
        assert not problems, "\n".join(problems)
        assert await _state(target) == before  # 0 executed writes
        assert sorted(p.name for p in data.iterdir()) == files  # 0 files created
        assert not out.exists()
        assert refused >= len(statements) - 20 and ran + refused == len(statements)
    finally:
        await target.close()


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_the_dialect_gate_alone_refuses_each_engines_own_corpus(engine: str) -> None:
    gate = DialectGate(Dialect(engine))
    tables = [f"main.{t}" for t in TABLES]
    wrong = []
    for text, rule in BY_ENGINE[engine]:
        violations = gate.check(text.format(out="/tmp/escape.out"), tables)
        if not violations or violations[0].rule is not rule:
            wrong.append(f"{[v.rule.name for v in violations]}, want {rule.name}: {text}")
    assert not wrong, "\n".join(wrong)
    # and what the engines run for a plain question passes
    assert gate.check("SELECT name FROM main.companies WHERE industry = 'Retail'", tables) == ()
