"""Target databases: each named in configuration, with its own read-only pool, catalog
and join graph, and the role checks that refuse a role able to write; SQLite and DuckDB
files and MySQL/MariaDB servers (``_warehouses``, ``_engines``, ``_mysql``) beside Postgres.
"""

from __future__ import annotations

from services.sql.targets._mysql import READ_ONLY_RECIPE, connect_args, mysql_unreachable
from services.sql.targets._targets import (
    ANY_TENANT,
    SUPERUSER_VARIABLE,
    WRITABLE_VARIABLE,
    Capability,
    Severity,
    Target,
    TargetConfig,
    TargetRegistry,
    WritableTargetError,
    connect_kwargs,
    refusal,
    refusal_message,
    role_capabilities,
)
from services.sql.targets._warehouses import (
    EngineTarget,
    EngineWarehouse,
    engine_of,
    file_engine,
    file_problem,
    open_target,
)

__all__ = [
    "ANY_TENANT",
    "READ_ONLY_RECIPE",
    "SUPERUSER_VARIABLE",
    "WRITABLE_VARIABLE",
    "Capability",
    "EngineTarget",
    "EngineWarehouse",
    "Severity",
    "Target",
    "TargetConfig",
    "TargetRegistry",
    "WritableTargetError",
    "connect_args",
    "connect_kwargs",
    "engine_of",
    "file_engine",
    "file_problem",
    "mysql_unreachable",
    "open_target",
    "refusal",
    "refusal_message",
    "role_capabilities",
]
