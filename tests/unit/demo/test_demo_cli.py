"""``python -m services.demo show|write`` (the commands that need no server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.demo._cli import main


def test_show_prints_the_counts_and_the_compound_answer(capsys: pytest.CaptureFixture[str]):
    assert main(["show", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == sum(summary["by_kind"].values()) == 140
    assert summary["mentioning"] == ["Larkspur Industries", "Monarch Care", "Lakeside Council"]
    assert summary["not_mentioning"] == ["Tidewater Department", "Riverstone Studios"]
    assert len(summary["secret_documents"]) == 3 and len(summary["injection_documents"]) == 4

    assert main(["show"]) == 0
    text = capsys.readouterr().out
    assert "Larkspur Industries" in text and "does not mention a security review" in text


def test_write_exports_markdown_files_by_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["write", str(tmp_path), "--accounts", "12"]) == 0
    files = sorted(tmp_path.rglob("*.md"))
    assert {f.parent.name for f in files} >= {"account_brief", "call_note", "policy"}
    assert len(list((tmp_path / "account_brief").glob("*.md"))) == 12
    assert all(f.read_text().startswith("# ") for f in files)
    assert f"wrote {len(files)} markdown files" in capsys.readouterr().out
