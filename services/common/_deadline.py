"""The current request's absolute deadline, so every outgoing call inherits what is left.

grpc.aio does not propagate deadlines by itself: the server interceptor records the
incoming call's deadline here and the client interceptor turns it into each outgoing
call's ``timeout``.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "tandem_deadline", default=None
)


def remaining() -> float | None:
    """Seconds left for the current request, or None outside any request."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


@contextmanager
def deadline_scope(budget_s: float) -> Iterator[float]:
    """Bound the enclosed work to ``budget_s`` (never extending an outer deadline)."""
    deadline = time.monotonic() + budget_s
    outer = _DEADLINE.get()
    if outer is not None:
        deadline = min(deadline, outer)
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def effective_timeout(requested: float | None) -> float | None:
    """The timeout an outgoing call gets: the smaller of its own and what is left."""
    left = remaining()
    if left is None:
        return requested
    left = max(left, 0.001)
    return left if requested is None else min(requested, left)
