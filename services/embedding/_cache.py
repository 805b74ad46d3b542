"""Bounded LRU + TTL cache for query embeddings: repeated questions skip the model."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Clock = Callable[[], float]


@dataclass(frozen=True)
class CacheStats:
    """Counters since start; evictions are capacity drops, expirations are TTL drops."""

    hits: int
    misses: int
    evictions: int
    expirations: int
    size: int
    max_entries: int


class QueryCache:
    """Maps (model, text) to a vector, for at most ``ttl_s`` and ``max_entries`` entries.

    Used only from the event loop, so it takes no lock. ``max_entries=0`` disables it.
    """

    def __init__(self, max_entries: int, ttl_s: float, *, clock: Clock = time.monotonic) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        if ttl_s < 0:
            raise ValueError(f"ttl_s must be >= 0, got {ttl_s}")
        self._max_entries = max_entries
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], tuple[float, NDArray[np.float32]]] = (
            OrderedDict()
        )
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._expirations = 0

    @property
    def max_entries(self) -> int:
        """Capacity; 0 when the cache is disabled."""
        return self._max_entries if self.enabled else 0

    @property
    def ttl_s(self) -> float:
        """How long an entry stays valid after it is stored."""
        return self._ttl_s

    @property
    def enabled(self) -> bool:
        """False when sized to zero entries or a zero TTL: every lookup misses."""
        return self._max_entries > 0 and self._ttl_s > 0

    def get(self, model: str, text: str) -> NDArray[np.float32] | None:
        """The cached vector (read-only, shared), or None on a miss or an expired entry."""
        key = (model, text)
        entry = self._entries.get(key)
        if entry is None:
            self._misses += 1
            return None
        expires_at, vector = entry
        if self._clock() >= expires_at:
            del self._entries[key]
            self._expirations += 1
            self._misses += 1
            return None
        self._entries.move_to_end(key)
        self._hits += 1
        return vector

    def put(self, model: str, text: str, vector: NDArray[np.float32]) -> None:
        """Stores a copy of ``vector``, evicting the least recently used entry when full."""
        if not self.enabled:
            return
        # a private read-only copy: a caller mutating its result must not poison the cache
        stored = np.array(vector, dtype=np.float32, copy=True)
        stored.flags.writeable = False
        key = (model, text)
        self._entries[key] = (self._clock() + self._ttl_s, stored)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
            self._evictions += 1

    def clear(self) -> None:
        """Drops every entry; counters keep counting."""
        self._entries.clear()

    def stats(self) -> CacheStats:
        """A snapshot of the counters and the current size."""
        return CacheStats(
            hits=self._hits,
            misses=self._misses,
            evictions=self._evictions,
            expirations=self._expirations,
            size=len(self._entries),
            max_entries=self._max_entries,
        )

    def __len__(self) -> int:
        return len(self._entries)
