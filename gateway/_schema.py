"""The gateway's database: its migrations, and the entry point tools administer keys by.

``tandem keys`` and ``tandem run`` issue and revoke keys on the same tables the gateway
verifies them from; they open the store through ``key_administration`` rather than
assembling the pool, the migrations and the pepper themselves, so the gateway alone
decides how its keys are stored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from gateway._keys import ApiKeys
from gateway._settings import key_pepper
from services.common import Database, Migration, load_migrations


def migrations() -> list[Migration]:
    """The gateway component's schema migrations (API keys, conversations)."""
    return load_migrations("gateway", "gateway.migrations")


@asynccontextmanager
async def key_administration(url: str) -> AsyncIterator[ApiKeys]:
    """The API keys stored in the database at ``url``, migrated first, on one connection
    that is closed when the block ends."""
    database = Database(url, min_size=1, max_size=1, vector=False)
    await database.open(migrations())
    try:
        yield ApiKeys(database, key_pepper())
    finally:
        await database.close()
