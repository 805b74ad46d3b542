"""QueryCache: LRU order, TTL expiry on an injected clock, counters."""

from __future__ import annotations

import numpy as np
import pytest

from services.embedding import QueryCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def vec(value: float) -> np.ndarray:
    return np.full(3, value, dtype=np.float32)


def test_miss_then_hit_counts() -> None:
    cache = QueryCache(10, 60, clock=FakeClock())
    assert cache.get("m", "q") is None
    cache.put("m", "q", vec(1))
    hit = cache.get("m", "q")
    assert hit is not None
    np.testing.assert_array_equal(hit, vec(1))
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.size) == (1, 1, 1)


def test_key_includes_model() -> None:
    cache = QueryCache(10, 60, clock=FakeClock())
    cache.put("model-a", "q", vec(1))
    assert cache.get("model-b", "q") is None
    assert cache.get("model-a", "q") is not None


def test_entry_expires_at_ttl() -> None:
    clock = FakeClock()
    cache = QueryCache(10, 60, clock=clock)
    cache.put("m", "q", vec(1))
    clock.now += 59.9
    assert cache.get("m", "q") is not None
    clock.now += 0.1
    assert cache.get("m", "q") is None
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.expirations, stats.size) == (1, 1, 1, 0)


def test_put_refreshes_ttl() -> None:
    clock = FakeClock()
    cache = QueryCache(10, 60, clock=clock)
    cache.put("m", "q", vec(1))
    clock.now += 50
    cache.put("m", "q", vec(2))
    clock.now += 50
    hit = cache.get("m", "q")
    assert hit is not None
    np.testing.assert_array_equal(hit, vec(2))


def test_evicts_least_recently_used() -> None:
    cache = QueryCache(2, 60, clock=FakeClock())
    cache.put("m", "a", vec(1))
    cache.put("m", "b", vec(2))
    assert cache.get("m", "a") is not None  # "a" is now the most recently used
    cache.put("m", "c", vec(3))
    assert cache.get("m", "b") is None
    assert cache.get("m", "a") is not None
    assert cache.get("m", "c") is not None
    stats = cache.stats()
    assert (stats.evictions, stats.size, stats.max_entries) == (1, 2, 2)


def test_stored_vector_is_a_read_only_copy() -> None:
    cache = QueryCache(10, 60, clock=FakeClock())
    original = vec(1)
    cache.put("m", "q", original)
    original[:] = 9
    hit = cache.get("m", "q")
    assert hit is not None
    np.testing.assert_array_equal(hit, vec(1))
    with pytest.raises(ValueError, match="read-only"):
        hit[0] = 5


@pytest.mark.parametrize(("size", "ttl"), [(0, 60), (10, 0)])
def test_zero_size_or_ttl_disables(size: int, ttl: float) -> None:
    cache = QueryCache(size, ttl, clock=FakeClock())
    cache.put("m", "q", vec(1))
    assert not cache.enabled
    assert cache.get("m", "q") is None
    assert len(cache) == 0


def test_rejects_negative_bounds() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        QueryCache(-1, 60)
    with pytest.raises(ValueError, match="ttl_s"):
        QueryCache(1, -1)
