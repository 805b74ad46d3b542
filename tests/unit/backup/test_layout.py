"""A backup is visible under its final name only once written and verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.backup._layout import complete, new_name, prune, write_atomically


def _partial_then_fail(tmp: Path) -> None:
    tmp.mkdir()
    (tmp / "half-written").write_bytes(b"x" * 100)
    raise RuntimeError("verification failed")


def test_a_write_that_fails_leaves_nothing_in_the_parent(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="verification failed"):
        write_atomically(tmp_path, new_name(), _partial_then_fail)
    assert list(tmp_path.iterdir()) == []
    assert complete(tmp_path) == []


def test_a_backup_whose_process_died_is_cleared_by_the_next_and_never_listed(
    tmp_path: Path,
) -> None:
    stale = tmp_path / f".partial-{new_name()}"
    stale.mkdir()
    assert complete(tmp_path) == []
    done = write_atomically(tmp_path, new_name(), lambda tmp: tmp.mkdir())
    assert list(tmp_path.iterdir()) == [done]
    assert complete(tmp_path) == [done]


def test_prune_keeps_the_newest(tmp_path: Path) -> None:
    names = ["20260101T000000.000000Z", "20260102T000000.000000Z", "20260103T000000.000000Z"]
    for name in names:
        (tmp_path / name).mkdir()
    assert [p.name for p in prune(tmp_path, 2)] == names[1:]
    assert sorted(p.name for p in tmp_path.iterdir()) == names[1:]
