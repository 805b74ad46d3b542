"""The failover monitor's decisions, on plain fakes of its node interface: when it
promotes, what it never promotes, what it does with a second primary, and when commits
stop and start being synchronous. The same monitor runs on real nodes in
tests/integration/common/test_failover.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from services.pgha import (
    DOWN,
    FailoverEvent,
    FailoverMonitor,
    FailoverSettings,
    NodeAddress,
    NodeState,
    Role,
    reader_conninfo,
    writer_conninfo,
)

SETTINGS = FailoverSettings(grace_s=2.0, sync_wait_s=5.0, interval_s=0.5)


@dataclass
class FakeNode:
    """A node whose next observation the test sets; records what the monitor did to it."""

    name: str
    state: NodeState
    actions: list[str] = field(default_factory=list)

    def probe(self) -> NodeState:
        return self.state

    def promote(self) -> None:
        self.actions.append("promote")
        self.state = NodeState(Role.PRIMARY, timeline=self.state.timeline + 1)

    def fence(self) -> None:
        self.actions.append("fence")
        self.state = NodeState(Role.PRIMARY, timeline=self.state.timeline, read_only=True)

    def set_sync(self, required: bool) -> None:
        self.actions.append(f"sync={required}")
        self.state = NodeState(
            self.state.role,
            timeline=self.state.timeline,
            sync_required=required,
            sync_names=self.state.sync_names if required else frozenset(),
            streaming=self.state.streaming,
            read_only=self.state.read_only,
        )


@dataclass
class FakeRepairer:
    calls: list[tuple[str, str]] = field(default_factory=list)

    def fence_down(self, name: str) -> None:
        self.calls.append(("fence_down", name))

    def repair(self, name: str, primary: str) -> None:
        self.calls.append(("repair", name))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def primary(sync: bool = True, standby: str | None = "b", timeline: int = 1) -> NodeState:
    names = frozenset({standby}) if standby else frozenset()
    return NodeState(
        Role.PRIMARY,
        timeline=timeline,
        sync_required=sync,
        sync_names=names if sync else frozenset(),
        streaming=names,
    )


STANDBY = NodeState(Role.STANDBY, read_only=True)


def pair(
    a: NodeState, b: NodeState, repairer: FakeRepairer | None = None
) -> tuple[FakeNode, FakeNode, FailoverMonitor, Clock, list[FailoverEvent]]:
    node_a, node_b = FakeNode("a", a), FakeNode("b", b)
    clock = Clock()
    events: list[FailoverEvent] = []
    monitor = FailoverMonitor(
        [node_a, node_b],
        SETTINGS,
        repairer=repairer,
        on_failover=events.append,
        say=lambda _text: None,
        clock=clock,
    )
    return node_a, node_b, monitor, clock, events


def test_the_synchronous_standby_is_promoted_after_the_grace_not_before() -> None:
    a, b, monitor, clock, events = pair(primary(), STANDBY)
    monitor.step()
    assert monitor.primary == "a"
    a.state = DOWN
    clock.now += 0.5
    monitor.step()
    clock.now += 1.0
    monitor.step()
    assert b.actions == [], "promoted inside the grace"
    clock.now += 1.0
    monitor.step()
    assert b.actions[0] == "promote"
    # Nothing can confirm commits on the new primary: it must not wait for a standby.
    assert "sync=False" in b.actions
    assert monitor.primary == "b"
    assert [(e.old_primary, e.new_primary) for e in events] == [("a", "b")]
    assert events[0].refused_s == pytest.approx(2.5)


def test_a_dying_primarys_last_answer_without_standbys_keeps_the_candidate() -> None:
    """A postmaster killed while the monitor's session still runs: the backend answers
    once more, its WAL senders already gone. The primary can acknowledge nothing without
    its standby, so the standby still holds every acknowledged commit."""
    a, b, monitor, clock, _ = pair(primary(), STANDBY)
    monitor.step()
    a.state = primary(standby=None)
    clock.now += 0.5
    monitor.step()
    a.state = DOWN
    for _ in range(6):
        clock.now += 0.5
        monitor.step()
    assert b.actions[:1] == ["promote"]


def test_a_standby_never_reported_synchronous_is_not_promoted() -> None:
    """Commits acknowledged while the standby was only catching up are not on it."""
    a, b, monitor, clock, events = pair(primary(sync=False), STANDBY)
    monitor.step()
    a.state = DOWN
    for _ in range(10):
        clock.now += 0.5
        monitor.step()
    assert "promote" not in b.actions
    assert events == []


def test_a_standby_still_streaming_from_a_primary_is_not_promoted() -> None:
    """The monitor lost the primary, the standby did not: a partition, not a death."""
    a, b, monitor, clock, _ = pair(primary(), STANDBY)
    monitor.step()
    a.state = DOWN
    b.state = NodeState(Role.STANDBY, receiving=True, read_only=True)
    for _ in range(10):
        clock.now += 0.5
        monitor.step()
    assert "promote" not in b.actions


def test_a_returning_old_primary_is_fenced_and_rebuilt_never_promoted() -> None:
    repairer = FakeRepairer()
    a, _b, monitor, clock, _ = pair(primary(), STANDBY, repairer)
    monitor.step()
    a.state = DOWN
    for _ in range(6):
        clock.now += 0.5
        monitor.step()
    assert monitor.primary == "b"
    assert ("fence_down", "a") in repairer.calls
    # Restarted as it was (its container came back): it answers as a primary.
    a.state = primary(standby=None, timeline=1)
    clock.now += 0.5
    monitor.step()
    assert "fence" in a.actions
    assert ("repair", "a") in repairer.calls
    assert monitor.primary == "b"
    assert "promote" not in a.actions
    # Still answering (read-only) while it waits to be rebuilt: b stays the primary.
    for _ in range(4):
        clock.now += 0.5
        monitor.step()
    assert monitor.primary == "b"
    assert a.actions.count("promote") == 0


def test_two_primaries_at_start_the_newer_timeline_wins() -> None:
    a, b, monitor, _, _ = pair(primary(timeline=2), primary(timeline=3, standby=None))
    monitor.step()
    assert monitor.primary == "b"
    assert a.actions == ["fence"]
    assert "fence" not in b.actions


def test_commits_stop_waiting_for_a_missing_standby_after_the_wait_and_resume() -> None:
    a, _b, monitor, clock, _ = pair(primary(), STANDBY)
    monitor.step()
    a.state = primary(standby=None)
    _b.state = DOWN
    clock.now += 0.5
    monitor.step()  # the standby is first seen missing here
    clock.now += 4.9
    monitor.step()
    assert "sync=False" not in a.actions, "relaxed before the wait"
    clock.now += 0.2
    monitor.step()
    assert a.actions == ["sync=False"]
    assert monitor.synchronous_standbys == frozenset()
    # The standby streams again: synchronous again, and a candidate once it confirms.
    a.state = NodeState(Role.PRIMARY, timeline=1, streaming=frozenset({"b"}))
    _b.state = STANDBY
    clock.now += 0.5
    monitor.step()
    assert a.actions == ["sync=False", "sync=True"]
    a.state = primary()
    monitor.step()
    assert monitor.synchronous_standbys == {"b"}


def test_conninfos_name_every_node_in_order() -> None:
    from psycopg.conninfo import conninfo_to_dict

    nodes = [NodeAddress("/tmp/a dir", 5432), NodeAddress("db-b", 5433)]
    writer = conninfo_to_dict(writer_conninfo(nodes))
    reader = conninfo_to_dict(reader_conninfo(nodes))
    assert writer["host"] == "/tmp/a dir,db-b"
    assert writer["port"] == "5432,5433"
    assert writer["target_session_attrs"] == "read-write"
    assert reader["target_session_attrs"] == "prefer-standby"
    assert writer["keepalives_idle"] == "5"  # a vanished TCP node is noticed in seconds
    assert NodeAddress.parse("db-b:5433") == nodes[1]
    with pytest.raises(ValueError, match="HOST:PORT"):
        NodeAddress.parse("db-b")
