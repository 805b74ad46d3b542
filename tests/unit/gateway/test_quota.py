"""Token buckets: burst, refill, per-tenant isolation, RetryInfo delay."""

from __future__ import annotations

import pytest

from gateway import TokenBuckets
from services.common import ResourceExhausted


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_refusal_with_the_wait_until_a_token_returns():
    clock = Clock()
    buckets = TokenBuckets(rate=2.0, burst=3, clock=clock)
    for _ in range(3):
        buckets.take("acme")
    with pytest.raises(ResourceExhausted) as err:
        buckets.take("acme")
    assert err.value.reason == "QUOTA_EXCEEDED"
    assert err.value.retry_after_s == pytest.approx(0.5)
    clock.now += 0.5
    buckets.take("acme")


def test_tenants_do_not_share_a_bucket():
    buckets = TokenBuckets(rate=1.0, burst=1, clock=Clock())
    buckets.take("acme")
    buckets.take("globex")
    with pytest.raises(ResourceExhausted):
        buckets.take("acme")


def test_refill_never_exceeds_burst():
    clock = Clock()
    buckets = TokenBuckets(rate=10.0, burst=2, clock=clock)
    clock.now += 3600
    buckets.take("acme")
    buckets.take("acme")
    with pytest.raises(ResourceExhausted):
        buckets.take("acme")
