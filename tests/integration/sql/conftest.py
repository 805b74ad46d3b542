"""The demo warehouse in the session's embedded Postgres, and pools onto it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import psycopg_pool
import pytest

from services.sql import (
    AskPipeline,
    EngineLimits,
    SqlEngine,
    SqlGate,
    StatementRunner,
    Target,
    TargetConfig,
    TargetRegistry,
    Warehouse,
    demo_glossary,
    ensure_warehouse,
)
from services.sql.demo._warehouse import database_url

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def warehouse(pg_url: str) -> Warehouse:
    return asyncio.run(ensure_warehouse(pg_url))


@pytest.fixture(scope="session")
def owner_url(pg_url: str, warehouse: Warehouse) -> str:
    """The warehouse database as the superuser: for proving the other layers alone."""
    return database_url(pg_url, warehouse.database)


PoolFactory = Callable[[str], Awaitable[psycopg_pool.AsyncConnectionPool[Any]]]


@pytest.fixture
async def open_pool() -> AsyncIterator[PoolFactory]:
    """``await open_pool(url)``: a pool configured exactly like a target's, closed after."""
    targets: list[Target] = []

    async def make(url: str) -> psycopg_pool.AsyncConnectionPool[Any]:
        target = Target(TargetConfig("t", url, tenants=frozenset({"*"})), pool_max_size=2)
        await target.pool.open(wait=True, timeout=10)
        targets.append(target)
        return target.pool

    yield make
    for target in targets:
        await target.close()


@pytest.fixture
async def reader_target(warehouse: Warehouse) -> AsyncIterator[Target]:
    target = Target(
        TargetConfig(
            "warehouse",
            warehouse.reader_url,
            tenants=frozenset({"*"}),
            glossary=demo_glossary(),
        ),
        pool_max_size=2,
    )
    assert await target.open()
    await target.get_catalog()  # loaded in the background: these tests start from a loaded one
    yield target
    await target.close()


def make_engine(
    targets: TargetRegistry, ask: AskPipeline | None = None, **limits: Any
) -> SqlEngine:
    return SqlEngine(
        targets, gate=SqlGate(), runner=StatementRunner(), limits=EngineLimits(**limits), ask=ask
    )
