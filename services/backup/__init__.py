"""Backups that are restored, not just taken: physical base backups with a continuous
WAL archive (point-in-time recovery), logical dumps for small or managed installs, and
their restore into a fresh data directory or an empty server. ``tandem backup`` and
``tandem restore`` are its command line; ``tandem bench restore-drill`` proves it."""

from services.backup._layout import BASE, LOGICAL, WAL, root_of
from services.backup._logical import (
    LogicalBackup,
    restore_logical_backup,
    take_logical_backup,
    verify_logical_backup,
)
from services.backup._physical import (
    BaseBackup,
    Restored,
    archive_command,
    enable_archiving,
    restore_base_backup,
    status,
    take_base_backup,
    verify_base_backup,
)
from services.backup._secrets import SECRETS, restore_secrets, save_secrets
from services.backup._settings import BackupSettings
from services.backup._tools import BackupError

__all__ = [
    "BASE",
    "LOGICAL",
    "SECRETS",
    "WAL",
    "BackupError",
    "BackupSettings",
    "BaseBackup",
    "LogicalBackup",
    "Restored",
    "archive_command",
    "enable_archiving",
    "restore_base_backup",
    "restore_logical_backup",
    "restore_secrets",
    "root_of",
    "save_secrets",
    "status",
    "take_base_backup",
    "take_logical_backup",
    "verify_base_backup",
    "verify_logical_backup",
]
