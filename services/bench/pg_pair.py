"""A real primary and streaming standby for tests and ``tandem bench replicas``: the
embedded server (pgserver) as the primary, and a standby cloned from it with
``pg_basebackup -R`` and started with the same binaries on a socket of its own.

Until ``services/pgha`` (issue 51's pair for ``tandem run --pg-standby``) is merged, this
is the one way tests make a pair; it is then to be replaced by that one.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

_PORT = 5433


def _bin(name: str) -> str:
    import pgserver  # noqa: PLC0415 - heavy import, only where a pair is made

    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


@dataclass
class PgPair:
    """``primary_url`` and ``standby_url`` as the superuser; ``pause``/``resume`` stop and
    restart the standby's replay (what a standby busy with a long query, or behind on a
    slow disk, looks like to a reader)."""

    root: Path
    primary_dir: Path
    primary_url: str
    standby_url: str
    standby_dir: Path
    user: str | None

    def pause(self) -> None:
        with psycopg.connect(self.standby_url, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        with psycopg.connect(self.standby_url, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")

    def catch_up(self, timeout_s: float = 10.0) -> None:
        """Wait until the standby has replayed everything the primary has written."""
        with psycopg.connect(self.primary_url, autocommit=True) as primary:
            row = primary.execute("SELECT pg_current_wal_lsn()").fetchone()
        target = row[0] if row else "0/0"
        deadline = time.monotonic() + timeout_s
        with psycopg.connect(self.standby_url, autocommit=True) as standby:
            while True:
                done = standby.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError("the standby did not catch up")
                time.sleep(0.02)

    def stop(self) -> None:
        subprocess.run(
            [_bin("pg_ctl"), "-D", str(self.standby_dir), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
            user=self.user,
        )
        shutil.rmtree(self.root, ignore_errors=True)


def start_pair(primary_data_dir: Path) -> PgPair:
    """Start (or join) the embedded server in ``primary_data_dir/pg`` and a standby of it."""
    import pgserver  # noqa: PLC0415

    primary_dir = primary_data_dir.resolve() / "pg"
    server = pgserver.get_server(primary_dir, cleanup_mode="stop")  # type: ignore[attr-defined]
    primary_url: str = server.get_uri("postgres")
    user: str | None = server.system_user
    # Its own short directory under /tmp: the socket path has a length limit, and the
    # server's user (pgserver's, when tests run as root) must reach it.
    root = Path(tempfile.mkdtemp(prefix="tandem-standby-"))
    root.chmod(0o755)
    standby_dir, socket_dir = root / "data", root / "sock"
    standby_dir.mkdir(mode=0o700)
    socket_dir.mkdir()
    socket_dir.chmod(0o777)
    if user is not None:
        entry = pwd.getpwnam(user)
        for path in (root, standby_dir, socket_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    subprocess.run(
        [_bin("pg_basebackup"), "-d", primary_url, "-D", str(standby_dir), "-R", "-X", "stream"],
        check=True,
        capture_output=True,
        user=user,
    )
    subprocess.run(
        [
            _bin("pg_ctl"),
            "-D",
            str(standby_dir),
            "-w",
            "-l",
            str(root / "standby.log"),
            "start",
            "-o",
            f"-k {socket_dir} -p {_PORT} -h ''",
        ],
        check=True,
        capture_output=True,
        user=user,
    )
    standby_url = f"postgresql://postgres@/postgres?host={socket_dir}&port={_PORT}"
    return PgPair(root, primary_dir, primary_url, standby_url, standby_dir, user)
