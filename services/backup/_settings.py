"""Backup settings from the environment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.common import Env


@dataclass(frozen=True)
class BackupSettings:
    """``TANDEM_BACKUP_DIR``: where backups and the WAL archive go (unset: no archive, and
    ``tandem backup`` needs ``--dir``). ``TANDEM_BACKUP_ARCHIVE_TIMEOUT_S``: the longest a
    written transaction waits before its WAL segment is archived — the most a restore to
    "latest" can lose on an idle-ish server (a busy one fills segments sooner)."""

    backup_dir: Path | None
    archive_timeout_s: int = 60

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> BackupSettings:
        env = Env(environ)
        directory = env.get_optional("TANDEM_BACKUP_DIR")
        return cls(
            backup_dir=Path(directory) if directory else None,
            archive_timeout_s=env.get_int("TANDEM_BACKUP_ARCHIVE_TIMEOUT_S", 60, minimum=1),
        )
