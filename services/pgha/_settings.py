"""The failover monitor's settings, from the environment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common import Env


@dataclass(frozen=True)
class FailoverSettings:
    """``grace_s``: how long the primary must be unreachable before the standby is
    promoted (short enough for writes back within seconds, long enough that a slow probe
    is not a failover). ``sync_wait_s``: how long commits may wait for a missing standby
    before the monitor stops requiring one (see docs/operations.md, "Postgres high availability").
    ``interval_s``: how often every node is probed."""

    grace_s: float = 2.0
    sync_wait_s: float = 5.0
    interval_s: float = 0.5

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> FailoverSettings:
        env = Env(environ)
        return cls(
            grace_s=env.get_float("PG_FAILOVER_GRACE_S", 2.0, minimum=0.1),
            sync_wait_s=env.get_float("PG_SYNC_STANDBY_WAIT_S", 5.0, minimum=0.0),
            interval_s=env.get_float("PG_MONITOR_INTERVAL_S", 0.5, minimum=0.05),
        )
