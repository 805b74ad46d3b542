"""Fixtures for whole-stack tests (the stack itself is ``process_stack`` from
tests/processes.py): the Node.js client's npm dependencies, installed by the test run
itself (``npm ci`` from the committed lockfile into tests/e2e/node/node_modules)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parent / "node"
_STAMP = NODE_DIR / "node_modules" / ".tandem-installed"
_NPM_TIMEOUT_S = 300


def _lock_digest(node: str) -> str:
    version = subprocess.run(
        [node, "--version"], check=True, capture_output=True, text=True
    ).stdout.strip()
    lock = (NODE_DIR / "package-lock.json").read_bytes()
    return hashlib.sha256(lock + version.encode()).hexdigest()


@pytest.fixture(scope="session")
def node_client() -> Path:
    """The Node client directory with its locked dependencies installed.

    ``npm ci`` runs once per lockfile and Node version (a stamp in node_modules records
    which); install scripts are not run, the client needs none.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not installed (the Node client test needs Node >= 18)")
    digest = _lock_digest(node)
    if _STAMP.is_file() and _STAMP.read_text() == digest:
        return NODE_DIR
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=_NPM_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"npm ci failed:\n{result.stdout}\n{result.stderr}"
    _STAMP.write_text(digest)
    return NODE_DIR
