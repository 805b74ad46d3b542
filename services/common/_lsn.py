"""WAL positions between processes: the ``x-tandem-lsn`` header and the position the
current request must read at or after.

Light on purpose (no database import): every process's channels and server interceptor
carry the position, whether or not the process itself talks to Postgres. What a position
means and who reads it: ``services.common._replicas``.
"""

from __future__ import annotations

import contextvars
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from services.common._errors import InvalidArgument

# The metadata key a write's WAL position leaves in (trailer) and a read's comes back in.
LSN_HEADER = "x-tandem-lsn"
# Tenants whose last write position is remembered in one process (least recent dropped:
# a forgotten tenant's next read may be served by a standby that has not replayed its
# write yet, though never one past the staleness bound).
MAX_TENANTS = 10_000
MAX_LSN = 2**64 - 1

# The position the current request must read at or after (0: any): set from the request's
# metadata by the runtime interceptor of internal servers (as ``current_principal``), by
# the gateway from the tenant's last write, and sent on with every internal call.
read_after: contextvars.ContextVar[int] = contextvars.ContextVar("tandem_read_after", default=0)


def parse_lsn(text: str) -> int:
    """A WAL position from Postgres's ``X/Y`` text form or a decimal integer."""
    high, sep, low = text.strip().partition("/")
    try:
        value = (int(high, 16) << 32) | int(low, 16) if sep else int(high)
    except ValueError:
        raise InvalidArgument.field(LSN_HEADER, "must be a WAL position") from None
    if not 0 <= value <= MAX_LSN:
        raise InvalidArgument.field(LSN_HEADER, "must be a WAL position")
    return value


def lsn_from_metadata(metadata: Iterable[tuple[str, Any]] | None) -> int:
    """The largest ``x-tandem-lsn`` the caller sent (0 when none)."""
    found = 0
    for key, value in metadata or ():
        if key == LSN_HEADER:
            found = max(found, parse_lsn(value if isinstance(value, str) else value.decode()))
    return found


class WritePositions:
    """The last write position per tenant, the least recently written dropped past
    ``size``: retrieval's own writes, and in the gateway each tenant's last
    ``x-tandem-lsn`` trailer, sent with the tenant's next calls."""

    def __init__(self, size: int = MAX_TENANTS) -> None:
        self._size = size
        self._positions: OrderedDict[str, int] = OrderedDict()

    def note(self, tenant_id: str, lsn: int) -> None:
        if lsn <= 0:
            return
        self._positions[tenant_id] = max(lsn, self._positions.get(tenant_id, 0))
        self._positions.move_to_end(tenant_id)
        while len(self._positions) > self._size:
            self._positions.popitem(last=False)

    def get(self, tenant_id: str) -> int:
        return self._positions.get(tenant_id, 0)

    def __len__(self) -> int:
        return len(self._positions)


def lsn_from_trailer(metadata: Iterable[tuple[str, Any]] | None) -> int:
    """The ``x-tandem-lsn`` an internal call's trailer carried (0: none, or malformed:
    a position is a hint for routing, never a reason to fail a call that succeeded)."""
    try:
        return lsn_from_metadata(metadata)
    except InvalidArgument:
        return 0
