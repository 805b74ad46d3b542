"""Launching the stack's processes: start a service module in its own session, wait for its
health service to report SERVING, signal its process group."""

from services.launch._process import (
    health_channel,
    launch,
    parent_death_signal,
    signal_group,
    wait_serving,
)

__all__ = ["health_channel", "launch", "parent_death_signal", "signal_group", "wait_serving"]
