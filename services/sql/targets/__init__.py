"""Target databases: each named in configuration, with its own read-only pool, catalog
and join graph, and the role checks that refuse a role able to write; SQLite and DuckDB
files (``_files``, ``_engines``) beside Postgres.
"""

from __future__ import annotations

from services.sql.targets._files import (
    FileTarget,
    FileWarehouse,
    file_engine,
    file_problem,
    open_target,
)
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

__all__ = [
    "ANY_TENANT",
    "SUPERUSER_VARIABLE",
    "WRITABLE_VARIABLE",
    "Capability",
    "FileTarget",
    "FileWarehouse",
    "Severity",
    "Target",
    "TargetConfig",
    "TargetRegistry",
    "WritableTargetError",
    "connect_kwargs",
    "file_engine",
    "file_problem",
    "open_target",
    "refusal",
    "refusal_message",
    "role_capabilities",
]
