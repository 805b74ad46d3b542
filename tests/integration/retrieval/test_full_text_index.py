"""Full-text candidates come through the full-text index as the service's role.

Row-level security keeps a condition whose function is not LEAKPROOF (`@@` is not) from
using an index: the tiers matched every chunk of the tenant one by one (211 ms instead
of 16 on a 78 300-chunk tenant). Migration 0008 finds them through
``retrieval_text_candidates``, which runs as the owner and states the tenant rule
itself. The tests run on a database owned by a plain role (the policies forced on it,
as on a managed server), with sequential scans disabled and the tenant's B-tree indexes
dropped, so that the full-text index is the planner's one way not to read every chunk;
they read the transaction's own counters. Before 0008 the index scans were 0.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from services.common import apply_migrations
from services.retrieval import RetrievalSettings
from services.retrieval._repository import _search_statement, app_conninfo, migrations
from services.retrieval._search import search_plan
from services.retrieval._types import SearchMode

pytestmark = pytest.mark.integration

_COUNTERS = """
    SELECT pg_stat_get_xact_numscans('retrieval_chunks_tsv'::regclass),
           (SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'retrieval_chunks')
"""
_SETTINGS = (
    "SELECT set_config('tandem.tenant_id', %s, true), set_config('enable_seqscan', 'off', true)"
)


async def _counters(conn: psycopg.AsyncConnection[Any]) -> tuple[int, int]:
    cur = await conn.execute(_COUNTERS)
    row = await cur.fetchone()
    assert row is not None
    return int(row[0] or 0), int(row[1] or 0)


@pytest.fixture
async def owned_by_a_plain_role(pg_url: str) -> AsyncIterator[str]:
    """A database whose retrieval tables belong to a role that is not a superuser, as
    on a managed server: the policies are forced on the owner too. Yields its URL."""
    name = f"tandem_owner_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS CREATEROLE").format(
                sql.Identifier(name)
            )
        )
        await admin.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(name)
            )
        )
    # pgvector is not a trusted extension: a superuser installs it, as an operator would.
    server = make_conninfo(pg_url, dbname=name)
    async with await psycopg.AsyncConnection.connect(server, autocommit=True) as admin:
        await admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
    params = conninfo_to_dict(server)
    params.pop("password", None)
    owner = make_conninfo("", **{**params, "user": name})
    await apply_migrations(owner, migrations())
    async with await psycopg.AsyncConnection.connect(owner) as conn:
        await _store(conn, "acme", ["lens surgery notes", "lens pricing", "renewal call"])
        await _store(conn, "globex", ["lens surgery at globex"])
        await conn.execute("DROP INDEX retrieval_chunks_tenant_category")
        await conn.execute(
            "ALTER TABLE retrieval_chunks "
            "DROP CONSTRAINT retrieval_chunks_tenant_id_document_id_ordinal_key"
        )
        await conn.commit()
    try:
        yield owner
    finally:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute(
                sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name))
            )
            await admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


async def _store(conn: psycopg.AsyncConnection[Any], tenant: str, texts: list[str]) -> None:
    vector = "[" + ",".join(str(x) for x in np.full(384, 0.05)) + "]"
    async with conn.transaction():
        await conn.execute("SELECT set_config('tandem.tenant_id', %s, true)", (tenant,))
        await conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (tenant,))
        await conn.execute(
            "INSERT INTO retrieval_documents (tenant_id, document_id, content_sha256, "
            "fingerprint, model_name, chunk_count, char_count) "
            "VALUES (%s, 'd', '', '', 'm', %s, 0)",
            (tenant, len(texts)),
        )
        for ordinal, text in enumerate(texts):
            await conn.execute(
                "INSERT INTO retrieval_chunks (chunk_id, tenant_id, document_id, ordinal, "
                "body, model_name, embedding) VALUES (%s, %s, 'd', %s, %s, 'm', %s)",
                (uuid.uuid4(), tenant, ordinal, text, vector),
            )


async def test_candidates_use_the_index_and_stay_in_the_tenant(
    owned_by_a_plain_role,
):
    owner = owned_by_a_plain_role
    candidates = (
        "SELECT count(*) FROM retrieval_text_candidates("
        "plainto_tsquery('english', 'lens'), plainto_tsquery('english', %s), "
        "NULL, NULL, NULL, NULL)"
    )
    async with await psycopg.AsyncConnection.connect(app_conninfo(owner)) as app:
        async with app.transaction():
            await app.execute(_SETTINGS, ("acme",))
            cur = await app.execute(candidates, ("",))
            matched = await cur.fetchone()
            cur = await app.execute(candidates, ("surgery",))
            without_surgery = await cur.fetchone()
            index_scans, sequential_scans = await _counters(app)
        assert matched == (2,), "acme's two lens chunks, none of globex's"
        assert without_surgery == (1,)
        assert index_scans >= 1 and sequential_scans == 0
        async with app.transaction():  # no tenant set: nothing
            cur = await app.execute(candidates, ("",))
            assert await cur.fetchone() == (0,)
    # The owner reads past the policy only to read: writing stays forced to the tenant.
    async with await psycopg.AsyncConnection.connect(owner) as conn, conn.transaction():
        cur = await conn.execute("DELETE FROM retrieval_chunks")
        assert cur.rowcount == 0


async def test_the_search_statement_reaches_the_full_text_index(owned_by_a_plain_role):
    settings = RetrievalSettings()
    plan = search_plan(
        settings,
        tenant_id="acme",
        mode=SearchMode.SPARSE,
        query="lens surgery",
        vector=None,
        model_name="m",
        depth=settings.default_candidate_depth,
        limit=10,
        ef_search=settings.default_ef_search,
    )
    statement, params = _search_statement(plan)
    app_url = app_conninfo(owned_by_a_plain_role)
    async with await psycopg.AsyncConnection.connect(app_url) as app, app.transaction():
        await app.execute(_SETTINGS, ("acme",))
        cur = await app.execute(statement, params)
        rows = [r for r in await cur.fetchall() if r[1] is not None]
        index_scans, sequential_scans = await _counters(app)
    assert len(rows) == 2, "acme's two lens chunks"
    assert index_scans >= 1, "the full-text tiers did not use the full-text index"
    assert sequential_scans == 0


async def test_a_restricted_document_stays_hidden_when_the_owner_is_not_a_superuser(
    owned_by_a_plain_role,
):
    """The forbidden set (migration 0009) runs as the owner: on a managed server, where
    the owner is bound by the tenant policies, it must still see the restricted rows it
    lists, and the candidates must still drop them."""
    owner = owned_by_a_plain_role
    async with await psycopg.AsyncConnection.connect(owner) as conn, conn.transaction():
        await conn.execute("SELECT set_config('tandem.tenant_id', 'acme', true)")
        await conn.execute(
            "UPDATE retrieval_documents SET acl_principals = '{}', acl_groups = '{hr}'"
        )
    candidates = (
        "SELECT count(*) FROM retrieval_text_candidates("
        "plainto_tsquery('english', 'lens'), NULL, NULL, NULL, NULL, NULL)"
    )
    visible = "SELECT count(*) FROM retrieval_chunks"
    readers = {
        "": 0,  # no reader at all: fail closed
        "set_config('tandem.principal', 'bob', true), set_config('tandem.groups', '{hr}', true)": 2,
        "set_config('tandem.principal', 'eve', true), set_config('tandem.groups', '{x}', true)": 0,
        "set_config('tandem.full_view', 'on', true)": 2,
    }
    async with await psycopg.AsyncConnection.connect(app_conninfo(owner)) as app:
        for reader, lens_chunks in readers.items():
            async with app.transaction():
                extra = f", {reader}" if reader else ""
                await app.execute(f"SELECT set_config('tandem.tenant_id', 'acme', true){extra}")
                assert await (await app.execute(candidates)).fetchone() == (lens_chunks,)
                chunks = await (await app.execute(visible)).fetchone()
                assert chunks == ((3,) if lens_chunks else (0,))
