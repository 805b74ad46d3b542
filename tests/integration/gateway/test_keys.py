"""API keys on the real embedded Postgres: hashed at rest, verified, revoked at once."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from gateway import ALL_SCOPES, KEY_PREFIX, ApiKeys, Scope
from services.common import (
    Database,
    PermissionDenied,
    TandemError,
    Unauthenticated,
    load_migrations,
)

pytestmark = pytest.mark.integration


@pytest.fixture
async def keys(pg_url) -> AsyncIterator[ApiKeys]:
    db = Database(pg_url, min_size=1, max_size=2)
    await db.open(load_migrations("gateway", "gateway.migrations"))
    yield ApiKeys(db, pepper=b"p" * 32)
    await db.close()


async def test_key_is_prefixed_random_and_stored_only_as_hmac(keys, pg_url):
    issued = await keys.create("acme", label="backend")
    other = await keys.create("acme")
    assert issued.secret.startswith(KEY_PREFIX)
    assert issued.secret != other.secret
    assert await keys.verify(issued.secret) == "acme"
    secret_part = issued.secret.rsplit("_", 1)[1]
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute("SELECT row_to_json(k)::text FROM api_keys k")
        dump = " ".join(row[0] for row in await cur.fetchall())
    assert secret_part not in dump and issued.secret not in dump


@pytest.mark.parametrize(
    "presented", [None, "", "Bearer x", "tdm_aaaaaaaaaaaaaaaa_" + "A" * 43, "sk-123"]
)
async def test_missing_malformed_and_unknown_keys_are_unauthenticated(keys, presented):
    with pytest.raises(Unauthenticated) as err:
        await keys.verify(presented)
    assert err.value.reason == ("API_KEY_MISSING" if not presented else "API_KEY_INVALID")


async def test_tampered_secret_is_refused(keys):
    issued = await keys.create("acme")
    tampered = issued.secret[:-1] + ("A" if issued.secret[-1] != "A" else "B")
    with pytest.raises(Unauthenticated):
        await keys.verify(tampered)


async def test_revoked_key_stops_working_at_once(keys):
    issued = await keys.create("globex")
    assert await keys.verify(issued.secret) == "globex"
    await keys.revoke(issued.key_id)
    with pytest.raises(Unauthenticated):
        await keys.verify(issued.secret)
    listed = [k for k in await keys.list("globex") if k.key_id == issued.key_id]
    assert listed[0].revoked_at is not None


async def test_keys_made_before_scopes_keep_every_scope_and_new_ones_ask_only(pg_url):
    # Upgrading must not lock out a running deployment's keys: they could do everything
    # before scopes existed. A key created afterwards asks unless given more.
    scratch = f"keys_upgrade_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(f'CREATE DATABASE "{scratch}"')
    url = make_conninfo(pg_url, dbname=scratch)
    migrations = load_migrations("gateway", "gateway.migrations")
    old = Database(url, min_size=1, max_size=1, vector=False)
    await old.open([m for m in migrations if m.version < 4])
    old_keys = ApiKeys(old, pepper=b"p" * 32)
    async with old.connection() as conn:
        await conn.execute("INSERT INTO tenants (tenant_id) VALUES ('acme')")
        await conn.execute(
            "INSERT INTO api_keys (key_id, tenant_id, secret_hmac) VALUES (%s, %s, %s)",
            ("a" * 16, "acme", old_keys._hmac("s" * 43)),
        )
    await old.close()
    new = Database(url, min_size=1, max_size=1, vector=False)
    await new.open(migrations)
    try:
        keys = ApiKeys(new, pepper=b"p" * 32)
        fresh = await keys.create("acme")
        scopes = {r.key_id: r.scopes for r in await keys.list("acme")}
        assert scopes == {"a" * 16: ALL_SCOPES, fresh.key_id: (Scope.ASK,)}
        legacy = f"{KEY_PREFIX}{'a' * 16}_{'s' * 43}"
        assert (await keys.authorize(legacy, Scope.TEACH)).tenant == "acme"
        with pytest.raises(PermissionDenied):
            await keys.authorize(fresh.secret, Scope.INGEST)
        with pytest.raises(TandemError, match="23514"):  # the CHECK: known scopes only
            async with new.connection() as conn:
                await conn.execute("UPDATE api_keys SET scopes = '{root}'")
    finally:
        await new.close()
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            await conn.execute(f'DROP DATABASE "{scratch}" WITH (FORCE)')
