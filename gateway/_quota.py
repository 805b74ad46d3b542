"""Per-tenant token buckets: smooth rate limits that tell the caller when to come back."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from services.common import ResourceExhausted


def quota_exceeded(wait_s: float) -> ResourceExhausted:
    """The refusal of a tenant over its quota: retry after ``wait_s`` seconds."""
    return ResourceExhausted(
        "tenant rate limit exceeded", retry_after_s=wait_s, reason="QUOTA_EXCEEDED"
    )


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenBuckets:
    """``rate`` tokens per second up to ``burst``, one bucket per tenant, in process memory.

    Each gateway replica enforces its share; with N replicas behind a balancer the
    effective limit is about N x rate (documented in infra/SCALING.md when it lands).
    """

    def __init__(
        self, rate: float, burst: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self._rate = rate
        self._burst = burst
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, tenant_id: str, cost: float = 1.0) -> None:
        """Spend ``cost`` tokens or raise RESOURCE_EXHAUSTED with the wait as RetryInfo."""
        bucket = self._refill(tenant_id)
        if bucket.tokens >= cost:
            bucket.tokens -= cost
            return
        self._refuse(bucket, cost)

    def wait_s(self, tenant_id: str, cost: float = 1.0) -> float:
        """Seconds until ``cost`` tokens are there (0.0 when they are now); spends nothing
        and raises nothing, for refusing at the edge without an exception per call."""
        bucket = self._refill(tenant_id)
        return 0.0 if bucket.tokens >= cost else (cost - bucket.tokens) / self._rate

    def _refill(self, tenant_id: str) -> _Bucket:
        now = self._clock()
        bucket = self._buckets.get(tenant_id)
        if bucket is None:
            bucket = self._buckets[tenant_id] = _Bucket(self._burst, now)
        bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.updated) * self._rate)
        bucket.updated = now
        return bucket

    def _refuse(self, bucket: _Bucket, cost: float) -> None:
        wait = (cost - bucket.tokens) / self._rate
        raise quota_exceeded(wait)
