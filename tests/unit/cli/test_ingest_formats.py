"""``tandem ingest`` offers what the server reads, from the one table that says so
(issue 48 item 8: its help said ".md, .markdown, .txt and .text files" long after PDF,
Office, HTML and now images were served)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from services.cli import _client
from services.common.formats import DOCUMENT_FORMATS, suffixes
from services.retrieval.extract import Kind


def test_every_declared_format_is_one_the_extractor_detects() -> None:
    assert {f.name for f in DOCUMENT_FORMATS} == {k.value for k in Kind}


def test_ingest_help_lists_every_served_format_and_suffix() -> None:
    # Through the installed command, as a person runs it (argparse wraps the text).
    done = subprocess.run(
        [sys.executable, "-c", "from services.cli import main; main(['ingest', '--help'])"],
        capture_output=True,
        text=True,
        check=False,
    )
    help_text = " ".join(done.stdout.split())
    assert ".md, .markdown, .txt and .text files" not in help_text
    for fmt in DOCUMENT_FORMATS:
        assert fmt.label in help_text, fmt
        for suffix in fmt.suffixes:
            assert suffix in help_text, suffix


def test_images_are_sent_to_the_server_and_a_gif_is_skipped_with_the_formats_named(
    tmp_path: Path,
) -> None:
    for name in ("scan.png", "photo.JPG", "stack.tiff", "notes.md", "anim.gif"):
        (tmp_path / name).write_bytes(b"x")
    found, skipped = _client.discover([tmp_path])
    assert sorted(doc_id for _, doc_id in found) == [
        "notes.md", "photo.JPG", "scan.png", "stack.tiff",
    ]  # fmt: skip
    assert suffixes() - suffixes("MARKDOWN", "TEXT") == _client.FILE_SUFFIXES
    (gif,) = skipped
    assert gif.reason.startswith("unsupported type (.gif): PDF (scans read by OCR), Word")
    assert gif.reason.endswith("TIFF images (read by OCR), markdown and text only")
