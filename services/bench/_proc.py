"""CPU time of every process of a running stack, read from ``/proc``.

The stack is the process trees under a few roots: the ``tandem run`` supervisor (every
service and the edge's nginx) and the Postgres postmaster (its backends, io workers, WAL
writer, …), which the embedded server daemonises away from the supervisor. CPU is
``utime + stime`` of ``/proc/<pid>/stat``; a process that starts inside a window counts
from zero, one that exits inside it loses its last sample (pooled backends do not).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# Each service process runs ``python -m <module>``; the edge's nginx is named by comm.
_SERVICE_MODULES = {
    "gateway.edge": "edge",
    "gateway": "gateway",
    "services.rest": "rest",
    "services.router": "router",
    "services.retrieval": "retrieval",
    "services.sql": "sql",
    "services.embedding": "embedding",
}
# A client backend's title: ``postgres: <user> <database> <host(port)|[local]> <state>``.
_BACKEND = re.compile(r"^postgres: (\S+) (\S+) (\[local\]|\S+\(\d+\))")


@dataclass(frozen=True)
class ProcStat:
    """What the accounting needs from one ``/proc/<pid>/stat``."""

    pid: int
    ppid: int
    comm: str
    ticks: int  # utime + stime, in clock ticks


class ProcSource(Protocol):
    """A view of ``/proc``; tests pass a fake one."""

    def pids(self) -> Iterable[int]: ...

    def stat(self, pid: int) -> ProcStat | None: ...

    def cmdline(self, pid: int) -> str: ...


def parse_stat(text: str) -> ProcStat:
    """``/proc/<pid>/stat``: the command name is in parentheses and may hold spaces."""
    head, _, tail = text.rpartition(")")
    pid, _, comm = head.partition(" (")
    fields = tail.split()
    # fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    return ProcStat(int(pid), int(fields[1]), comm, int(fields[11]) + int(fields[12]))


class LinuxProc:
    """The real ``/proc``; a process that vanished between listing and reading is None."""

    def __init__(self, root: Path = Path("/proc")) -> None:
        self._root = root

    def pids(self) -> Iterable[int]:
        return [int(p.name) for p in self._root.iterdir() if p.name.isdigit()]

    def stat(self, pid: int) -> ProcStat | None:
        try:
            return parse_stat((self._root / str(pid) / "stat").read_text())
        except (OSError, ValueError, IndexError):
            return None

    def cmdline(self, pid: int) -> str:
        try:
            raw = (self._root / str(pid) / "cmdline").read_bytes()
        except OSError:
            return ""
        return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def clock_ticks_per_s() -> int:
    return int(os.sysconf("SC_CLK_TCK"))


def role_of(stat: ProcStat, cmdline: str) -> str:
    """The column a process's CPU is added to: a service, ``edge``, ``postgres`` or
    ``other`` (the supervisor, pgserver's guard)."""
    if stat.comm == "postgres" or cmdline.startswith("postgres:") or "/bin/postgres" in cmdline:
        return "postgres"
    if stat.comm == "nginx" or cmdline.startswith("nginx:"):
        return "edge"
    words = cmdline.split()
    if "-m" in words[:-1]:
        module = words[words.index("-m") + 1]
        for prefix, role in _SERVICE_MODULES.items():
            if module == prefix or module.startswith(prefix + "."):
                return role
    return "other"


def backend_database(cmdline: str) -> str | None:
    """The database a Postgres client backend serves; None for an auxiliary process."""
    match = _BACKEND.match(cmdline)
    return match.group(2) if match else None


def postmaster_pid(pgdata: Path) -> int | None:
    """The postmaster of a data directory (first line of ``postmaster.pid``)."""
    try:
        first = (pgdata / "postmaster.pid").read_text().splitlines()[0]
        return int(first)
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class StackProcesses:
    """Which processes belong to the stack: the trees under ``roots``; Postgres client
    backends only for ``databases`` when given (a postmaster shared with others)."""

    roots: tuple[int, ...]
    databases: frozenset[str] | None = None

    def members(self, source: ProcSource) -> dict[int, tuple[str, ProcStat]]:
        """Every live member, by pid: its role and its stat."""
        stats = {pid: s for pid in source.pids() if (s := source.stat(pid)) is not None}
        children: dict[int, list[int]] = {}
        for stat in stats.values():
            children.setdefault(stat.ppid, []).append(stat.pid)
        found: dict[int, tuple[str, ProcStat]] = {}
        todo = [pid for pid in self.roots if pid in stats]
        while todo:
            pid = todo.pop()
            if pid in found:
                continue
            cmdline = source.cmdline(pid)
            role = role_of(stats[pid], cmdline)
            if role == "postgres" and self.databases is not None:
                database = backend_database(cmdline)
                if database is not None and database not in self.databases:
                    continue
            found[pid] = (role, stats[pid])
            todo.extend(children.get(pid, ()))
        return found

    def snapshot(self, source: ProcSource) -> dict[int, tuple[str, int]]:
        """Role and CPU ticks of every member, for ``cpu_delta``."""
        return {pid: (role, stat.ticks) for pid, (role, stat) in self.members(source).items()}


def cpu_delta(
    before: Mapping[int, tuple[str, int]],
    after: Mapping[int, tuple[str, int]],
    ticks_per_s: int,
) -> dict[str, float]:
    """CPU seconds spent between two snapshots, summed per role.

    A pid seen only after started inside the window (all its time counts); one seen only
    before has exited (its last window is lost; the caller's window should not end one).
    """
    spent: dict[str, float] = {}
    for pid, (role, ticks) in after.items():
        previous = before.get(pid)
        start = previous[1] if previous is not None and previous[1] <= ticks else 0
        spent[role] = spent.get(role, 0.0) + (ticks - start) / ticks_per_s
    return spent
