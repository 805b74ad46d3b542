"""What the images without DuckDB import: nothing that needs it.

Only the sql image keeps DuckDB (66 MB); retrieval, router, gateway and embedding drop it
(infra/docker/*.Dockerfile), so importing their entry points and the CLI the gateway's
image runs (`tandem certs issue`, `tandem keys`) must not import it, and the sql service
itself imports it only when a DuckDB warehouse is opened. `make container-test` met this
as `certs exited 1: No module named 'duckdb'`."""

from __future__ import annotations

import subprocess
import sys

ENTRY_POINTS = (
    "gateway.__main__",
    "services.retrieval.__main__",
    "services.router.__main__",
    "services.embedding.__main__",
    "services.sql.__main__",
    "services.cli._main",
    "services.cli._certs",
    "services.sql._check",
)


def test_no_entry_point_of_the_images_imports_duckdb() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {ENTRY_POINTS!r}:\n"
        "    importlib.import_module(name)\n"
        "    assert 'duckdb' not in sys.modules, name\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
