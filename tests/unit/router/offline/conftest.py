"""The router's offline provider, fresh per test (it holds no state, but tests stay apart)."""

from __future__ import annotations

import pytest

from services.router.offline import DeterministicProvider


@pytest.fixture
def deterministic() -> DeterministicProvider:
    return DeterministicProvider()
