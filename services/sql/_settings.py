"""SQL service settings, read once from the environment at start (fail fast, naming the
variable)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from services.common import Env, SettingsError
from services.sql._warehouse import DEFAULT_DATABASE, DEFAULT_READER_ROLE
from services.sql.demo_data import DEFAULT_SEED

DEFAULT_PORT = 50055
DEFAULT_TARGET = "warehouse"
MAX_REPAIRS = 2
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


@dataclass(frozen=True)
class SqlSettings:
    """Everything the SQL service reads from the environment, with its default.

    ``reference_date`` (SQL_REFERENCE_DATE) defaults to the demo data's anchor, not today,
    while the service serves the demo warehouse it set up itself (see the field).
    """

    databases: tuple[tuple[str, str], ...] = ()
    warehouse_url: str | None = None
    default_database: str = DEFAULT_TARGET
    setup_warehouse: bool = True
    warehouse_database: str = DEFAULT_DATABASE
    reader_role: str = DEFAULT_READER_ROLE
    demo_seed: int = DEFAULT_SEED
    admin_url: str | None = None
    data_dir: Path = Path(".tandem")
    allow_writable: frozenset[str] = frozenset()
    database_tenants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    default_max_rows: int = 50
    max_rows: int = 1000
    statement_timeout_s: float = 5.0
    max_statement_timeout_s: float = 30.0
    client_timeout_grace_s: float = 1.0
    max_result_bytes: int = 1_048_576
    max_sql_chars: int = 20_000
    max_question_chars: int = 2000
    catalog_max_chars: int = 8000
    catalog_ttl_s: float = 300.0
    max_repairs: int = MAX_REPAIRS
    pool_max_size: int = 4
    # SQL_REFERENCE_DATE: the day relative dates ("last quarter", "this year") are read
    # against. Unset: the demo data's anchor (2025-06-30) while the default target is the
    # demo warehouse this service sets up, since its rows end there; today otherwise.
    reference_date: date | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SqlSettings:
        env = Env(environ)
        default_rows = env.get_int("SQL_DEFAULT_MAX_ROWS", 50, minimum=1)
        max_rows = env.get_int("SQL_MAX_ROWS", 1000, minimum=1)
        if default_rows > max_rows:
            raise SettingsError("SQL_DEFAULT_MAX_ROWS must not exceed SQL_MAX_ROWS")
        timeout = env.get_float("SQL_STATEMENT_TIMEOUT_S", 5.0, minimum=0.01)
        max_timeout = env.get_float("SQL_MAX_STATEMENT_TIMEOUT_S", 30.0, minimum=0.01)
        if timeout > max_timeout:
            raise SettingsError(
                "SQL_STATEMENT_TIMEOUT_S must not exceed SQL_MAX_STATEMENT_TIMEOUT_S"
            )
        repairs = env.get_int("SQL_MAX_REPAIRS", MAX_REPAIRS, minimum=0)
        if repairs > MAX_REPAIRS:
            raise SettingsError(f"SQL_MAX_REPAIRS must be <= {MAX_REPAIRS}, got {repairs}")
        return cls(
            databases=parse_databases(env.get_str("SQL_DATABASES", "")),
            warehouse_url=env.get_optional("WAREHOUSE_DATABASE_URL"),
            default_database=_name(
                "SQL_DEFAULT_DATABASE", env.get_str("SQL_DEFAULT_DATABASE", DEFAULT_TARGET)
            ),
            setup_warehouse=env.get_bool("SQL_SETUP_WAREHOUSE", True),
            warehouse_database=env.get_str("SQL_WAREHOUSE_DATABASE", DEFAULT_DATABASE),
            reader_role=env.get_str("SQL_READER_ROLE", DEFAULT_READER_ROLE),
            demo_seed=env.get_int("SQL_DEMO_SEED", DEFAULT_SEED, minimum=0),
            admin_url=env.get_optional("DATABASE_URL"),
            data_dir=Path(env.get_str("TANDEM_DATA_DIR", ".tandem")),
            allow_writable=frozenset(
                _name("SQL_ALLOW_WRITABLE", n)
                for n in _split(env.get_str("SQL_ALLOW_WRITABLE", ""), ",")
            ),
            database_tenants=parse_database_tenants(env.get_str("SQL_DATABASE_TENANTS", "")),
            default_max_rows=default_rows,
            max_rows=max_rows,
            statement_timeout_s=timeout,
            max_statement_timeout_s=max_timeout,
            client_timeout_grace_s=env.get_float("SQL_CLIENT_TIMEOUT_GRACE_S", 1.0, minimum=0.0),
            max_result_bytes=env.get_int("SQL_MAX_RESULT_BYTES", 1_048_576, minimum=1024),
            max_sql_chars=env.get_int("SQL_MAX_SQL_CHARS", 20_000, minimum=16),
            max_question_chars=env.get_int("SQL_MAX_QUESTION_CHARS", 2000, minimum=16),
            catalog_max_chars=env.get_int("SQL_CATALOG_MAX_CHARS", 8000, minimum=200),
            catalog_ttl_s=env.get_float("SQL_CATALOG_TTL_S", 300.0, minimum=0.0),
            max_repairs=repairs,
            pool_max_size=env.get_int("SQL_POOL_MAX_SIZE", 4, minimum=1),
            reference_date=_date("SQL_REFERENCE_DATE", env.get_optional("SQL_REFERENCE_DATE")),
        )


def _split(raw: str, sep: str) -> list[str]:
    return [part.strip() for part in raw.split(sep) if part.strip()]


def _name(variable: str, value: str) -> str:
    if not _NAME.match(value):
        raise SettingsError(
            f"{variable}: database names are lowercase letters, digits, '-' and '_', "
            f"starting with a letter; got {value!r}"
        )
    return value


def _date(variable: str, raw: str | None) -> date | None:
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise SettingsError(f"{variable} must be an ISO date (YYYY-MM-DD), got {raw!r}") from None


def parse_databases(raw: str) -> tuple[tuple[str, str], ...]:
    """``name=url;name=url`` (SQL_DATABASES) as ordered (name, url) pairs."""
    found: dict[str, str] = {}
    for entry in _split(raw, ";"):
        name, sep, url = entry.partition("=")
        name, url = name.strip(), url.strip()
        if not sep or not url:
            raise SettingsError(f"SQL_DATABASES entries look like name=url; got {name!r}")
        _name("SQL_DATABASES", name)
        if name in found:
            raise SettingsError(f"SQL_DATABASES names {name!r} twice")
        found[name] = url
    return tuple(found.items())


def parse_database_tenants(raw: str) -> dict[str, frozenset[str]]:
    """``name=tenant1,tenant2;...`` (SQL_DATABASE_TENANTS): who may query which database.

    Databases not listed are open to every tenant.
    """
    found: dict[str, frozenset[str]] = {}
    for entry in _split(raw, ";"):
        name, sep, tenants = entry.partition("=")
        if not sep:
            raise SettingsError(
                f"SQL_DATABASE_TENANTS entries look like name=tenant,tenant; got {entry!r}"
            )
        found[_name("SQL_DATABASE_TENANTS", name.strip())] = frozenset(_split(tenants, ","))
    return found
