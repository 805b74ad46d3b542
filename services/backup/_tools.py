"""The Postgres client programs a backup runs, and how they are run.

The embedded server's own binaries (pgserver's ``pginstall/bin``) come first: they match
the server's major version, which ``pg_basebackup`` and ``pg_dump`` require. A deployment
without the wheel (compose, k8s images) falls back to the programs on PATH.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

_ROOT_SERVER_USER = "pgserver"


class BackupError(RuntimeError):
    """A backup or restore that cannot go on; the message says why and what to do."""


def binary(name: str) -> str:
    """The path of Postgres program ``name`` (``pg_basebackup``, ``pg_restore``, …)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "pginstall" / "bin" / name
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise BackupError(f"{name} is not installed (it comes with pgserver or postgresql-client)")
    return found


def server_user() -> str | None:
    """The system user the embedded server runs as: pgserver runs it as ``pgserver`` when
    started by root (Postgres refuses root), else as whoever started it."""
    return _ROOT_SERVER_USER if os.geteuid() == 0 else None


def give_to_server(path: Path) -> None:
    """Make ``path`` (recursively) the server's own, where the server runs as another
    user: a restored data directory, the WAL archive the server writes."""
    user = server_user()
    if user is None:
        return
    for entry in [path, *path.rglob("*")]:
        shutil.chown(entry, user, user)
    for parent in path.resolve().parents:  # traversable, as pgserver makes its own
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)


def run(
    name: str, args: Sequence[str], *, timeout_s: float = 3600.0, as_server: bool = False
) -> str:
    """Run program ``name`` (as the server's user with ``as_server``: ``pg_ctl``); its
    stdout, or a BackupError carrying the tail of its stderr (these programs print paths
    and LSNs there, never row data). Output goes through files, not pipes: a server
    ``pg_ctl`` starts would hold a pipe open after ``pg_ctl`` exits."""
    user = server_user() if as_server else None
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            done = subprocess.run(
                [binary(name), *args],
                stdout=out,
                stderr=err,
                text=True,
                timeout=timeout_s,
                check=False,
                stdin=subprocess.DEVNULL,
                # Its own group too: root's would apply a directory's group bits.
                user=user,
                group=user,
                extra_groups=[] if user else None,
            )
        except subprocess.TimeoutExpired as exc:
            raise BackupError(f"{name} did not finish within {timeout_s:.0f} s") from exc
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if done.returncode != 0:
        tail = " ".join(stderr.strip().splitlines()[-3:]) or f"exit {done.returncode}"
        raise BackupError(f"{name} failed: {tail}")
    return stdout
