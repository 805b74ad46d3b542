"""The key pepper travels with a backup: restored keys verify only with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.backup import BackupError, restore_secrets, save_secrets


def _data_dir(root: Path, pepper: bytes) -> Path:
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "gateway-key-pepper").write_bytes(pepper)
    return root


def test_the_pepper_is_saved_private_and_restored_into_a_fresh_data_directory(
    tmp_path: Path,
) -> None:
    source = _data_dir(tmp_path / "source", b"p" * 32)
    backups = tmp_path / "backups"
    assert save_secrets(source, backups) == ["gateway-key-pepper"]
    saved = backups / "secrets" / "gateway-key-pepper"
    assert saved.stat().st_mode & 0o777 == 0o600
    assert (backups / "secrets").stat().st_mode & 0o777 == 0o700
    assert restore_secrets(backups, tmp_path / "fresh") == ["gateway-key-pepper"]
    assert (tmp_path / "fresh" / "secrets" / "gateway-key-pepper").read_bytes() == b"p" * 32


def test_a_different_pepper_in_the_target_is_refused_unless_forced(tmp_path: Path) -> None:
    save_secrets(_data_dir(tmp_path / "source", b"old" * 11), tmp_path / "backups")
    target = _data_dir(tmp_path / "target", b"new" * 11)
    with pytest.raises(BackupError, match="differs from the backup"):
        restore_secrets(tmp_path / "backups", target)
    assert (target / "secrets" / "gateway-key-pepper").read_bytes() == b"new" * 11
    restore_secrets(tmp_path / "backups", target, force=True)
    assert (target / "secrets" / "gateway-key-pepper").read_bytes() == b"old" * 11


def test_no_secrets_folder_is_nothing_to_do(tmp_path: Path) -> None:
    assert save_secrets(tmp_path / "none", tmp_path / "backups") == []
    assert restore_secrets(tmp_path / "backups", tmp_path / "fresh") == []
