"""An access policy on a SQLite, DuckDB or MySQL warehouse is refused at configuration:
its row filters are written into statements, and a view reads past them. On Postgres the
policy is checked against what each view reads; these engines are not asked, so the
database is not served with a policy it could not hold (fail closed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common import SettingsError
from services.sql import TargetConfig
from services.sql.access import AccessPolicy
from services.sql.targets import EngineTarget


@pytest.mark.parametrize(
    "url", ["sqlite:///tmp/shop.sqlite", "duckdb:///tmp/shop.duckdb", "mysql://r@db/shop"]
)
def test_an_access_policy_on_an_engine_warehouse_is_refused(url: str) -> None:
    policy = AccessPolicy(Path("shop.policy.json"), hidden=(("orders", frozenset({"ops"})),))
    with pytest.raises(SettingsError, match=r"access policies .* need a Postgres database"):
        EngineTarget(TargetConfig("shop", url, access=policy))
    EngineTarget(TargetConfig("shop", url))  # without one, served
