"""Several target databases, each with its own read-only pool and catalog."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from services.common import InvalidArgument, PermissionDenied, Unavailable
from services.sql import GateRule, Target, TargetConfig, TargetRegistry, grant_read_only
from services.sql._targets import WritableTargetError
from services.sql._warehouse import database_url, ensure_reader_role
from tests.integration.sql.conftest import make_engine

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
            Target(TargetConfig("warehouse", warehouse.reader_url), pool_max_size=2),
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


async def test_a_user_that_can_write_is_refused_unless_allowed(pg_url):
    admin = database_url(pg_url, "tandem_finance")  # the superuser can write
    refused = TargetRegistry([Target(TargetConfig("finance", admin), pool_max_size=1)], "finance")
    with pytest.raises(WritableTargetError, match="SQL_ALLOW_WRITABLE"):
        await refused.open()
    await refused.close()
    allowed = TargetRegistry(
        [Target(TargetConfig("finance", admin, allow_writable=True), pool_max_size=1)], "finance"
    )
    await allowed.open()
    assert (await allowed.get("finance").get_catalog()).table("invoices") is not None
    await allowed.close()


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
