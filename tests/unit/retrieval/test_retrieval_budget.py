"""The per-tenant ingest budget: a tenant's calls share it, other tenants have their own."""

from __future__ import annotations

import asyncio

import pytest

from services.retrieval._budget import TenantBudget


async def test_a_tenants_calls_share_its_slots_and_others_are_not_held_back() -> None:
    budget = TenantBudget(2)
    running: dict[str, int] = {"a": 0, "b": 0}
    most: dict[str, int] = {"a": 0, "b": 0}
    release = asyncio.Event()

    async def unit(tenant: str) -> None:
        async with budget.slot(tenant):
            running[tenant] += 1
            most[tenant] = max(most[tenant], running[tenant])
            await release.wait()
            running[tenant] -= 1

    # Tenant a: three "calls" of two batches each; tenant b: one batch.
    tasks = [asyncio.create_task(unit("a")) for _ in range(6)]
    tasks.append(asyncio.create_task(unit("b")))
    await asyncio.sleep(0.01)
    assert running == {"a": 2, "b": 1}  # a at its limit, b unaffected by a's queue
    assert budget.in_use("a") == 6
    release.set()
    await asyncio.gather(*tasks)
    assert most == {"a": 2, "b": 1}
    assert budget.in_use("a") == budget.in_use("b") == 0  # idle tenants cost nothing


async def test_a_failed_unit_gives_its_slot_back() -> None:
    budget = TenantBudget(1)
    with pytest.raises(RuntimeError):
        async with budget.slot("a"):
            raise RuntimeError("embedding failed")
    async with asyncio.timeout(1), budget.slot("a"):
        pass


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match=">= 1"):
        TenantBudget(0)
