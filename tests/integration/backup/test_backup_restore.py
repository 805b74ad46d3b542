"""``tandem backup`` / ``tandem restore`` on a real embedded Postgres: a base backup plus
the server's WAL archive restored to a point in time and to the latest, a damaged backup
and a non-empty target refused, a logical round trip, retention, and a failed backup
that leaves nothing looking like a backup.

One private server per module (not the session's: archiving restarts it), with WAL
archiving on, as ``tandem run`` sets it with ``TANDEM_BACKUP_DIR``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pgserver
import psycopg
import pytest

from services.backup import (
    BASE,
    LOGICAL,
    WAL,
    BackupError,
    enable_archiving,
    restore_base_backup,
    restore_logical_backup,
    status,
    take_base_backup,
    take_logical_backup,
)
from services.cli._main import main

pytestmark = pytest.mark.integration


@contextmanager
def _server(data_dir: Path) -> Iterator[str]:
    """An embedded server on ``data_dir/pg`` for the block, stopped after.

    Archiving restarts the postmaster (a new pid) and pgserver stops only the one it
    started, so the handle re-reads ``postmaster.pid`` first, as ``tandem run`` does:
    without it the restarted server outlived the test run."""
    data_dir.mkdir(parents=True, exist_ok=True)
    server: Any = pgserver.get_server(data_dir / "pg", cleanup_mode="stop")  # type: ignore[attr-defined]
    try:
        yield server.get_uri("postgres")
    finally:
        server.ensure_postgres_running()
        server.cleanup()


def _rows(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT v FROM notes ORDER BY id").fetchall()]


def _write(url: str, value: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO notes (v) VALUES (%s)", (value,))


def _archive_now(url: str) -> None:
    """Close the current WAL segment and wait until the archiver has stored it."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()
        assert row is not None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done = conn.execute("SELECT last_archived_wal FROM pg_stat_archiver").fetchone()
            if done is not None and done[0] is not None and done[0] >= row[0]:
                return
            time.sleep(0.1)
    raise AssertionError("the WAL segment was not archived")


@dataclass(frozen=True)
class Source:
    """The archiving server, its backup directory, one base backup, and a time T with
    the rows written before it and after it."""

    url: str
    backups: Path
    base: Path
    at_t: datetime
    before_t: list[str]
    all_rows: list[str]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    root = tmp_path_factory.mktemp("backup-src")
    backups = root / "backups"
    with _server(root / "data") as url:
        said = enable_archiving(url, root / "data" / "pg", backups, timeout_s=60)
        assert "archived" in said
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SHOW archive_mode").fetchone() == ("on",)
            conn.execute("CREATE TABLE notes (id serial PRIMARY KEY, v text NOT NULL)")
        _write(url, "before the base backup")
        base = take_base_backup(url, backups)
        _write(url, "after the backup, before T")
        time.sleep(0.3)
        at_t = datetime.now(UTC)
        time.sleep(0.3)
        _write(url, "after T")
        _archive_now(url)
        yield Source(
            url,
            backups,
            base.path,
            at_t,
            ["before the base backup", "after the backup, before T"],
            _rows(url),
        )


def test_restore_to_a_point_in_time_has_the_rows_before_it_and_none_after(
    source: Source, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "restored"
    code = main(
        ["restore", "--from", str(source.backups), "--to", str(target),
         "--to-time", source.at_t.isoformat()]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "reached the commit of 20" in printed and "timeline 2" in printed
    with _server(target) as url:
        assert _rows(url) == source.before_t


def test_restore_to_the_latest_has_every_archived_row(source: Source, tmp_path: Path) -> None:
    restored = restore_base_backup(source.backups, tmp_path / "pg")
    assert restored.target == "latest" and restored.reached is not None
    assert datetime.fromisoformat(restored.reached) > source.at_t
    with _server(tmp_path) as url:
        assert _rows(url) == source.all_rows
    assert "after T" in source.all_rows


def test_a_time_past_the_archive_is_refused_not_silently_the_latest(
    source: Source, tmp_path: Path
) -> None:
    later = datetime(2999, 1, 1, tzinfo=UTC)
    with pytest.raises(BackupError, match=r"recovery failed.*recovery target"):
        restore_base_backup(source.backups, tmp_path / "pg", to_time=later)


def test_status_names_the_last_archived_segment_and_the_one_not_archived_yet(
    source: Source,
) -> None:
    report = status(source.backups, source.url)
    assert report["last_base_backup"] == source.base.name
    assert report["archive_mode"] == "on"
    assert report["not_archived_yet"]["segment"] > report["last_archived_wal"]
    assert report["restore_window"]["from"] < report["restore_window"]["to"]


def test_a_damaged_base_backup_is_refused_and_nothing_is_restored(
    source: Source, tmp_path: Path
) -> None:
    copy = tmp_path / "backups"
    shutil.copytree(source.backups, copy)
    damaged = copy / BASE / source.base.name
    victim = next(
        p for p in sorted((damaged / "base").rglob("*")) if p.is_file() and p.stat().st_size
    )
    with victim.open("r+b") as f:
        f.write(b"\xff" * 8)
    with pytest.raises(BackupError, match="damaged or incomplete"):
        restore_base_backup(copy, tmp_path / "target" / "pg")
    assert not (tmp_path / "target" / "pg").exists()


def test_an_incomplete_base_backup_is_refused(source: Source, tmp_path: Path) -> None:
    copy = tmp_path / "backups"
    shutil.copytree(source.backups, copy)
    (copy / BASE / source.base.name / "global" / "pg_control").unlink()
    with pytest.raises(BackupError, match="damaged or incomplete"):
        restore_base_backup(copy, tmp_path / "target" / "pg")


def test_restore_refuses_a_non_empty_data_directory(source: Source, tmp_path: Path) -> None:
    target = tmp_path / "pg"
    target.mkdir()
    (target / "PG_VERSION").write_text("keep me\n")
    with pytest.raises(BackupError, match="not empty"):
        restore_base_backup(source.backups, target)
    assert (target / "PG_VERSION").read_text() == "keep me\n"


def test_a_failed_backup_leaves_nothing_that_looks_like_a_backup(tmp_path: Path) -> None:
    unreachable = f"host={tmp_path / 'no-server'} dbname=postgres user=postgres"
    with pytest.raises(BackupError, match="pg_basebackup failed"):
        take_base_backup(unreachable, tmp_path)
    assert list((tmp_path / BASE).iterdir()) == []


def test_keep_removes_older_base_backups_and_the_wal_only_they_needed(
    source: Source, tmp_path: Path
) -> None:
    backups = tmp_path / "backups"
    older = backups / BASE / "20000101T000000.000000Z"  # an earlier backup's name
    older.mkdir(parents=True)
    (backups / WAL).mkdir()
    (backups / WAL / "000000010000000000000001").write_bytes(b"")
    newest = take_base_backup(source.url, backups, keep=1)
    assert [p.name for p in (backups / BASE).iterdir()] == [newest.path.name]
    assert not (backups / WAL / "000000010000000000000001").exists()


def test_a_logical_backup_restores_into_an_empty_server(
    source: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data" / "secrets").mkdir(parents=True)
    (tmp_path / "data" / "secrets" / "gateway-key-pepper").write_bytes(b"k" * 32)
    monkeypatch.setenv("DATABASE_URL", source.url)
    monkeypatch.setenv("TANDEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TANDEM_BACKUP_DIR", str(tmp_path / "backups"))
    assert main(["backup", "--logical"]) == 0
    (backup,) = (tmp_path / "backups" / LOGICAL).iterdir()
    with _server(tmp_path / "fresh") as url:
        result = restore_logical_backup(tmp_path / "backups", url)
        assert _rows(url) == source.all_rows
        assert result["backup"] == backup.name and "postgres" in result["databases"]
        with pytest.raises(BackupError, match="not empty"):
            restore_logical_backup(tmp_path / "backups", url)
    assert (tmp_path / "backups" / "secrets" / "gateway-key-pepper").read_bytes() == b"k" * 32


def test_a_truncated_logical_backup_is_refused(source: Source, tmp_path: Path) -> None:
    backup = take_logical_backup(source.url, tmp_path / "backups")
    dump = backup.path / "postgres.dump"
    dump.write_bytes(dump.read_bytes()[: dump.stat().st_size // 2])
    with pytest.raises(BackupError, match="damaged or incomplete"):
        restore_logical_backup(tmp_path / "backups" / LOGICAL / backup.path.name, "unused")
