"""A private MariaDB server for tests and evals, started like the embedded Postgres: a data
directory of its own (``mariadb-install-db``), ``mariadbd`` on a loopback port, stopped
with the process group it started. Debian's ``mariadb-server`` provides the binaries
(``make mariadb``, scripts/install_mariadb.sh); nothing else is downloaded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pymysql
from pymysql.cursors import Cursor

_BINARIES = ("/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db")
_START_TIMEOUT_S = 60.0


def available() -> str | None:
    """None when the server binaries are installed; otherwise why not, with the fix."""
    missing = [b for b in _BINARIES if not (Path(b).exists() or shutil.which(Path(b).name))]
    if missing:
        return f"MariaDB is not installed ({', '.join(missing)}): run `make mariadb`"
    return None


@dataclass(frozen=True)
class MariaDb:
    """A running private server: its port and the administrator's (root's) URL."""

    port: int
    socket: Path

    def url(self, database: str = "", user: str = "root", password: str = "") -> str:
        auth = f"{user}:{password}" if password else user
        return f"mysql://{auth}@127.0.0.1:{self.port}/{database}"

    def admin(self, database: str | None = None) -> pymysql.connections.Connection[Cursor]:
        return pymysql.connect(
            unix_socket=str(self.socket), user="root", database=database, autocommit=True
        )

    def create_admin(self, user: str, password: str) -> str:
        """A user holding every privilege (root signs in on the socket only); its URL."""
        with self.admin() as conn, conn.cursor() as cursor:
            cursor.execute(f"CREATE USER IF NOT EXISTS '{user}'@'%%' IDENTIFIED BY %s", (password,))
            cursor.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{user}'@'%' WITH GRANT OPTION")
        return self.url("", user, password)

    def create_reader(self, database: str, user: str, password: str) -> str:
        """A user that may only SELECT from ``database``; its URL."""
        with self.admin() as conn, conn.cursor() as cursor:
            cursor.execute(f"CREATE USER IF NOT EXISTS '{user}'@'%%' IDENTIFIED BY %s", (password,))
            cursor.execute(f"GRANT SELECT ON `{database}`.* TO '{user}'@'%'")
        return self.url(database, user, password)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_mariadb(folder: Path | None = None) -> Iterator[MariaDb]:
    """Start a private server (in ``folder``, or a temporary one), yield it, stop it."""
    problem = available()
    if problem is not None:
        raise RuntimeError(problem)
    owned = folder is None
    base = Path(tempfile.mkdtemp(prefix="tandem-mariadb-")) if folder is None else folder
    data = base / "data"
    sock = base / "mariadb.sock"
    user = ["--user=root"] if os.geteuid() == 0 else []
    subprocess.run(
        ["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--skip-test-db",
         "--auth-root-authentication-method=socket", *user],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    port = _free_port()
    process = subprocess.Popen(
        ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={sock}",
         f"--port={port}", "--bind-address=127.0.0.1", "--skip-name-resolve",
         f"--pid-file={base / 'mariadb.pid'}", f"--log-error={base / 'error.log'}",
         "--innodb-buffer-pool-size=64M", "--skip-log-bin", *user],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    server = MariaDb(port, sock)
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            # ready once it accepts on its port (probed with a socket closed here: a failed
            # client connect would leave its own behind)
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                log = (base / "error.log").read_text(errors="replace")[-500:]
                raise RuntimeError(f"MariaDB did not start: {log}")
            time.sleep(0.1)
        server.admin().close()
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if owned:
            shutil.rmtree(base, ignore_errors=True)
