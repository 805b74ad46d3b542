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
    assert cache.get("t", "m", "q") is None
    cache.put("t", "m", "q", vec(1))
    hit = cache.get("t", "m", "q")
    assert hit is not None
    np.testing.assert_array_equal(hit, vec(1))
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.size) == (1, 1, 1)


def test_key_includes_model() -> None:
    cache = QueryCache(10, 60, clock=FakeClock())
    cache.put("t", "model-a", "q", vec(1))
    assert cache.get("t", "model-b", "q") is None
    assert cache.get("t", "model-a", "q") is not None


def test_entry_expires_at_ttl() -> None:
    clock = FakeClock()
    cache = QueryCache(10, 60, clock=clock)
    cache.put("t", "m", "q", vec(1))
    clock.now += 59.9
    assert cache.get("t", "m", "q") is not None
    clock.now += 0.1
    assert cache.get("t", "m", "q") is None
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.expirations, stats.size) == (1, 1, 1, 0)


def test_put_refreshes_ttl() -> None:
    clock = FakeClock()
    cache = QueryCache(10, 60, clock=clock)
    cache.put("t", "m", "q", vec(1))
    clock.now += 50
    cache.put("t", "m", "q", vec(2))
    clock.now += 50
    hit = cache.get("t", "m", "q")
    assert hit is not None
    np.testing.assert_array_equal(hit, vec(2))


def test_evicts_least_recently_used() -> None:
    cache = QueryCache(2, 60, clock=FakeClock())
    cache.put("t", "m", "a", vec(1))
    cache.put("t", "m", "b", vec(2))
    assert cache.get("t", "m", "a") is not None  # "a" is now the most recently used
    cache.put("t", "m", "c", vec(3))
    assert cache.get("t", "m", "b") is None
    assert cache.get("t", "m", "a") is not None
    assert cache.get("t", "m", "c") is not None
    stats = cache.stats()
    assert (stats.evictions, stats.size, stats.max_entries) == (1, 2, 2)


def test_stored_vector_is_a_read_only_copy() -> None:
    cache = QueryCache(10, 60, clock=FakeClock())
    original = vec(1)
    cache.put("t", "m", "q", original)
    original[:] = 9
    hit = cache.get("t", "m", "q")
    assert hit is not None
    np.testing.assert_array_equal(hit, vec(1))
    with pytest.raises(ValueError, match="read-only"):
        hit[0] = 5


@pytest.mark.parametrize(("size", "ttl"), [(0, 60), (10, 0)])
def test_zero_size_or_ttl_disables(size: int, ttl: float) -> None:
    cache = QueryCache(size, ttl, clock=FakeClock())
    cache.put("t", "m", "q", vec(1))
    assert not cache.enabled
    assert cache.get("t", "m", "q") is None
    assert len(cache) == 0


def test_rejects_negative_bounds() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        QueryCache(-1, 60)
    with pytest.raises(ValueError, match="ttl_s"):
        QueryCache(1, -1)
    with pytest.raises(ValueError, match="max_entries_per_tenant"):
        QueryCache(1, 60, max_entries_per_tenant=-1)


def test_one_tenants_entry_never_serves_another() -> None:
    """Issue 46: a shared entry answered another tenant's search in ~2 ms instead of
    6-16 ms, telling it what the first tenant searched."""
    cache = QueryCache(10, 60, clock=FakeClock())
    cache.put("victim", "m", "confidential merger with X", vec(1))
    assert cache.get("attacker", "m", "confidential merger with X") is None
    assert cache.get("victim", "m", "confidential merger with X") is not None
    assert (cache.stats().hits, cache.stats().misses) == (1, 1)


def test_a_tenant_past_its_share_evicts_its_own_entries_only() -> None:
    cache = QueryCache(6, 60, max_entries_per_tenant=3, clock=FakeClock())
    for text in ("a", "b", "c"):
        cache.put("quiet", "m", text, vec(1))
    for i in range(100):
        cache.put("flood", "m", f"fresh {i}", vec(2))
    assert [cache.get("quiet", "m", t) is not None for t in ("a", "b", "c")] == [True] * 3
    assert sum(cache.get("flood", "m", f"fresh {i}") is not None for i in range(100)) == 3
    stats = cache.stats()
    assert (stats.size, stats.tenants, stats.max_entries_per_tenant) == (6, 2, 3)


def test_the_global_bound_holds_across_many_tenants() -> None:
    cache = QueryCache(4, 60, max_entries_per_tenant=2, clock=FakeClock())
    for tenant in range(10):
        cache.put(f"t{tenant}", "m", "q", vec(tenant))
    assert len(cache) == 4
    # the least recently used tenants' entries went first
    assert cache.get("t0", "m", "q") is None
    assert cache.get("t9", "m", "q") is not None
    assert cache.stats().tenants == 4


def test_a_share_of_one_replaces_the_tenants_entry() -> None:
    cache = QueryCache(4, 60, max_entries_per_tenant=1, clock=FakeClock())
    cache.put("t", "m", "a", vec(1))
    cache.put("t", "m", "b", vec(2))
    cache.put("t", "m", "b", vec(3))
    assert cache.get("t", "m", "a") is None
    hit = cache.get("t", "m", "b")
    assert hit is not None
    np.testing.assert_array_equal(hit, vec(3))
    assert len(cache) == 1
