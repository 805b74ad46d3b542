"""The answer memory remembers, for a short while, that a tenant has no confirmed pairs on
a database: most tenants teach nothing on most databases, and every question asked
Postgres so (a transaction of four statements, a tenth of the SQL service's CPU per
question). Two stores on one Postgres stand for two replicas of the SQL service."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from services.sql import MemorySettings
from services.sql.memory._answers import open_memory
from services.sql.memory._store import MemoryStore, PairSource

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _store(pg_url: str, tmp_path, clock: Clock, ttl: float) -> MemoryStore:
    opened = await open_memory(pg_url, tmp_path, MemorySettings(empty_ttl_s=ttl))
    # the same store, on a clock the test turns
    store = MemoryStore(
        opened.database,
        retention_days=365,
        answer_retention_days=30,
        empty_ttl_s=ttl,
        clock=clock,
    )
    return store


async def _teach(store: MemoryStore, tenant: str, database: str) -> None:
    await store.save_pair(
        tenant,
        database=database,
        question="How many companies are there?",
        template="how many companies are there",
        sql="SELECT count(*) FROM companies",
        source=PairSource.TAUGHT,
        embedding=np.ones(384, dtype=np.float32) / np.sqrt(384),
        model_name="test-model",
    )


async def test_no_pairs_is_remembered_for_the_ttl_and_a_local_teach_clears_it(pg_url, tmp_path):
    clock = Clock()
    here = await _store(pg_url, tmp_path, clock, ttl=2.0)
    there = await _store(pg_url, tmp_path, clock, ttl=2.0)  # another replica
    tenant = f"e-{uuid.uuid4().hex[:10]}"
    try:
        assert not (await here.survey(tenant, "demo", "t")).pairs
        await _teach(there, tenant, "demo")
        # within the TTL this replica has not looked again: the other's pair is not seen
        clock.now += 1.0
        assert not (await here.survey(tenant, "demo", "t")).pairs
        # past it, it is
        clock.now += 1.5
        assert len((await here.survey(tenant, "demo", "t")).pairs) == 1
        # a pair taught through this replica is seen at once
        assert not (await here.survey(tenant, "other", "t")).pairs
        await _teach(here, tenant, "other")
        assert len((await here.survey(tenant, "other", "t")).pairs) == 1
    finally:
        await here.close()
        await there.close()


async def test_a_ttl_of_zero_always_looks(pg_url, tmp_path):
    clock = Clock()
    here = await _store(pg_url, tmp_path, clock, ttl=0.0)
    there = await _store(pg_url, tmp_path, clock, ttl=0.0)
    tenant = f"e-{uuid.uuid4().hex[:10]}"
    try:
        assert not (await here.survey(tenant, "demo", "t")).pairs
        await _teach(there, tenant, "demo")
        assert len((await here.survey(tenant, "demo", "t")).pairs) == 1
    finally:
        await here.close()
        await there.close()
