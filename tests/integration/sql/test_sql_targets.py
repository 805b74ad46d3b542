"""Several target databases, each with its own read-only pool and catalog."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from services.cli._main import main
from services.common import InvalidArgument, PermissionDenied, Unavailable
from services.sql import GateRule, Target, TargetConfig, TargetRegistry, grant_read_only
from services.sql.demo._warehouse import database_url, ensure_reader_role
from services.sql.targets._targets import WritableTargetError
from tests.integration.sql.conftest import make_engine
from tests.processes import clean_environ

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def finance_url(pg_url: str, warehouse) -> str:
    """A second database with its own table, readable by the same SELECT-only role."""

    async def setup() -> str:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute("DROP DATABASE IF EXISTS tandem_finance")
            await admin.execute("CREATE DATABASE tandem_finance")
            await ensure_reader_role(admin, warehouse.reader_role)
        url = database_url(pg_url, "tandem_finance")
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(
                "CREATE TABLE invoices (invoice_id int PRIMARY KEY, total numeric(12, 2))"
            )
            await conn.execute("COMMENT ON TABLE invoices IS 'Issued invoices.'")
            await conn.execute("INSERT INTO invoices VALUES (1, 10.50), (2, 99.99)")
            await conn.execute("ANALYZE")
            await grant_read_only(conn, "tandem_finance", warehouse.reader_role, schemas=["public"])
        return psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="tandem_finance")

    return asyncio.run(setup())


@pytest.fixture
async def registry(warehouse, finance_url):
    targets = TargetRegistry(
        [
            Target(
                TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({"*"})),
                pool_max_size=2,
            ),
            Target(
                TargetConfig("finance", finance_url, tenants=frozenset({"acme"})),
                pool_max_size=2,
            ),
        ],
        "warehouse",
    )
    await targets.open()
    yield targets
    await targets.close()


async def test_each_database_has_its_own_catalog_and_pool(registry):
    engine = make_engine(registry)
    warehouse = await engine.describe("acme", "")
    finance = await engine.describe("acme", "finance")
    assert "public.companies" in {t.qualified for t in warehouse.rendered.tables}
    assert [t.qualified for t in finance.rendered.tables] == ["public.invoices"]
    result = await engine.execute("acme", "finance", "SELECT sum(total) AS s FROM invoices")
    assert result.result.rows[0].values[0].decimal_value == "110.49"
    assert result.database == "finance"
    # A table of another database is unknown here: the gate refuses before any query runs.
    verdict = await engine.validate("acme", "finance", "SELECT * FROM companies")
    assert verdict.first_rule is GateRule.UNKNOWN_TABLE


async def test_unknown_database_and_tenant_rules(registry):
    engine = make_engine(registry)
    with pytest.raises(InvalidArgument) as err:
        await engine.validate("acme", "nope", "SELECT 1")
    assert (err.value.reason, err.value.metadata) == ("UNKNOWN_DATABASE", {"database": "nope"})
    assert err.value.violations[0].field == "database"
    with pytest.raises(PermissionDenied) as denied:
        await engine.validate("initech", "finance", "SELECT 1")
    assert denied.value.reason == "DATABASE_NOT_ALLOWED"
    assert "'finance'" in denied.value.message


@pytest.fixture(scope="module")
def yours(pg_url: str) -> Callable[[str], str]:
    """A database as a user's existing server has it (stock ACL: PUBLIC holds TEMPORARY),
    and ``yours(role)``: the URL of a role made by the README's plain recipe, plus any
    extra grants given after the role's name (``"r2: GRANT INSERT ON orders TO r2"``)."""
    owner = database_url(pg_url, "tandem_yours")

    async def setup() -> None:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute("DROP DATABASE IF EXISTS tandem_yours")
            await admin.execute("CREATE DATABASE tandem_yours")
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await conn.execute("CREATE TABLE orders (order_id int PRIMARY KEY, total numeric)")
            await conn.execute("INSERT INTO orders VALUES (1, 5), (2, 7)")

    asyncio.run(setup())

    def make(spec: str) -> str:
        role, _, extra = spec.partition(":")

        async def create() -> None:
            async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
                await conn.execute(f"DROP OWNED BY {role}" if await _exists(conn, role) else "")
                await conn.execute(f"DROP ROLE IF EXISTS {role}")
                await conn.execute(f"CREATE ROLE {role} LOGIN")
                await conn.execute(f"GRANT CONNECT ON DATABASE tandem_yours TO {role}")
                await conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
                await conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
                for statement in filter(None, (s.strip() for s in extra.split(";"))):
                    await conn.execute(statement)

        asyncio.run(create())
        return psycopg.conninfo.make_conninfo(owner, user=role)

    return make


async def _exists(conn: psycopg.AsyncConnection[Any], role: str) -> bool:
    cur = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
    return await cur.fetchone() is not None


async def _open(config: TargetConfig) -> TargetRegistry:
    registry = TargetRegistry([Target(config, pool_max_size=1)], config.name)
    try:
        await registry.open()
    except BaseException:
        await registry.close()
        raise
    return registry


async def test_a_stock_select_only_role_is_served_with_one_warning(yours, caplog):
    url = await asyncio.to_thread(yours, "tandem_plain")
    with caplog.at_level(logging.WARNING, logger="tandem.sql.targets"):
        registry = await _open(TargetConfig("yours", url, tenants=frozenset({"acme"})))
    try:
        engine = make_engine(registry)
        executed = await engine.execute("acme", "", "SELECT sum(total) AS s FROM orders")
        assert executed.result.rows[0].values[0].decimal_value == "12"
    finally:
        await registry.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert 'REVOKE TEMPORARY ON DATABASE "tandem_yours" FROM PUBLIC' in warnings[0]


@pytest.mark.parametrize(
    ("spec", "privilege"),
    [
        ("tandem_w1: GRANT INSERT ON orders TO tandem_w1", "INSERT, UPDATE, DELETE or TRUNCATE"),
        ("tandem_w2: GRANT CREATE ON SCHEMA public TO tandem_w2", "CREATE on a schema"),
        (
            "tandem_w3: CREATE FUNCTION one() RETURNS int LANGUAGE sql AS 'SELECT 1';"
            " ALTER FUNCTION one() OWNER TO tandem_w3",
            "ownership",
        ),
        ("tandem_w4: GRANT TEMPORARY ON DATABASE tandem_yours TO tandem_w4", "TEMPORARY"),
        ("tandem_w5: ALTER ROLE tandem_w5 CREATEROLE", "CREATEROLE"),
    ],
)
async def test_a_role_that_can_write_or_owns_objects_is_refused_in_one_line(yours, spec, privilege):
    url = await asyncio.to_thread(yours, spec)
    with pytest.raises(WritableTargetError) as refused:
        await _open(TargetConfig("yours", url))
    message = str(refused.value)
    assert "\n" not in message and "'yours'" in message and privilege in message
    variable = "SUPERUSER" if "CREATEROLE" in privilege else "WRITABLE"
    assert f"SQL_UNSAFE_{variable}_DATABASES" in message


async def test_a_writable_role_is_served_only_when_allowed_and_said_loudly(yours, caplog):
    url = await asyncio.to_thread(yours, "tandem_w6: GRANT DELETE ON orders TO tandem_w6")
    with caplog.at_level(logging.ERROR, logger="tandem.sql.targets"):
        registry = await _open(TargetConfig("yours", url, allow_writable=True))
    await registry.close()
    assert any(
        r.levelno == logging.ERROR and "UNSAFE" in r.getMessage() and "'yours'" in r.getMessage()
        for r in caplog.records
    )


async def test_a_superuser_needs_its_own_permission(pg_url):
    admin = database_url(pg_url, "tandem_finance")  # the superuser
    with pytest.raises(WritableTargetError, match=r"SUPERUSER.*SQL_UNSAFE_SUPERUSER_DATABASES"):
        await _open(TargetConfig("finance", admin, allow_writable=True))
    allowed = await _open(TargetConfig("finance", admin, allow_superuser=True))
    assert (await allowed.get("finance").get_catalog()).table("invoices") is not None
    await allowed.close()


async def test_a_database_without_tenants_serves_nobody_and_says_so(finance_url, caplog):
    with caplog.at_level(logging.WARNING, logger="tandem.sql.targets"):
        registry = await _open(TargetConfig("finance", finance_url))
    try:
        with pytest.raises(PermissionDenied) as denied:
            await make_engine(registry).describe("acme", "")
        assert "'finance'" in denied.value.message
        assert denied.value.metadata == {"database": "finance"}
    finally:
        await registry.close()
    assert any("serves no tenant" in r.getMessage() for r in caplog.records)


async def test_an_unreachable_database_is_unavailable_not_fatal():
    target = Target(
        TargetConfig("gone", "host=/nonexistent/socket dbname=x user=x"),
        pool_max_size=1,
        connect_timeout_s=1,
    )
    assert not await target.open()
    with pytest.raises(Unavailable) as err:
        await target.get_catalog()
    assert err.value.reason == "CATALOG_UNAVAILABLE"
    await target.close()


async def test_the_catalog_is_read_again_only_when_the_schema_changed(pg_url, warehouse):
    owner = database_url(pg_url, "tandem_changing")
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_changing WITH (FORCE)")
        await admin.execute("CREATE DATABASE tandem_changing")
        await ensure_reader_role(admin, warehouse.reader_role)
    async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
        await conn.execute("CREATE TABLE invoices (invoice_id int PRIMARY KEY, total numeric)")
        await conn.execute("INSERT INTO invoices VALUES (1, 10), (2, 20)")
        await grant_read_only(conn, "tandem_changing", warehouse.reader_role, schemas=["public"])
    url = psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="tandem_changing")
    target = Target(TargetConfig("changing", url), pool_max_size=1)
    try:
        assert await target.open()
        first = await target.get_catalog()
        await target.catalog.refresh()  # what the TTL's check does, in the background
        assert await target.get_catalog() is first  # the same schema: not read again
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await conn.execute("CREATE TABLE refunds (refund_id int PRIMARY KEY, amount numeric)")
            await conn.execute(f"GRANT SELECT ON refunds TO {warehouse.reader_role}")
        assert (await target.get_catalog()).table("refunds") is None  # until checked
        await target.catalog.refresh()
        second = await target.get_catalog()
        assert second is not first and second.table("refunds") is not None
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await conn.execute("COMMENT ON COLUMN invoices.total IS 'Total with tax.'")
        await target.catalog.refresh()
        third = await target.get_catalog()
        invoices = third.table("invoices")
        assert invoices is not None and invoices.columns[1].comment == "Total with tax."
    finally:
        await target.close()


def test_sql_check_says_per_database_what_the_service_will_do(yours, monkeypatch, capsys, tmp_path):
    plain = yours("tandem_c1")
    writer = yours("tandem_c2: GRANT UPDATE ON orders TO tandem_c2")
    for name in ("SQL_DEMO_WAREHOUSE", "WAREHOUSE_DATABASE_URL", "SQL_DEFAULT_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    glossary = tmp_path / "sales.json"
    glossary.write_text('{"entries": [], "joins": [{"from": "orders.buyer", "to": "people.id"}]}')
    monkeypatch.setenv("SQL_DATABASES", f"sales={plain};ops={writer};gone=host=/nonexistent")
    monkeypatch.setenv("SQL_DATABASE_TENANTS", "sales=*")
    monkeypatch.setenv("SQL_GLOSSARIES", f"sales={glossary}")
    monkeypatch.setenv("SQL_EXCLUDE_TABLES", "sales=stg_*,*_backup")
    assert main(["sql-check"]) == 1  # the service would refuse to start
    lines = capsys.readouterr().out.splitlines()
    sales = next(i for i, line in enumerate(lines) if line.startswith("sales "))
    assert "serve" in lines[sales] and "every tenant (*)" in lines[sales]
    assert 'REVOKE TEMPORARY ON DATABASE "tandem_yours" FROM PUBLIC' in lines[sales + 1]
    # the joins the service would use, and a glossary join it cannot, named
    assert "       glossary join ignored: orders.buyer -> people.id: no table 'people'" in lines
    assert "       excluded: stg_*, *_backup (SQL_EXCLUDE_TABLES)" in lines
    ops = next(i for i, line in enumerate(lines) if line.startswith("ops "))
    assert "refuse" in lines[ops] and "none (list it in SQL_DATABASE_TENANTS)" in lines[ops]
    assert "UPDATE" in lines[ops + 1] and "SQL_UNSAFE_WRITABLE_DATABASES" in lines[ops + 1]
    assert any(line.startswith("gone ") and "unreachable" in line for line in lines)
    assert not any(line.startswith("warehouse") for line in lines)  # no demo unless asked


def test_sql_check_names_tables_the_role_cannot_read_and_why_a_database_is_unreachable(
    yours, pg_url, monkeypatch, capsys
):
    # A table created after the grants is invisible to a role without default privileges:
    # questions about it once found "nothing in the schema matches" with no hint why.
    plain = yours("tandem_c3")
    owner = database_url(pg_url, "tandem_yours")

    async def later_table() -> None:
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await conn.execute("CREATE TABLE IF NOT EXISTS refunds (refund_id int)")

    asyncio.run(later_table())
    for name in ("SQL_DEMO_WAREHOUSE", "WAREHOUSE_DATABASE_URL", "SQL_DEFAULT_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    missing = psycopg.conninfo.make_conninfo(owner, dbname="tandem_no_such_db")
    refused = "host=127.0.0.1 port=1 user=x dbname=x"
    monkeypatch.setenv(
        "SQL_DATABASES",
        f"sales={plain};missing={missing};refused={refused};socket=host=/nonexistent",
    )
    monkeypatch.setenv("SQL_DATABASE_TENANTS", "sales=*")
    assert main(["sql-check"]) == 0
    out = capsys.readouterr().out
    sales = out[out.index("sales ") : out.index("missing ")]
    assert "cannot read 1 table(s): public.refunds" in sales
    assert "ALTER DEFAULT PRIVILEGES" in sales
    lines = {line.split()[0]: line for line in out.splitlines() if line and line[0] != " "}
    detail = {
        name: out.splitlines()[out.splitlines().index(lines[name]) + 1].strip()
        for name in ("missing", "refused", "socket")
    }
    assert all("unreachable" in lines[name] for name in detail)
    assert detail["missing"] == (
        'database "tandem_no_such_db" does not exist: check the name in the URL'
    )
    assert detail["refused"].startswith("connection refused: is Postgres running")
    assert detail["socket"] == "no Postgres socket there: check the host in the URL"


def test_the_service_refuses_a_writable_role_at_start_in_one_line(yours, tmp_path):
    writer = yours("tandem_c3: GRANT INSERT ON orders TO tandem_c3")
    env = {
        **clean_environ(),
        "SQL_DATABASES": f"sales={writer}",
        "SQL_DATABASE_TENANTS": "sales=acme",
        "SQL_PORT": "0",
        "TANDEM_DATA_DIR": str(tmp_path),
        "TANDEM_INSECURE_INTERNAL": "true",
    }
    done = subprocess.run(
        [sys.executable, "-m", "services.sql"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    plain = [line for line in done.stderr.splitlines() if line.startswith("tandem-sql:")]
    assert len(plain) == 1, done.stderr[-2000:]
    assert plain[0].startswith("tandem-sql: database 'sales': its role holds INSERT")
    assert "Traceback" not in done.stderr
