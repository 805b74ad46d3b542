"""Physical backups: ``pg_basebackup`` base backups plus the server's own WAL archive.

Why ``archive_command`` rather than a supervised ``pg_receivewal``: Postgres keeps a WAL
segment until the archive command has stored it, so no segment is ever skipped, whatever
becomes of ``tandem run`` (a ``pg_receivewal`` that is down while segments are recycled
loses them, unless it holds a replication slot, which fills the disk instead); and there
is no further process to supervise. The cost is one restart of the embedded server the
first time ``tandem run`` starts with ``TANDEM_BACKUP_DIR`` set (``archive_mode`` is read
at start only). A segment is archived when it fills or ``archive_timeout`` passes: the
restore window ends at the last archived segment, and ``status`` says so.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from services.backup._layout import (
    BASE,
    WAL,
    complete,
    name_time,
    new_name,
    prune,
    write_atomically,
)
from services.backup._tools import BackupError, give_to_server, run

_SEGMENT = re.compile(r"^[0-9A-F]{24}$")
_LABEL_START = re.compile(r"START WAL LOCATION: \S+ \(file ([0-9A-F]{24})\)")


def archive_command(wal_dir: Path) -> str:
    """Copy a segment under a temporary name, flush it, rename it: a half-copied file never
    carries a segment's name. A segment already there with the same bytes (archived, then
    the server crashed before noting it) succeeds; a different one fails, so the archiver
    retries and ``status`` shows the failure, rather than overwriting history."""
    w = shlex.quote(str(wal_dir))
    return (
        f"if [ -f {w}/%f ]; then cmp -s %p {w}/%f; "
        f"else cp %p {w}/.%f.tmp && sync {w}/.%f.tmp && mv {w}/.%f.tmp {w}/%f; fi"
    )


def enable_archiving(url: str, pgdata: Path, backup_dir: Path, *, timeout_s: int) -> str:
    """Make the embedded server in ``pgdata`` archive its WAL into ``backup_dir/wal``.

    Restarts the server when ``archive_mode`` was off, unless another process still uses
    it (it then applies at the next start). Returns one line saying what was done."""
    wal_dir = backup_dir.resolve() / WAL
    wal_dir.mkdir(parents=True, exist_ok=True)
    give_to_server(wal_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in (
            ("archive_mode", "on"),
            ("archive_command", archive_command(wal_dir)),
            ("archive_timeout", f"{timeout_s}s"),
        ):
            conn.execute(
                sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value))
            )
        conn.execute("SELECT pg_reload_conf()")
        row = conn.execute("SHOW archive_mode").fetchone()
    if row is not None and row[0] == "on":
        return f"WAL archived into {wal_dir}"
    if _other_users(pgdata):
        return f"WAL archiving into {wal_dir} starts when the server next restarts"
    run(
        "pg_ctl",
        ["-D", str(pgdata), "-m", "fast", "-w", "-t", "60", "restart"],
        timeout_s=90,
        as_server=True,
    )
    return f"WAL archived into {wal_dir} (server restarted to turn archive_mode on)"


def _other_users(pgdata: Path) -> bool:
    """Whether a live process other than this one has joined the embedded server."""
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text())
    except (OSError, ValueError):
        return False
    for pid in pids:
        if isinstance(pid, int) and pid != os.getpid():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            return True
    return False


@dataclass(frozen=True)
class BaseBackup:
    path: Path
    started: datetime
    start_segment: str
    bytes: int


def take_base_backup(url: str, backup_dir: Path, *, keep: int | None = None) -> BaseBackup:
    """``pg_basebackup`` (plain, WAL streamed in, manifest with checksums) into
    ``base/<start time>``, verified with ``pg_verifybackup`` before it gets that name.
    With ``keep``, older base backups beyond it go, and WAL the oldest kept one does not
    need goes from the archive."""
    started = datetime.now(UTC)
    name = new_name(started)

    def write(tmp: Path) -> None:
        run(
            "pg_basebackup",
            [
                "-d", url, "-D", str(tmp), "-Fp", "-X", "stream", "-c", "fast",
                "--manifest-checksums=CRC32C", "-l", f"tandem {name}",
            ],
        )  # fmt: skip
        verify_base_backup(tmp)

    path = write_atomically(backup_dir / BASE, name, write)
    if keep is not None:
        kept = prune(backup_dir / BASE, keep)
        oldest = start_segment(kept[0])
        if (backup_dir / WAL).is_dir():
            run("pg_archivecleanup", [str(backup_dir / WAL), oldest])
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return BaseBackup(path, started, start_segment(path), size)


def verify_base_backup(path: Path) -> None:
    """``pg_verifybackup``: every file of the manifest present with its checksum, and the
    WAL the backup needs to be consistent readable. Raises BackupError if not."""
    if not (path / "backup_manifest").is_file():
        raise BackupError(f"{path} is not a base backup (no backup_manifest)")
    try:
        run("pg_verifybackup", ["-q", str(path)])
    except BackupError as exc:
        raise BackupError(f"backup {path} is damaged or incomplete: {exc}") from exc


def start_segment(path: Path) -> str:
    match = _LABEL_START.search((path / "backup_label").read_text(errors="replace"))
    if match is None:
        raise BackupError(f"{path} has no readable backup_label")
    return match.group(1)


def _archived(wal_dir: Path) -> list[Path]:
    if not wal_dir.is_dir():
        return []
    return sorted((p for p in wal_dir.iterdir() if _SEGMENT.match(p.name)), key=lambda p: p.name)


def status(backup_dir: Path, url: str | None) -> dict[str, Any]:
    """The last base backup, the last archived WAL segment, the segment not archived yet
    (from the server, when ``url`` reaches it) and the window a restore can reach."""
    bases = complete(backup_dir / BASE)
    segments = _archived(backup_dir / WAL)
    report: dict[str, Any] = {
        "backup_dir": str(backup_dir),
        "base_backups": [b.name for b in bases],
        "last_base_backup": bases[-1].name if bases else None,
        "last_archived_wal": segments[-1].name if segments else None,
        "last_archived_at": (
            datetime.fromtimestamp(segments[-1].stat().st_mtime, UTC).isoformat()
            if segments
            else None
        ),
    }
    if url is not None:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT current_setting('archive_mode'), pg_walfile_name(pg_current_wal_lsn()),"
                " pg_current_wal_lsn()::text, last_failed_wal, last_failed_time"
                " FROM pg_stat_archiver"
            ).fetchone()
        if row is not None:
            mode, current, lsn, failed, failed_at = row
            report["archive_mode"] = mode
            report["not_archived_yet"] = {"segment": current, "current_lsn": lsn}
            if failed and (not segments or failed >= segments[-1].name):
                report["last_failed_wal"] = failed
                report["last_failed_at"] = failed_at.isoformat() if failed_at else None
    first = name_time(bases[0].name) if bases else None
    report["restore_window"] = (
        {"from": first.isoformat(), "to": report["last_archived_at"] or first.isoformat()}
        if first is not None
        else None
    )
    return report


@dataclass(frozen=True)
class Restored:
    data_dir: Path
    base_backup: str
    target: str  # the requested point: an ISO time, or "latest"
    reached: str | None  # the commit time of the last transaction replayed
    timeline: int

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "data_dir": str(self.data_dir)}


def pick_base_backup(source: Path, to_time: datetime | None) -> tuple[Path, Path]:
    """The base backup to start from and the WAL archive: ``source`` is a backup directory
    (the newest base backup started before ``to_time``) or one base backup in it."""
    if (source / "backup_manifest").is_file():
        return source, source.parent.parent / WAL
    bases = complete(source / BASE)
    if to_time is not None:
        bases = [b for b in bases if (name_time(b.name) or to_time) <= to_time]
    if not bases:
        raise BackupError(
            f"no base backup in {source / BASE}"
            + (f" started before {to_time.isoformat()}" if to_time else "")
        )
    return bases[-1], source / WAL


def prepare_target(pgdata: Path, *, force: bool) -> None:
    if pgdata.exists() and any(pgdata.iterdir()):
        if not force:
            raise BackupError(
                f"{pgdata} is not empty: restore into a fresh data directory "
                "(or pass --force to replace it)"
            )
        shutil.rmtree(pgdata)


def restore_base_backup(
    source: Path,
    pgdata: Path,
    *,
    to_time: datetime | None = None,
    force: bool = False,
    timeout_s: float = 600.0,
) -> Restored:
    """Copy a verified base backup into ``pgdata``, replay archived WAL up to ``to_time``
    (or all of it), promote, and stop the server cleanly: ``pgdata`` is then a normal data
    directory (``tandem run`` with ``TANDEM_DATA_DIR`` its parent starts on it)."""
    base, wal_dir = pick_base_backup(source, to_time)
    verify_base_backup(base)
    prepare_target(pgdata, force=force)
    shutil.copytree(base, pgdata, ignore=shutil.ignore_patterns("backup_manifest"))
    pgdata.chmod(0o700)
    # The source's run state (its socket's lock file, pgserver's list of users, its log)
    # is copied with the rest; a server starting here must not see it.
    for leftover in ("postmaster.pid", "postmaster.opts", ".handle_pids.json", "log"):
        (pgdata / leftover).unlink(missing_ok=True)
    for lock in pgdata.glob(".s.PGSQL.*"):
        lock.unlink()
    restore = f"cp {shlex.quote(str(wal_dir.resolve()))}/%f %p"
    settings = {
        "restore_command": restore,
        "recovery_target_action": "promote",
        "recovery_target_timeline": "latest",
        # The restored server must not write into the archive it was restored from:
        # point it at a new TANDEM_BACKUP_DIR to archive again.
        "archive_mode": "off",
    }
    if to_time is not None:
        settings["recovery_target_time"] = to_time.astimezone(UTC).isoformat()
    with (pgdata / "postgresql.auto.conf").open("a") as conf:
        conf.write("\n# tandem restore\n")
        for key, value in settings.items():
            conf.write(f"{key} = '{value.replace(chr(39), chr(39) * 2)}'\n")
    (pgdata / "recovery.signal").touch()
    give_to_server(pgdata)
    try:
        with _started(pgdata, timeout_s) as conn:
            row = _recovered(conn, timeout_s)
    except psycopg.OperationalError as exc:  # the server stopped: recovery failed
        _wait_stopped(pgdata)
        raise BackupError(f"recovery failed: {_log_tail(pgdata / 'log')}") from exc
    reached, timeline = row if row is not None else (None, 0)
    return Restored(
        pgdata,
        base.name,
        to_time.astimezone(UTC).isoformat() if to_time else "latest",
        reached.astimezone(UTC).isoformat() if reached else None,
        int(timeline or 0),
    )


def _recovered(conn: psycopg.Connection[Any], timeout_s: float) -> tuple[Any, ...] | None:
    """Wait until the server has promoted; the last replayed commit time and timeline."""
    deadline = time.monotonic() + timeout_s
    while True:
        row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        if row is not None and not row[0]:
            break
        if time.monotonic() > deadline:
            raise BackupError(f"recovery did not finish within {timeout_s:.0f} s")
        time.sleep(0.2)
    return conn.execute(
        "SELECT pg_last_xact_replay_timestamp(), (SELECT timeline_id FROM pg_control_checkpoint())"
    ).fetchone()


@contextmanager
def _started(pgdata: Path, timeout_s: float) -> Iterator[psycopg.Connection[Any]]:
    """The server on ``pgdata``, on a private socket and no TCP port, for the recovery;
    stopped cleanly after (a failed recovery's log tail is the error)."""
    sockets = Path(tempfile.mkdtemp(prefix="tandem-restore-"))
    give_to_server(sockets)
    log = pgdata / "log"
    try:
        try:
            run(
                "pg_ctl",
                ["-D", str(pgdata), "-w", "-t", str(int(timeout_s)), "-l", str(log),
                 "-o", f"-h '' -k {shlex.quote(str(sockets))}", "start"],
                timeout_s=timeout_s + 30,
                as_server=True,
            )  # fmt: skip
        except BackupError as exc:
            raise BackupError(f"recovery failed: {_log_tail(log) or exc}") from exc
        try:
            conn = psycopg.connect(
                host=str(sockets), dbname="postgres", user="postgres", autocommit=True
            )
            with conn:
                yield conn
        finally:
            if (pgdata / "postmaster.pid").exists():
                try:
                    run(
                        "pg_ctl",
                        ["-D", str(pgdata), "-m", "fast", "-w", "stop"],
                        timeout_s=120,
                        as_server=True,
                    )
                except BackupError:
                    if (pgdata / "postmaster.pid").exists():
                        raise  # still running: say so; else it stopped on its own
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


def _wait_stopped(pgdata: Path, timeout_s: float = 10.0) -> None:
    """Until a server that failed recovery has exited (its last words logged)."""
    deadline = time.monotonic() + timeout_s
    while (pgdata / "postmaster.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def _log_tail(log: Path) -> str:
    """The server's FATAL/PANIC lines: Postgres's own words for why recovery stopped."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    fatal = [line for line in lines if "FATAL" in line or "PANIC" in line]
    return " ".join((fatal or lines)[-2:])
