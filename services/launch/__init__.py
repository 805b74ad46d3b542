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
# The services that run as several replicas (`tandem run --replicas N`, the kill drill):
# stateless behind internal channels that balance over every replica and skip one that is
# starting or draining. The gateway stays one (the edge has one upstream; containers scale
# it behind a Service), and so does the embedding service (it holds the model; one per
# machine serves every caller).
REPLICATED: tuple[str, ...] = ("retrieval", "sql", "router")

__all__ = [
    "REPLICATED",
    "REPLICA_PORT_STEP",
    "health_channel",
    "launch",
    "parent_death_signal",
    "signal_group",
    "wait_serving",
]
