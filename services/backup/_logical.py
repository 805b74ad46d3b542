"""Logical backups: ``pg_dump -Fc`` of every database of the server, with the roles.

For small installs and managed Postgres (no replication rights, no WAL archive of
ours): a dump is a consistent snapshot of each database at its start, restored with
``pg_restore`` into an empty server; there is no point-in-time recovery between dumps.
A dump's directory holds ``manifest.json`` (each file's sha256): a truncated or altered
dump is refused before anything is restored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from services.backup._layout import LOGICAL, complete, new_name, prune, write_atomically
from services.backup._tools import BackupError, run

_MANIFEST = "manifest.json"
_GLOBALS = "globals.sql"


@dataclass(frozen=True)
class LogicalBackup:
    path: Path
    databases: tuple[str, ...]
    bytes: int


def _databases(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate "
            "ORDER BY datname"
        ).fetchall()
    return [r[0] for r in rows]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def take_logical_backup(url: str, backup_dir: Path, *, keep: int | None = None) -> LogicalBackup:
    """One ``<database>.dump`` per database plus the roles (``globals.sql``, without
    passwords: managed servers do not let them be read), verified readable by
    ``pg_restore --list`` and checksummed, under ``logical/<start time>``."""
    started = datetime.now(UTC)
    databases = _databases(url)

    def write(tmp: Path) -> None:
        tmp.mkdir(mode=0o700)
        files: dict[str, str] = {}
        globals_sql = run("pg_dumpall", ["-d", url, "--globals-only", "--no-role-passwords"])
        (tmp / _GLOBALS).write_text(globals_sql)
        files[_GLOBALS] = _sha256(tmp / _GLOBALS)
        for name in databases:
            dump = tmp / f"{name}.dump"
            run("pg_dump", ["-Fc", "-f", str(dump), "-d", make_conninfo(url, dbname=name)])
            run("pg_restore", ["--list", str(dump)])  # the archive's table of contents reads
            files[dump.name] = _sha256(dump)
        manifest = {"started": started.isoformat(), "databases": databases, "files": files}
        (tmp / _MANIFEST).write_text(json.dumps(manifest, indent=2))

    path = write_atomically(backup_dir / LOGICAL, new_name(started), write)
    if keep is not None:
        prune(backup_dir / LOGICAL, keep)
    size = sum(f.stat().st_size for f in path.iterdir())
    return LogicalBackup(path, tuple(databases), size)


def verify_logical_backup(path: Path) -> dict[str, Any]:
    """The manifest of a complete, unaltered logical backup; BackupError otherwise."""
    try:
        manifest: dict[str, Any] = json.loads((path / _MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise BackupError(f"{path} is not a logical backup (no readable {_MANIFEST})") from exc
    for name, digest in manifest["files"].items():
        file = path / name
        if not file.is_file() or _sha256(file) != digest:
            raise BackupError(f"backup {path} is damaged or incomplete: {name} does not match")
    return manifest


def pick_logical_backup(source: Path) -> Path:
    if (source / _MANIFEST).is_file():
        return source
    backups = complete(source / LOGICAL)
    if not backups:
        raise BackupError(f"no logical backup in {source / LOGICAL}")
    return backups[-1]


def restore_logical_backup(source: Path, url: str, *, force: bool = False) -> dict[str, Any]:
    """Roles, then each database, into the server at ``url``, which must be empty (no
    tables in ``postgres``, no other database) unless ``force``."""
    path = pick_logical_backup(source)
    manifest = verify_logical_backup(path)
    if not force:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
                " AND n.nspname NOT LIKE 'pg_toast%' AND c.relkind IN ('r', 'p')"
            ).fetchone()
        others = [d for d in _databases(url) if d != "postgres"]
        if (row is not None and row[0]) or others:
            raise BackupError(
                "the target server is not empty: restore a logical backup into a fresh "
                "server (or pass --force)"
            )
    # Roles first (objects name their owners); "role postgres already exists" is expected.
    run("psql", ["-d", url, "-q", "-v", "ON_ERROR_STOP=0", "-f", str(path / _GLOBALS)])
    for name in manifest["databases"]:
        dump = str(path / f"{name}.dump")
        if name == "postgres":
            run("pg_restore", ["--exit-on-error", "-d", url, dump])
        else:
            run("pg_restore", ["--exit-on-error", "-C", "-d", url, dump])
    return {
        "backup": path.name,
        "reached": manifest["started"],
        "databases": manifest["databases"],
    }
