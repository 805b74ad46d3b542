"""API keys on the real embedded Postgres: hashed at rest, verified, revoked at once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from gateway import KEY_PREFIX, ApiKeys
from services.common import Database, Unauthenticated, load_migrations

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
