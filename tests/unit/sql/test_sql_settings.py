"""SQL settings from the environment: defaults, parsing, errors naming the variable."""

from __future__ import annotations

from datetime import date

import pytest

from services.common import SettingsError
from services.sql import SqlSettings
from services.sql._server import reference_clock, serves_demo_warehouse, target_configs
from services.sql.catalog import excluded
from services.sql.demo import data as demo_data


def test_defaults():
    settings = SqlSettings.from_env({})
    assert settings.default_database == "warehouse"
    assert (settings.default_max_rows, settings.max_rows) == (50, 1000)
    assert (settings.statement_timeout_s, settings.max_statement_timeout_s) == (5.0, 30.0)
    assert settings.catalog_max_chars == 8000 and settings.max_repairs == 2
    assert (settings.max_result_bytes, settings.work_mem_kb) == (1_048_576, 8192)
    assert SqlSettings.from_env({"SQL_WORK_MEM_KB": "0"}).work_mem_kb == 0
    assert settings.reference_date is None and settings.databases == ()
    assert settings.demo_warehouse  # nothing of your own configured: the demo serves


def test_databases_allow_lists_and_reference_date():
    settings = SqlSettings.from_env(
        {
            "SQL_DATABASES": "warehouse=postgresql://a/w; finance = postgresql://b/f",
            "SQL_UNSAFE_WRITABLE_DATABASES": "finance",
            "SQL_UNSAFE_SUPERUSER_DATABASES": "warehouse",
            "SQL_DATABASE_TENANTS": "finance=acme,globex;warehouse=*",
            "SQL_REFERENCE_DATE": "2025-06-30",
            "SQL_MAX_REPAIRS": "1",
        }
    )
    assert settings.databases == (
        ("warehouse", "postgresql://a/w"),
        ("finance", "postgresql://b/f"),
    )
    assert settings.writable_databases == {"finance"}
    assert settings.superuser_databases == {"warehouse"}
    assert settings.database_tenants == {"finance": {"acme", "globex"}, "warehouse": {"*"}}
    assert settings.reference_date == date(2025, 6, 30)
    configs = {c.name: c for c in target_configs(settings, "postgresql://embedded/w")}
    assert configs["warehouse"].url == "postgresql://a/w"  # explicit entry wins
    assert configs["finance"].allow_writable and configs["finance"].allows("acme")
    assert not configs["finance"].allow_superuser
    assert configs["warehouse"].allow_superuser and not configs["warehouse"].allow_writable
    assert not configs["finance"].allows("initech")
    assert configs["warehouse"].allows("anyone")  # '*', said explicitly


def test_databases_are_closed_to_tenants_unless_listed():
    settings = SqlSettings.from_env(
        {"SQL_DATABASES": "sales=postgresql://a/s;ops=postgresql://a/o"}
    )
    configs = {c.name: c for c in target_configs(settings, None)}
    assert not configs["sales"].allows("acme") and not configs["ops"].allows("demo")
    assert settings.default_database == "sales"  # no demo warehouse to default to


def test_the_demo_warehouse_serves_the_demo_tenant_only():
    settings = SqlSettings.from_env({})
    (config,) = target_configs(settings, "postgresql://embedded/w", demo=True)
    assert config.allows("demo") and not config.allows("acme")
    listed = SqlSettings.from_env({"SQL_DATABASE_TENANTS": "warehouse=acme"})
    (config,) = target_configs(listed, "postgresql://embedded/w", demo=True)
    assert config.allows("acme") and not config.allows("demo")


def test_your_own_databases_do_not_bring_the_demo_warehouse_unless_asked():
    own = {"SQL_DATABASES": "sales=postgresql://a/s"}
    assert not serves_demo_warehouse(SqlSettings.from_env(own))
    asked = SqlSettings.from_env({**own, "SQL_DEMO_WAREHOUSE": "true"})
    assert serves_demo_warehouse(asked) and asked.default_database == "warehouse"
    assert serves_demo_warehouse(SqlSettings.from_env({}))
    url = SqlSettings.from_env({"WAREHOUSE_DATABASE_URL": "postgresql://c/w"})
    assert not serves_demo_warehouse(url)


def test_warehouse_url_overrides_everything():
    settings = SqlSettings.from_env(
        {
            "SQL_DATABASES": "warehouse=postgresql://a/w",
            "WAREHOUSE_DATABASE_URL": "postgresql://c/w",
        }
    )
    configs = target_configs(settings, "postgresql://c/w")
    assert [c.url for c in configs if c.name == "warehouse"] == ["postgresql://c/w"]


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"SQL_DATABASES": "nourl"}, "SQL_DATABASES"),
        ({"SQL_DATABASES": "Bad Name=postgresql://x"}, "SQL_DATABASES"),
        ({"SQL_DATABASES": "a=x;a=y"}, "SQL_DATABASES"),
        ({"SQL_DEFAULT_MAX_ROWS": "2000"}, "SQL_DEFAULT_MAX_ROWS"),
        ({"SQL_STATEMENT_TIMEOUT_S": "60"}, "SQL_STATEMENT_TIMEOUT_S"),
        ({"SQL_MAX_REPAIRS": "3"}, "SQL_MAX_REPAIRS"),
        ({"SQL_REFERENCE_DATE": "yesterday"}, "SQL_REFERENCE_DATE"),
        ({"SQL_DATABASE_TENANTS": "finance"}, "SQL_DATABASE_TENANTS"),
        ({"SQL_DATABASE_TENANTS": "finance="}, "SQL_DATABASE_TENANTS"),
        ({"SQL_DATABASE_TENANTS": "finance=Acme Corp"}, "SQL_DATABASE_TENANTS"),
        ({"SQL_DATABASE_TENANTS": "finance=a;finance=b"}, "SQL_DATABASE_TENANTS"),
        ({"SQL_ALLOW_WRITABLE": "finance"}, "SQL_UNSAFE_WRITABLE_DATABASES"),
        ({"SQL_UNSAFE_WRITABLE_DATABASES": "Bad!"}, "SQL_UNSAFE_WRITABLE_DATABASES"),
        ({"SQL_MAX_ROWS": "x"}, "SQL_MAX_ROWS"),
        ({"SQL_WORK_MEM_KB": "-1"}, "SQL_WORK_MEM_KB"),
        ({"SQL_DEFAULT_DATABASE": "Nope!"}, "SQL_DEFAULT_DATABASE"),
        ({"SQL_EXCLUDE_TABLES": "stg_*"}, "SQL_EXCLUDE_TABLES"),
        ({"SQL_EXCLUDE_TABLES": "warehouse=stg_*;warehouse=x"}, "SQL_EXCLUDE_TABLES"),
        ({"SQL_EXCLUDE_TABLES": "warehouse=a b"}, "SQL_EXCLUDE_TABLES"),
        ({"SQL_EXCLUDE_TABLES": "warehouse=a.b.c"}, "SQL_EXCLUDE_TABLES"),
        ({"SQL_EXCLUDE_TABLES": "sales=stg_*"}, "SQL_EXCLUDE_TABLES"),  # not configured
    ],
)
def test_bad_values_name_their_variable(environ, variable):
    with pytest.raises(SettingsError, match=variable):
        SqlSettings.from_env(environ)


def test_excluded_tables_are_patterns_per_database():
    settings = SqlSettings.from_env(
        {
            "SQL_DATABASES": "sales=postgresql://a/s;ops=postgresql://a/o",
            "SQL_EXCLUDE_TABLES": "sales=stg_*, *_backup ,archive.*; ops=tmp_?",
        }
    )
    assert settings.exclude_tables == {
        "sales": ("stg_*", "*_backup", "archive.*"),
        "ops": ("tmp_?",),
    }
    configs = {c.name: c for c in target_configs(settings, None)}
    assert configs["sales"].exclude == ("stg_*", "*_backup", "archive.*")
    assert configs["ops"].exclude == ("tmp_?",)
    patterns = configs["sales"].exclude
    assert excluded(("public", "stg_orders"), patterns)
    assert excluded(("finance", "Orders_Backup"), patterns)  # any schema, any case
    assert excluded(("archive", "orders"), patterns)  # schema.table
    assert not excluded(("public", "orders"), patterns)
    assert not excluded(("public", "orders_staging"), patterns)


def test_reference_date_defaults_to_the_demo_anchor_only_for_the_demo_warehouse():
    unset = SqlSettings.from_env({})
    assert unset.reference_date is None
    assert reference_clock(unset, serves_demo=True)() == demo_data.ANCHOR_DATE
    assert reference_clock(unset, serves_demo=False)() == date.today()
    fixed = SqlSettings.from_env({"SQL_REFERENCE_DATE": "2024-03-15"})
    for demo in (True, False):
        assert reference_clock(fixed, serves_demo=demo)() == date(2024, 3, 15)


def test_access_policies_load_per_database_and_reach_the_target(tmp_path):
    path = tmp_path / "access.json"
    path.write_text('{"hidden": {"payroll": ["hr"]}}')
    settings = SqlSettings.from_env({"SQL_ACCESS_POLICIES": f"warehouse={path}"})
    assert settings.access_policies["warehouse"].hidden == (("payroll", frozenset({"hr"})),)
    configs = target_configs(settings, "postgresql://x", demo=True)
    config = next(c for c in configs if c.name == "warehouse")
    assert config.access is settings.access_policies["warehouse"]
    with pytest.raises(SettingsError, match="not a configured database"):
        SqlSettings.from_env({"SQL_ACCESS_POLICIES": f"sales={path}"})
    path.write_text('{"hidden": {"payroll": []}}')
    with pytest.raises(SettingsError, match=r"access\.json: hidden\.payroll"):
        SqlSettings.from_env({"SQL_ACCESS_POLICIES": f"warehouse={path}"})
