"""SQL service settings, read once from the environment at start (fail fast, naming the
variable)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from services.common import Env, SettingsError
from services.sql.access import VARIABLE as ACCESS_VARIABLE
from services.sql.access import AccessPolicy, load_access_policy, parse_access_policies
from services.sql.definitions import GlossaryEntry, JoinSpec, load_glossary_file
from services.sql.demo import DEFAULT_DATABASE, DEFAULT_READER_ROLE
from services.sql.demo.data import DEFAULT_SEED
from services.sql.targets import ANY_TENANT, SUPERUSER_VARIABLE, WRITABLE_VARIABLE
from services.sql.verify import VerifyMode

DEFAULT_PORT = 50055
DEFAULT_TARGET = "warehouse"
# The tenant the demo warehouse serves unless SQL_DATABASE_TENANTS says otherwise
# (``tandem run`` issues its demo key for it).
DEMO_TENANT = "demo"
MAX_REPAIRS = 2
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_TENANT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass(frozen=True)
class SqlSettings:
    """Everything the SQL service reads from the environment, with its default.

    ``reference_date`` (SQL_REFERENCE_DATE) defaults to the demo data's anchor, not today,
    while the service serves the demo warehouse it set up itself (see the field).
    ``demo_warehouse`` (SQL_DEMO_WAREHOUSE) defaults to on only when SQL_DATABASES is
    empty: serving your own databases does not create the demo one unless asked.
    """

    databases: tuple[tuple[str, str], ...] = ()
    warehouse_url: str | None = None
    default_database: str = DEFAULT_TARGET
    demo_warehouse: bool = True
    setup_warehouse: bool = True
    warehouse_database: str = DEFAULT_DATABASE
    reader_role: str = DEFAULT_READER_ROLE
    demo_seed: int = DEFAULT_SEED
    admin_url: str | None = None
    data_dir: Path = Path(".tandem")
    # SQL_UNSAFE_WRITABLE_DATABASES / SQL_UNSAFE_SUPERUSER_DATABASES: databases served even
    # though their role can write (or is a superuser); logged as an error at every start.
    writable_databases: frozenset[str] = frozenset()
    superuser_databases: frozenset[str] = frozenset()
    database_tenants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    default_max_rows: int = 50
    max_rows: int = 1000
    statement_timeout_s: float = 5.0
    max_statement_timeout_s: float = 30.0
    client_timeout_grace_s: float = 1.0
    max_result_bytes: int = 1_048_576
    # SQL_WORK_MEM_KB: what each sort or hash of a statement may hold before it spills
    # (work_mem for the statement's transaction; 0 leaves the database's own setting).
    work_mem_kb: int = 8192
    max_sql_chars: int = 20_000
    max_question_chars: int = 2000
    max_instructions_chars: int = 4000
    catalog_max_chars: int = 8000
    catalog_ttl_s: float = 300.0
    max_repairs: int = MAX_REPAIRS
    # SQL_VERIFY: what a failed verification check does to an answer — "enforce" refuses
    # it with the check's reason, "audit" reports the check and answers anyway (to
    # measure what each check catches and costs), "off" runs no check.
    verify: VerifyMode | None = VerifyMode.ENFORCE
    pool_max_size: int = 4
    # SQL_REFERENCE_DATE: the day relative dates ("last quarter", "this year") are read
    # against. Unset: the demo data's anchor (2025-06-30) while the default target is the
    # demo warehouse this service sets up, since its rows end there; today otherwise.
    reference_date: date | None = None
    # SQL_GLOSSARIES: each database's business definitions, loaded from its file at start.
    glossaries: Mapping[str, tuple[GlossaryEntry, ...]] = field(default_factory=dict)
    # ... and the joins each file declares ("joins"), for databases that declare no keys.
    glossary_joins: Mapping[str, tuple[JoinSpec, ...]] = field(default_factory=dict)
    # SQL_EXCLUDE_TABLES: per database, the tables its catalog leaves out (shell patterns
    # such as ``stg_*``, ``*_backup`` or ``archive.*``).
    exclude_tables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # SQL_ACCESS_POLICIES: per database, who may read which rows, columns and tables
    # (row filters, hidden columns and tables, or database roles), loaded at start.
    access_policies: Mapping[str, AccessPolicy] = field(default_factory=dict)

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
        databases = parse_databases(env.get_str("SQL_DATABASES", ""))
        glossaries = parse_glossaries(env.get_str("SQL_GLOSSARIES", ""))
        if env.get_str("SQL_ALLOW_WRITABLE", ""):
            raise SettingsError(
                f"SQL_ALLOW_WRITABLE was split: list a database whose role may write in "
                f"{WRITABLE_VARIABLE}, one whose role is a superuser in {SUPERUSER_VARIABLE}"
            )
        known = {name for name, _ in databases} | {DEFAULT_TARGET}
        warehouse_url = env.get_optional("WAREHOUSE_DATABASE_URL")
        demo = env.get_bool("SQL_DEMO_WAREHOUSE", not databases)
        serves_warehouse = bool(warehouse_url) or demo or DEFAULT_TARGET in dict(databases)
        default_database = env.get_optional("SQL_DEFAULT_DATABASE")
        if default_database is None:
            default_database = (
                DEFAULT_TARGET if serves_warehouse or not databases else databases[0][0]
            )
        for name, _ in glossaries:
            if name not in known:
                raise SettingsError(
                    f"SQL_GLOSSARIES names {name!r}, which is not a configured database"
                )
        files = {name: load_glossary_file(path) for name, path in glossaries}
        exclude_tables = parse_exclude_tables(env.get_str("SQL_EXCLUDE_TABLES", ""))
        for name in exclude_tables:
            if name not in known:
                raise SettingsError(
                    f"SQL_EXCLUDE_TABLES names {name!r}, which is not a configured database"
                )
        policies = parse_access_policies(env.get_str(ACCESS_VARIABLE, ""))
        for name, _ in policies:
            _name(ACCESS_VARIABLE, name)
            if name not in known:
                raise SettingsError(
                    f"{ACCESS_VARIABLE} names {name!r}, which is not a configured database"
                )
        return cls(
            access_policies={name: load_access_policy(path) for name, path in policies},
            databases=databases,
            warehouse_url=warehouse_url,
            default_database=_name("SQL_DEFAULT_DATABASE", default_database),
            demo_warehouse=demo,
            setup_warehouse=env.get_bool("SQL_SETUP_WAREHOUSE", True),
            warehouse_database=env.get_str("SQL_WAREHOUSE_DATABASE", DEFAULT_DATABASE),
            reader_role=env.get_str("SQL_READER_ROLE", DEFAULT_READER_ROLE),
            demo_seed=env.get_int("SQL_DEMO_SEED", DEFAULT_SEED, minimum=0),
            admin_url=env.get_optional("DATABASE_URL"),
            data_dir=Path(env.get_str("TANDEM_DATA_DIR", ".tandem")),
            writable_databases=_names(WRITABLE_VARIABLE, env.get_str(WRITABLE_VARIABLE, "")),
            superuser_databases=_names(SUPERUSER_VARIABLE, env.get_str(SUPERUSER_VARIABLE, "")),
            database_tenants=parse_database_tenants(env.get_str("SQL_DATABASE_TENANTS", "")),
            default_max_rows=default_rows,
            max_rows=max_rows,
            statement_timeout_s=timeout,
            max_statement_timeout_s=max_timeout,
            client_timeout_grace_s=env.get_float("SQL_CLIENT_TIMEOUT_GRACE_S", 1.0, minimum=0.0),
            max_result_bytes=env.get_int("SQL_MAX_RESULT_BYTES", 1_048_576, minimum=1024),
            work_mem_kb=env.get_int("SQL_WORK_MEM_KB", 8192, minimum=0),
            max_sql_chars=env.get_int("SQL_MAX_SQL_CHARS", 20_000, minimum=16),
            max_question_chars=env.get_int("SQL_MAX_QUESTION_CHARS", 2000, minimum=16),
            max_instructions_chars=env.get_int("SQL_MAX_INSTRUCTIONS_CHARS", 4000, minimum=0),
            catalog_max_chars=env.get_int("SQL_CATALOG_MAX_CHARS", 8000, minimum=200),
            catalog_ttl_s=env.get_float("SQL_CATALOG_TTL_S", 300.0, minimum=0.0),
            max_repairs=repairs,
            verify=_verify_mode(env.get_str("SQL_VERIFY", VerifyMode.ENFORCE.value)),
            pool_max_size=env.get_int("SQL_POOL_MAX_SIZE", 4, minimum=1),
            reference_date=_date("SQL_REFERENCE_DATE", env.get_optional("SQL_REFERENCE_DATE")),
            glossaries={name: file.entries for name, file in files.items()},
            glossary_joins={name: file.joins for name, file in files.items() if file.joins},
            exclude_tables=exclude_tables,
        )


def _verify_mode(raw: str) -> VerifyMode | None:
    value = raw.strip().lower()
    if value == "off":
        return None
    try:
        return VerifyMode(value)
    except ValueError:
        raise SettingsError(f"SQL_VERIFY must be one of enforce, audit, off; got {raw!r}") from None


def _split(raw: str, sep: str) -> list[str]:
    return [part.strip() for part in raw.split(sep) if part.strip()]


def _name(variable: str, value: str) -> str:
    if not _NAME.match(value):
        raise SettingsError(
            f"{variable}: database names are lowercase letters, digits, '-' and '_', "
            f"starting with a letter; got {value!r}"
        )
    return value


def _names(variable: str, raw: str) -> frozenset[str]:
    return frozenset(_name(variable, n) for n in _split(raw, ","))


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


def parse_glossaries(raw: str) -> tuple[tuple[str, Path], ...]:
    """``name=path;name=path`` (SQL_GLOSSARIES): one glossary file per database."""
    found: dict[str, Path] = {}
    for entry in _split(raw, ";"):
        name, sep, path = entry.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not path:
            raise SettingsError(f"SQL_GLOSSARIES entries look like name=path; got {entry!r}")
        _name("SQL_GLOSSARIES", name)
        if name in found:
            raise SettingsError(f"SQL_GLOSSARIES names {name!r} twice")
        found[name] = Path(path)
    return tuple(found.items())


_PATTERN = re.compile(r"^[A-Za-z0-9_*?.\[\]!$-]{1,127}$")


def parse_exclude_tables(raw: str) -> dict[str, tuple[str, ...]]:
    """``name=stg_*,*_backup;name2=archive.*`` (SQL_EXCLUDE_TABLES): per database, shell
    patterns of the tables its catalog leaves out; a pattern with a dot matches
    ``schema.table``, one without the table's name in any schema (case-insensitive)."""
    found: dict[str, tuple[str, ...]] = {}
    for entry in _split(raw, ";"):
        name, sep, listed = entry.partition("=")
        patterns = tuple(_split(listed, ","))
        if not sep or not patterns:
            raise SettingsError(
                f"SQL_EXCLUDE_TABLES entries look like name=stg_*,*_backup; got {entry!r}"
            )
        for pattern in patterns:
            if not _PATTERN.match(pattern) or pattern.count(".") > 1:
                raise SettingsError(
                    f"SQL_EXCLUDE_TABLES: {pattern!r} is not a table pattern (letters, digits, "
                    f"'_', '*', '?', '[...]', and one '.' between schema and table)"
                )
        database = _name("SQL_EXCLUDE_TABLES", name.strip())
        if database in found:
            raise SettingsError(f"SQL_EXCLUDE_TABLES names {database!r} twice")
        found[database] = patterns
    return found


def parse_database_tenants(raw: str) -> dict[str, frozenset[str]]:
    """``name=tenant1,tenant2;name=*`` (SQL_DATABASE_TENANTS): who may query which database.

    Closed by default: a database not listed serves no tenant (the demo warehouse the
    service sets up serves ``demo``); ``*`` opens one to every tenant, said explicitly.
    """
    found: dict[str, frozenset[str]] = {}
    for entry in _split(raw, ";"):
        name, sep, listed = entry.partition("=")
        tenants = frozenset(_split(listed, ","))
        if not sep or not tenants:
            raise SettingsError(
                f"SQL_DATABASE_TENANTS entries look like name=tenant,tenant or name=*; "
                f"got {entry!r}"
            )
        for tenant in tenants:
            if tenant != ANY_TENANT and not _TENANT.match(tenant):
                raise SettingsError(
                    f"SQL_DATABASE_TENANTS: {tenant!r} is not a tenant id (lowercase letters, "
                    f"digits, '-' and '_') or '*'"
                )
        database = _name("SQL_DATABASE_TENANTS", name.strip())
        if database in found:
            raise SettingsError(f"SQL_DATABASE_TENANTS names {database!r} twice")
        found[database] = tenants
    return found
