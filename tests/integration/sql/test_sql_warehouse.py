"""The demo warehouse: deterministic, idempotent, commented, and read through a
SELECT-only role that has no way to write and no access to anything else."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from services.common import apply_migrations
from services.sql import ensure_warehouse, introspect, role_capabilities
from services.sql.catalog import _catalog as catalog_module
from services.sql.catalog._catalog import render
from services.sql.demo import data as demo_data
from services.sql.demo._warehouse import SCHEMA, database_url

pytestmark = pytest.mark.integration

_CHECKSUM = """
SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM {} AS t
"""


async def _checksums(url: str) -> dict[str, str]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        found = {}
        for table in SCHEMA:
            query = psycopg.sql.SQL(_CHECKSUM).format(psycopg.sql.Identifier(table.name))
            row = await (await conn.execute(query)).fetchone()
            assert row is not None
            found[table.name] = row[0]
        return found


async def test_rows_match_the_generator(warehouse, owner_url):
    data = demo_data.generate()
    async with await psycopg.AsyncConnection.connect(owner_url) as conn:
        for table, expected in [
            ("companies", len(data.companies)),
            ("contacts", len(data.contacts)),
            ("opportunities", len(data.opportunities)),
            ("activities", len(data.activities)),
        ]:
            query = psycopg.sql.SQL("SELECT count(*) FROM {}").format(psycopg.sql.Identifier(table))
            assert await (await conn.execute(query)).fetchone() == (expected,)


async def test_creation_is_deterministic_and_idempotent(pg_url, warehouse, owner_url):
    again = await asyncio.gather(*(ensure_warehouse(pg_url) for _ in range(3)))
    assert [w.loaded for w in again] == [False, False, False]
    copy = await ensure_warehouse(pg_url, database="tandem_warehouse_copy")
    assert copy.loaded
    assert await _checksums(owner_url) == await _checksums(
        database_url(pg_url, "tandem_warehouse_copy")
    )


async def test_every_table_and_column_is_commented(warehouse):
    async with await psycopg.AsyncConnection.connect(warehouse.reader_url) as conn:
        catalog = await introspect(conn, "warehouse")
    assert {t.name for t in catalog.tables} == {t.name for t in SCHEMA}
    for table in catalog.tables:
        assert table.comment and table.row_estimate > 0 and table.primary_key
        for column in table.columns:
            assert column.comment, f"{table.name}.{column.name}"
    opportunities = catalog.table("opportunities")
    assert opportunities is not None
    assert {fk.referenced_table for fk in opportunities.foreign_keys} == {
        "public.companies", "public.owners", "public.products",
    }  # fmt: skip
    stage = opportunities.column("stage")
    assert stage is not None and set(stage.sample_values) == set(demo_data.STAGES)
    regions = catalog.table("regions")
    region_name = regions.column("name") if regions else None
    assert region_name is not None and "EMEA" in region_name.sample_values


async def test_reader_role_holds_select_only(warehouse):
    async with await psycopg.AsyncConnection.connect(warehouse.reader_url, autocommit=True) as conn:
        assert await role_capabilities(conn) == []
        row = await (await conn.execute("SHOW default_transaction_read_only")).fetchone()
        assert row == ("on",)
        # The role may switch its read-only default off itself (a known trap)...
        await conn.execute("SET default_transaction_read_only = off")
        refused = [
            "CREATE TEMP TABLE t (a int)",
            "DELETE FROM companies",
            "SELECT * FROM tandem_internal.warehouse_info",
            "SELECT lo_create(0)",
            "SELECT pg_advisory_lock(1)",
            "SELECT pg_notify('c', 'x')",
            "SELECT set_config('statement_timeout', '0', false)",
            "CREATE TABLE public.t (a int)",
        ]
        for statement in refused:  # ...but its grants alone still refuse every write
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await conn.execute(statement)


async def test_reader_role_cannot_see_the_retrieval_tables(pg_url, warehouse):
    await apply_migrations(pg_url, [])  # the core tables (tenants) live here
    reader_on_core = psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="postgres")
    async with await psycopg.AsyncConnection.connect(reader_on_core) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute("SELECT * FROM tenants")


async def test_the_value_index_holds_varied_names_and_stays_out_of_prompts(warehouse, monkeypatch):
    async with await psycopg.AsyncConnection.connect(warehouse.reader_url) as conn:
        catalog = await introspect(conn, "warehouse")
    data = demo_data.generate(demo_data.DEFAULT_SEED, demo_data.ANCHOR_DATE)
    companies = catalog.table("companies")
    name = companies.column("name") if companies else None
    assert name is not None and not name.sample_values  # too varied to sample
    assert set(name.known_values) == {c.name for c in data.companies}
    notes = catalog.table("activities")
    assert notes is not None and all(not c.known_values for c in notes.columns if c.name == "notes")
    # a prompt never lists the index (it is for linking, not for models to read)
    rendered = render(catalog, max_chars=100_000).text
    assert data.companies[0].name not in rendered
    # over the cap (even where the planner's estimate said otherwise), a column is left
    # out rather than half indexed
    monkeypatch.setattr(catalog_module, "VALUE_INDEX_DISTINCT_MAX", 10)
    monkeypatch.setattr(catalog_module, "_indexable", lambda n_distinct, estimate: True)
    async with await psycopg.AsyncConnection.connect(warehouse.reader_url) as conn:
        capped = await introspect(conn, "warehouse")
    capped_companies = capped.table("companies")
    assert capped_companies is not None
    assert all(not c.known_values for c in capped_companies.columns)
