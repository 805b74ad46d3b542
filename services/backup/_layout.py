"""Where a backup directory keeps what: ``base/<name>`` (physical base backups),
``wal/`` (the continuous WAL archive) and ``logical/<name>`` (``pg_dump`` archives).

A backup is written under a hidden temporary name in its parent and renamed to its final
name only once verified: anything ``base/`` or ``logical/`` lists by a visible name is a
complete, verified backup, and a failed one leaves only a hidden directory, removed
right away (or by the next backup, if the process died).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

BASE = "base"
WAL = "wal"
LOGICAL = "logical"
_TMP_PREFIX = ".partial-"
_NAME_FORMAT = "%Y%m%dT%H%M%S.%fZ"


def root_of(source: Path) -> Path:
    """The backup directory of ``source``: itself, or the one holding that one backup."""
    if (source / "backup_manifest").is_file() or (source / "manifest.json").is_file():
        return source.parent.parent
    return source


def new_name(now: datetime | None = None) -> str:
    """A backup's name: its UTC start time, sortable as text."""
    return (now or datetime.now(UTC)).strftime(_NAME_FORMAT)


def name_time(name: str) -> datetime | None:
    try:
        return datetime.strptime(name, _NAME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def complete(parent: Path) -> list[Path]:
    """The complete backups under ``parent``, oldest first."""
    if not parent.is_dir():
        return []
    return sorted(
        (p for p in parent.iterdir() if p.is_dir() and name_time(p.name) is not None),
        key=lambda p: p.name,
    )


def write_atomically(parent: Path, name: str, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` on a fresh hidden directory, then rename it to ``parent/name``.
    ``write`` verifies what it wrote; if it raises, the directory is removed."""
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(_TMP_PREFIX + "*"):
        shutil.rmtree(stale, ignore_errors=True)  # a backup whose process died
    tmp = parent / f"{_TMP_PREFIX}{name}"
    try:
        write(tmp)
        final = parent / name
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def prune(parent: Path, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` complete backups; returns those kept."""
    backups = complete(parent)
    if keep < 1:
        raise ValueError("keep must be at least 1")
    for old in backups[:-keep]:
        shutil.rmtree(old)
    return backups[-keep:]
