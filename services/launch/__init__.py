"""Launching the stack's processes: start a service module in its own session, wait for its
health service to report SERVING, signal its process group."""

from services.launch._process import (
    health_channel,
    launch,
    parent_death_signal,
    signal_group,
    wait_serving,
)

# Replica k (k >= 2) of a service listens on the service's port + (k - 1) * this: where
# `tandem run --replicas N` starts them and where the kill drill finds them.
REPLICA_PORT_STEP = 100

__all__ = [
    "REPLICA_PORT_STEP",
    "health_channel",
    "launch",
    "parent_death_signal",
    "signal_group",
    "wait_serving",
]
