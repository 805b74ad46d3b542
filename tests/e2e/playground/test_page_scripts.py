"""The page's own scripts outside a browser: Node's test runner on web/playground/test/
(the server-sent-event parser, fed every split of a stream; how errors and SQL values
are worded)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parents[3] / "web" / "playground"


def test_the_event_stream_parser() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    done = subprocess.run(
        [node, "--test", "test/"], cwd=WEB, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout and "# pass 8" in done.stdout
