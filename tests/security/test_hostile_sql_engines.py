"""Hostile SQL on SQLite, DuckDB and MariaDB, on a WRITABLE (privileged) connection: with the
connection-level layers off, the gates alone (the Postgres gate, then the dialect gate on
the transpiled text) stop every write. The Postgres corpora (bare statements and injected
ones) and each engine's own corpus go through the SQL engine's execute path on real
SQLite and DuckDB files and a real MariaDB server (as root): 0 executed writes (schema and
row counts unchanged), 0 files created, 0 locks held, 0 sleeps (every call returns well
within its timeout); and the dialect gate,
alone, refuses every statement of the engine's corpus under its rule."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.bench.mariadb import MariaDb, available, running_mariadb
from services.common import TandemError
from services.sql import (
    EngineLimits,
    SqlEngine,
    SqlGate,
    StatementRunner,
    TargetConfig,
    TargetRegistry,
)
from services.sql.gate import Dialect, DialectGate, Limits, to_dialect
from services.sql.targets import EngineTarget
from tests.integration.sql.engines.conftest import build, build_mysql, url
from tests.security.corpora.sql import READ, hostile_statements
from tests.security.corpora.sql_engines import BY_ENGINE, COMMENTS_DROPPED
from tests.unit.sql.corpus import HOSTILE

pytestmark = pytest.mark.integration

TABLES = ("companies", "contacts", "opportunities", "activities", "notes")
CALL_LIMIT_S = 3.0  # the statement timeout is 1 s: no call may take longer than this


@pytest.fixture(scope="module")
def mariadb() -> Iterator[MariaDb]:
    problem = available()
    if problem is not None:
        pytest.skip(problem)
    with running_mariadb() as server:
        yield server


_SCHEMA_OF = {
    Dialect.SQLITE: "SELECT name, sql FROM sqlite_master ORDER BY name",
    Dialect.DUCKDB: "SELECT table_name, sql FROM duckdb_tables() ORDER BY table_name",
    Dialect.MYSQL: (
        "SELECT TABLE_NAME, CREATE_TIME, (SELECT count(*) FROM information_schema.TABLES) "
        "FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1"
    ),
}


async def _state(target: EngineTarget) -> list[object]:
    """The warehouse's schema, every table's row count, and (MySQL) whether a named lock
    is held, read through the target's privileged connection."""
    warehouse = target.warehouse
    limits = Limits(statement_timeout_s=5.0, max_rows=1000)
    described = await warehouse.run_unvetted(_SCHEMA_OF[warehouse.dialect], limits)
    found: list[object] = [[str(r.values) for r in described.rows]]
    for table in TABLES:
        counted = await warehouse.run_unvetted(f"SELECT count(*) FROM {table}", limits)
        found.append((table, counted.rows[0].values[0].int_value))
    if warehouse.dialect is Dialect.MYSQL:
        free = await warehouse.run_unvetted("SELECT IS_FREE_LOCK('tandem')", limits)
        found.append(("lock free", free.rows[0].values[0].int_value))
    return found


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "mysql"])
async def test_the_gates_alone_stop_every_hostile_statement_on_a_writable_connection(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    out = data / "escape.out"
    if engine == "mysql":
        target_url = build_mysql(request.getfixturevalue("mariadb")).owner_url  # ALL PRIVILEGES
    else:
        target_url = url(engine, build(engine, data))
    target = EngineTarget(
        TargetConfig("w", target_url, tenants=frozenset({"*"}), allow_superuser=True),
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
                done = await sql.execute("attacker", "w", text)
                ran += 1
                if text in COMMENTS_DROPPED:
                    if len(done.result.rows) != COMMENTS_DROPPED[text]:
                        problems.append(f"a comment ran: {text[:80]}")
                elif rule is not READ:
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


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "mysql"])
def test_the_dialect_gate_alone_refuses_each_engines_own_corpus(engine: str) -> None:
    gate = DialectGate(Dialect(engine))
    schema = "shop" if engine == "mysql" else "main"
    tables = [f"{schema}.{t}" for t in TABLES]
    wrong = []
    for text, rule in BY_ENGINE[engine]:
        violations = gate.check(text.format(out="/tmp/escape.out"), tables)
        if not violations or violations[0].rule is not rule:
            wrong.append(f"{[v.rule.name for v in violations]}, want {rule.name}: {text}")
    assert not wrong, "\n".join(wrong)
    # and what the engines run for a plain question passes
    plain = to_dialect(
        f"SELECT name FROM {schema}.companies WHERE industry = 'Retail'", Dialect(engine)
    )
    assert gate.check(plain, tables) == ()
