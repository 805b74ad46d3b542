"""The failover monitor: watches the nodes over SQL and promotes the standby when the
primary is gone.

Its rules, in the order they protect data:

- Only a standby the primary last reported as *synchronous* is promoted: it holds every
  acknowledged commit. A standby that was merely catching up is never promoted (that
  would lose acknowledged writes); the monitor says so and waits.
- A standby whose WAL receiver still streams is not promoted: it sees a live primary
  that the monitor cannot reach (a partition between the monitor and the primary).
- Before promoting, a repairer (when there is one) fences the dead node so it cannot
  start as a primary again; a node that answers as a primary beside the current one is
  fenced over SQL (read-only, sessions ended) and then rebuilt as a standby, never kept.
- While no standby confirms commits, commits wait; after ``sync_wait_s`` the monitor
  stops requiring one (loudly) and requires it again as soon as a standby streams.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.pgha._node import Node, NodeState, Repairer, Role
from services.pgha._settings import FailoverSettings

_log = logging.getLogger("tandem.pgha")


@dataclass(frozen=True)
class FailoverEvent:
    """A promotion: which node went, which took over, and for how long writes were
    refused (from the last moment the old primary answered to the promotion's end)."""

    old_primary: str
    new_primary: str
    refused_s: float


class FailoverMonitor:
    """Decides from observations; acts through the nodes (and the optional repairer).

    ``step()`` is one round (probe everything, act); ``run()`` repeats it until stopped.
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        settings: FailoverSettings,
        *,
        repairer: Repairer | None = None,
        on_failover: Callable[[FailoverEvent], None] | None = None,
        say: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len({n.name for n in nodes}) != len(nodes) or len(nodes) < 2:
            raise ValueError("the monitor needs at least two nodes with distinct names")
        self.nodes = {n.name: n for n in nodes}
        self.settings = settings
        self.repairer = repairer
        self.on_failover = on_failover
        self._say = say or _log.warning
        self._clock = clock
        self.primary: str | None = None
        # Standbys the primary last reported as confirming commits (promotion candidates).
        self._synchronous: frozenset[str] = frozenset()
        self._last_ok: float | None = None
        self._down_since: float | None = None
        self._no_standby_since: float | None = None
        self._refusing_said = False
        self.failovers: list[FailoverEvent] = []

    @property
    def synchronous_standbys(self) -> frozenset[str]:
        """The standbys that may be promoted now (they hold every acknowledged commit)."""
        return self._synchronous

    # -- one round ---------------------------------------------------------------------

    def step(self) -> dict[str, NodeState]:
        states = {name: node.probe() for name, node in self.nodes.items()}
        now = self._clock()
        if self.primary is None:
            self._adopt(states)
            if self.primary is None:
                return states
        state = states[self.primary]
        if state.role is Role.PRIMARY and not state.read_only:
            self._primary_up(states, now)
        elif state.role is Role.DOWN:
            self._primary_down(states, now)
        else:
            # Demoted or fenced by someone else: follow whichever single node writes now.
            self.primary = None
            self._adopt(states)
        return states

    def _adopt(self, states: dict[str, NodeState]) -> None:
        """At start (or after an outside change): the one writable primary; with several,
        the newest timeline wins and the others are fenced."""
        writable = [n for n, s in states.items() if s.role is Role.PRIMARY and not s.read_only]
        if not writable:
            return
        writable.sort(key=lambda n: (states[n].timeline, n == next(iter(self.nodes))))
        self.primary = writable[-1]
        self._last_ok = self._clock()
        self._say(f"primary is {self.primary}")
        for other in writable[:-1]:
            self._fence(other, states[other])
            states[other] = self.nodes[other].probe()  # this round acts on what is now

    def _primary_up(self, states: dict[str, NodeState], now: float) -> None:
        assert self.primary is not None
        state = states[self.primary]
        self._last_ok = now
        self._down_since = None
        self._refusing_said = False
        for name, other in states.items():
            if name == self.primary:
                continue
            if other.role is Role.PRIMARY:
                # A second primary (an old one restarted by hand or by its container).
                self._fence(name, other)
            elif other.role is Role.DOWN and self.repairer is not None:
                self._repair(name)
        if not state.sync_required:
            self._synchronous = frozenset()
        elif state.sync_names:
            self._synchronous = state.sync_names & (self.nodes.keys() - {self.primary})
        # else: no standby confirms now, so the primary acknowledges nothing; whoever
        # confirmed last still holds every acknowledged commit (a dying primary's last
        # answer shows its WAL senders already gone: that must not clear the candidate).
        if state.streaming:
            self._no_standby_since = None
            if not state.sync_required:
                primary = self.nodes[self.primary]
                primary.set_sync(True)
                # Once the reload has reached the WAL senders the standby confirms every
                # commit from then on: a promotion candidate again at the next round.
                self._say(
                    f"standby {', '.join(sorted(state.streaming))} streams again: "
                    "commits are synchronous again (on both nodes when acknowledged)"
                )
            return
        if self._no_standby_since is None:
            self._no_standby_since = now
        waited = now - self._no_standby_since
        if state.sync_required and waited >= self.settings.sync_wait_s:
            self.nodes[self.primary].set_sync(False)
            # From the next commit on, acknowledged writes are on the primary alone: no
            # standby may be promoted over it until one confirms commits again.
            self._synchronous = frozenset()
            self._say(
                f"WARNING: no standby for {waited:.1f} s; commits on {self.primary} "
                "are NO LONGER SYNCHRONOUS (acknowledged writes are on one node only) until "
                "a standby streams again"
            )

    def _primary_down(self, states: dict[str, NodeState], now: float) -> None:
        assert self.primary is not None
        if self._down_since is None:
            self._down_since = now
        if now - self._down_since < self.settings.grace_s:
            return
        candidates = [n for n in sorted(self._synchronous) if states[n].role is Role.STANDBY]
        if not candidates:
            if not self._refusing_said:
                self._refusing_said = True
                self._say(
                    f"ERROR: primary {self.primary} is down and no standby is known "
                    "to hold every acknowledged write: not promoting (writes refused)"
                )
            return
        chosen = candidates[0]
        if states[chosen].receiving:
            return  # it still streams from a primary the monitor cannot see: not dead
        old = self.primary
        if self.repairer is not None:
            self.repairer.fence_down(old)
        node = self.nodes[chosen]
        node.promote()
        # The only other node is the dead one: no standby can confirm commits now.
        node.set_sync(False)
        self.primary = chosen
        self._synchronous = frozenset()
        self._down_since = None
        self._no_standby_since = self._clock()
        refused = self._clock() - (self._last_ok if self._last_ok is not None else now)
        event = FailoverEvent(old, chosen, refused)
        self.failovers.append(event)
        if self.on_failover is not None:
            self.on_failover(event)  # says it (one line), its own way
        else:
            self._say(
                f"failover: {old} is down; promoted {chosen} (writes refused for "
                f"{refused:.1f} s); commits are not synchronous until {old} is back as a "
                "standby"
            )

    def _fence(self, name: str, state: NodeState) -> None:
        if not state.read_only:
            self.nodes[name].fence()
            self._say(f"{name} answered as a second primary; fenced it (read-only, sessions ended)")
        if self.repairer is not None:
            self._repair(name)

    def _repair(self, name: str) -> None:
        assert self.primary is not None
        try:
            self.repairer.repair(name, self.primary)  # type: ignore[union-attr]
        except Exception as exc:  # the next round tries again; the pair keeps serving
            _log.warning("postgres: rebuilding %s failed: %s", name, exc)

    # -- the loop ----------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Round after round until ``stop`` is set; an unexpected error in a round is
        logged and the next round goes on (a monitor that dies fails nothing over)."""
        while not stop.is_set():
            try:
                self.step()
            except Exception:
                _log.exception("postgres monitor round failed")
            stop.wait(self.settings.interval_s)
