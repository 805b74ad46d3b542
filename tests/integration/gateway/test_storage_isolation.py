"""Tenant isolation at the storage layer: row-level security on the retrieval tables, as
the role the retrieval service really connects with. A query that forgets its tenant
filter still sees only the tenant set for its transaction, and none without one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg import errors

from services.retrieval._repository import APP_ROLE, app_conninfo
from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.retrieval.stack import Retrieval, ingest, new_tenant

pytestmark = pytest.mark.integration

TABLES = ("retrieval_documents", "retrieval_chunks")


def _doc(document_id: str, text: str) -> pb.DocumentInput:
    return pb.DocumentInput(document_id=document_id, text=text, title=document_id)


@pytest.fixture
async def two_tenants(retrieval: Retrieval, pg_url: str) -> tuple[str, str]:
    acme, globex = new_tenant(pg_url, "acme"), new_tenant(pg_url, "globex")
    await ingest(retrieval.stub, acme, [_doc("a1", "Acme renewal notes."), _doc("a2", "Acme SSO.")])
    await ingest(retrieval.stub, globex, [_doc("g1", "Globex pricing call notes.")])
    return acme, globex


@pytest.fixture
async def app(pg_url: str) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    """A connection exactly as the service makes it: the application role."""
    async with await psycopg.AsyncConnection.connect(app_conninfo(pg_url)) as conn:
        yield conn


async def test_the_service_queries_as_the_unprivileged_application_role(retrieval, pg_url):
    async with retrieval.database.connection() as conn:
        cur = await conn.execute("SELECT current_user")
        assert (await cur.fetchone()) == (APP_ROLE,)
    async with await psycopg.AsyncConnection.connect(pg_url) as admin:
        cur = await admin.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole FROM pg_roles WHERE rolname = %s",
            (APP_ROLE,),
        )
        assert (await cur.fetchone()) == (False, False, False)
        for table in TABLES:
            cur = await admin.execute(
                "SELECT pg_get_userbyid(relowner), relrowsecurity, relforcerowsecurity "
                "FROM pg_class WHERE oid = %s::regclass",
                (table,),
            )
            owner, enabled, forced = await cur.fetchone()  # type: ignore[misc]
            assert owner != APP_ROLE and enabled and forced


async def test_a_query_without_a_tenant_filter_sees_only_the_current_tenant(two_tenants, app):
    acme, globex = two_tenants
    for tenant, documents in ((acme, ["a1", "a2"]), (globex, ["g1"])):
        async with app.transaction():
            await app.execute("SELECT set_config('tandem.tenant_id', %s, true)", (tenant,))
            # Deliberately no WHERE tenant_id = ...: the policy is the only filter.
            cur = await app.execute("SELECT document_id FROM retrieval_documents ORDER BY 1")
            assert [r[0] for r in await cur.fetchall()] == documents
            cur = await app.execute("SELECT DISTINCT tenant_id FROM retrieval_chunks")
            assert [r[0] for r in await cur.fetchall()] == [tenant]


async def test_without_a_tenant_setting_nothing_is_visible(two_tenants, app):
    for table in TABLES:
        cur = await app.execute(f"SELECT count(*) FROM {table}")
        assert (await cur.fetchone()) == (0,)


async def test_other_tenants_rows_can_be_neither_changed_nor_written(two_tenants, app):
    acme, globex = two_tenants
    async with app.transaction():
        await app.execute("SELECT set_config('tandem.tenant_id', %s, true)", (acme,))
        cur = await app.execute("DELETE FROM retrieval_chunks")
        deleted_chunks = cur.rowcount
        cur = await app.execute("UPDATE retrieval_documents SET title = 'x' WHERE true")
        assert cur.rowcount == 2  # acme's own two documents, nothing of globex
        assert deleted_chunks >= 2
        raise psycopg.Rollback()
    with pytest.raises(errors.InsufficientPrivilege):
        async with app.transaction():
            await app.execute("SELECT set_config('tandem.tenant_id', %s, true)", (acme,))
            await app.execute(
                "INSERT INTO retrieval_documents (tenant_id, document_id, content_sha256, "
                "fingerprint, model_name, chunk_count, char_count) "
                "VALUES (%s, 'planted', '', '', 'm', 0, 0)",
                (globex,),
            )
    async with app.transaction():
        await app.execute("SELECT set_config('tandem.tenant_id', %s, true)", (globex,))
        cur = await app.execute("SELECT count(*) FROM retrieval_chunks")
        row = await cur.fetchone()
        assert row is not None and row[0] >= 1


async def test_the_application_role_cannot_switch_isolation_off(app):
    for statements in (
        ["ALTER TABLE retrieval_chunks DISABLE ROW LEVEL SECURITY"],
        ["DROP POLICY retrieval_chunks_tenant ON retrieval_chunks"],
        # With row_security off, a query that a policy would filter fails instead.
        ["SET LOCAL row_security = off", "SELECT count(*) FROM retrieval_chunks"],
    ):
        with pytest.raises(errors.InsufficientPrivilege):
            async with app.transaction():
                for statement in statements:
                    await app.execute(statement)
