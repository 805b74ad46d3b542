"""Per-tenant budgets: how much ingest work one tenant may have in flight at once.

One ingest call already keeps at most ``RETRIEVAL_EMBED_CONCURRENCY`` passage batches at
the embedding service; without a budget per tenant, a tenant that opens ten calls gets
ten times that, and the embedding lane every other tenant's ingest shares fills with its
work. The budget counts across all of a tenant's calls in this process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class TenantBudget:
    """At most ``limit`` units of work in flight per tenant, whichever call they are for."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self._limit = limit
        # per tenant: its semaphore and how many units hold or wait for it
        self._slots: dict[str, tuple[asyncio.Semaphore, int]] = {}

    @asynccontextmanager
    async def slot(self, tenant_id: str) -> AsyncIterator[None]:
        """Hold one of ``tenant_id``'s slots for the body (waits while all are taken)."""
        semaphore, users = self._slots.get(tenant_id, (asyncio.Semaphore(self._limit), 0))
        self._slots[tenant_id] = (semaphore, users + 1)
        try:
            async with semaphore:
                yield
        finally:
            semaphore, users = self._slots[tenant_id]
            if users == 1:
                del self._slots[tenant_id]  # an idle tenant costs nothing
            else:
                self._slots[tenant_id] = (semaphore, users - 1)

    def in_use(self, tenant_id: str) -> int:
        """Units holding or waiting for ``tenant_id``'s slots (for tests and metrics)."""
        return self._slots.get(tenant_id, (None, 0))[1]
