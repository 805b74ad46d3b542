"""The deployment's secrets travel with its backups.

API keys are stored as HMACs under the gateway's pepper (``$TANDEM_DATA_DIR/secrets/``,
generated once unless ``GATEWAY_KEY_PEPPER`` is set): a database restored without it
holds keys that no longer verify. The restore drill found this; so a backup keeps a copy
of that folder beside ``base/`` and ``logical/`` (mode 0700/0600, as in the data
directory: a backup is as secret as the data directory), and a restore puts it back.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from services.backup._tools import BackupError

SECRETS = "secrets"


def save_secrets(data_dir: Path, backup_dir: Path) -> list[str]:
    """Copy ``data_dir/secrets/*`` into ``backup_dir/secrets/`` (each file replaced
    atomically); the names copied."""
    source = data_dir / SECRETS
    if not source.is_dir():
        return []
    target = backup_dir / SECRETS
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    copied = []
    for file in sorted(p for p in source.iterdir() if p.is_file()):
        tmp = target / f".{file.name}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(file.read_bytes())
        tmp.replace(target / file.name)
        copied.append(file.name)
    return copied


def restore_secrets(backup_dir: Path, data_dir: Path, *, force: bool = False) -> list[str]:
    """Put the backup's secrets into ``data_dir/secrets/``; a different secret already
    there is refused unless ``force`` (it would leave the restored keys unverifiable)."""
    source = backup_dir / SECRETS
    if not source.is_dir():
        return []
    target = data_dir / SECRETS
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    restored = []
    for file in sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith(".")):
        existing = target / file.name
        if existing.exists() and existing.read_bytes() != file.read_bytes() and not force:
            raise BackupError(
                f"{existing} differs from the backup's: the restored API keys need the "
                "backup's (pass --force to replace it)"
            )
        shutil.copy2(file, existing)
        existing.chmod(0o600)
        restored.append(file.name)
    return restored
