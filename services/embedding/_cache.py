"""Bounded LRU + TTL cache for query embeddings: repeated questions skip the model.

Entries are keyed by tenant and, inside a tenant, by the principal whose call stored them
(the view: ``services.common.Principal.canonical``, empty for a service key). A hit
answers in about 2 ms where the model takes 6-16 ms, and every Search reply reports its
embed time, so a cache shared by tenants would tell one tenant which phrases another
searched in the last hour (issue 46), and one person which phrases a colleague searched
(issue 47). A tenant's entries serve that tenant alone, a
principal's that principal alone; a phrase someone else searched is a miss like any
fresh one.

Memory is bounded twice: ``max_entries`` in all, and ``max_entries_per_tenant`` for any
one tenant, which evicts its own least recently used entry first. So one tenant flooding
fresh phrases churns its own share and can push out at most that share of the others'.
The share is the tenant's, whatever number of principals it names.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Clock = Callable[[], float]
# (tenant, view, model, text)
_Key = tuple[str, str, str, str]


@dataclass(frozen=True)
class CacheStats:
    """Counters since start; evictions are capacity drops, expirations are TTL drops."""

    hits: int
    misses: int
    evictions: int
    expirations: int
    size: int
    max_entries: int
    max_entries_per_tenant: int = 0
    tenants: int = 0


class QueryCache:
    """Maps (tenant, model, text) to a vector, for at most ``ttl_s``; at most
    ``max_entries`` entries in all and ``max_entries_per_tenant`` (default: all) per tenant.

    Used only from the event loop, so it takes no lock. ``max_entries=0`` disables it.
    """

    def __init__(
        self,
        max_entries: int,
        ttl_s: float,
        *,
        max_entries_per_tenant: int | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        if ttl_s < 0:
            raise ValueError(f"ttl_s must be >= 0, got {ttl_s}")
        per_tenant = max_entries if max_entries_per_tenant is None else max_entries_per_tenant
        if per_tenant < 0:
            raise ValueError(f"max_entries_per_tenant must be >= 0, got {per_tenant}")
        self._max_entries = max_entries
        self._per_tenant = min(per_tenant, max_entries)
        self._ttl_s = ttl_s
        self._clock = clock
        # every entry, least recently used first
        self._entries: OrderedDict[_Key, tuple[float, NDArray[np.float32]]] = OrderedDict()
        # each tenant's keys in the same order, to evict a tenant's own oldest first
        self._tenants: dict[str, OrderedDict[_Key, None]] = {}
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._expirations = 0

    @property
    def max_entries(self) -> int:
        """Capacity; 0 when the cache is disabled."""
        return self._max_entries if self.enabled else 0

    @property
    def max_entries_per_tenant(self) -> int:
        """The most entries one tenant may hold; 0 when the cache is disabled."""
        return self._per_tenant if self.enabled else 0

    @property
    def ttl_s(self) -> float:
        """How long an entry stays valid after it is stored."""
        return self._ttl_s

    @property
    def enabled(self) -> bool:
        """False when sized to zero entries or a zero TTL: every lookup misses."""
        return self._max_entries > 0 and self._per_tenant > 0 and self._ttl_s > 0

    def get(self, tenant: str, model: str, text: str, view: str = "") -> NDArray[np.float32] | None:
        """``tenant``'s cached vector stored under ``view`` (read-only, shared), or None
        on a miss or an expired entry. Another tenant's or view's entry is a miss."""
        key = (tenant, view, model, text)
        entry = self._entries.get(key)
        if entry is None:
            self._misses += 1
            return None
        expires_at, vector = entry
        if self._clock() >= expires_at:
            self._drop(key)
            self._expirations += 1
            self._misses += 1
            return None
        self._entries.move_to_end(key)
        self._tenants[tenant].move_to_end(key)
        self._hits += 1
        return vector

    def put(
        self, tenant: str, model: str, text: str, vector: NDArray[np.float32], view: str = ""
    ) -> None:
        """Stores a copy of ``vector`` for ``tenant`` under ``view``, evicting the tenant's
        own least recently used entry when its share is full, else the least recently used
        of all."""
        if not self.enabled:
            return
        # a private read-only copy: a caller mutating its result must not poison the cache
        stored = np.array(vector, dtype=np.float32, copy=True)
        stored.flags.writeable = False
        key = (tenant, view, model, text)
        held = self._tenants.get(tenant)
        while held and key not in held and len(held) >= self._per_tenant:
            self._drop(next(iter(held)))
            self._evictions += 1
        own = self._tenants.setdefault(tenant, OrderedDict())
        self._entries[key] = (self._clock() + self._ttl_s, stored)
        self._entries.move_to_end(key)
        own[key] = None
        own.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._drop(next(iter(self._entries)))
            self._evictions += 1

    def clear(self) -> None:
        """Drops every entry; counters keep counting."""
        self._entries.clear()
        self._tenants.clear()

    def stats(self) -> CacheStats:
        """A snapshot of the counters and the current size."""
        return CacheStats(
            hits=self._hits,
            misses=self._misses,
            evictions=self._evictions,
            expirations=self._expirations,
            size=len(self._entries),
            max_entries=self._max_entries,
            max_entries_per_tenant=self._per_tenant,
            tenants=len(self._tenants),
        )

    def _drop(self, key: _Key) -> None:
        del self._entries[key]
        own = self._tenants[key[0]]
        del own[key]
        if not own:
            del self._tenants[key[0]]

    def __len__(self) -> int:
        return len(self._entries)
