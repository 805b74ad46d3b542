"""``python -m services.cli._pgguard PGDATA [PGDATA …]``: stops the embedded Postgres (each
node of a ``--pg-standby`` pair) of a ``tandem run`` whose supervisor died without cleaning
up (SIGKILL, a crash).

The postmaster is a daemon, not the supervisor's child, so nothing would stop it. This
guard is the supervisor's child, armed with a parent-death signal: it sleeps until that
signal comes, gives the services (dying the same way) a moment to drain, then stops the
server unless another live process still uses it. A supervisor that stops normally kills
the guard first and releases the server itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

_DRAIN_S = 3.0
_STOP_S = 4.0


def _others(pgdata: Path) -> list[int]:
    """Live processes other than this one still registered as users of the server (a
    killed supervisor its parent has not reaped yet is a zombie: not live)."""
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text())
    except (OSError, ValueError):
        return []
    return [p for p in pids if isinstance(p, int) and p != os.getpid() and _alive(p)]


def main(*pgdatas: Path) -> int:
    orphaned = False

    def on_signal(_signum: int, _frame: object) -> None:
        nonlocal orphaned
        orphaned = True

    signal.signal(signal.SIGTERM, on_signal)
    while not orphaned:
        signal.pause()
    deadline = time.monotonic() + _DRAIN_S
    while any(_others(p) for p in pgdatas) and time.monotonic() < deadline:
        time.sleep(0.1)
    postmasters = []
    for pgdata in pgdatas:
        if _others(pgdata):
            continue  # someone else (another run, a test) still uses it
        try:
            postmasters.append(int((pgdata / "postmaster.pid").read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue  # not running
    # SIGINT is Postgres's fast shutdown: clients are disconnected, nothing is lost.
    for postmaster in postmasters:
        _signal(postmaster, signal.SIGINT)
    deadline = time.monotonic() + _STOP_S
    while any(_alive(p) for p in postmasters) and time.monotonic() < deadline:
        time.sleep(0.1)
    for postmaster in postmasters:
        _signal(postmaster, signal.SIGKILL)
    return 0


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _alive(pid: int) -> bool:
    import psutil  # noqa: PLC0415

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


if __name__ == "__main__":
    sys.exit(main(*(Path(arg) for arg in sys.argv[1:])))
