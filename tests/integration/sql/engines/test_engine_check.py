"""``tandem sql-check`` on SQLite, DuckDB and MariaDB targets: served with their keys and
joins, or unreachable with the reason and the fix (file missing, not a database, the other
engine's file, a folder where a file belongs, a folder with nothing to serve; a wrong
password, a missing database, a server not there), or refused (a user that can write)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from services.bench.mariadb import MariaDb
from services.cli._main import main
from tests.integration.sql.engines.conftest import build, build_mysql

pytestmark = pytest.mark.integration


def test_sql_check_gives_each_file_engines_fate_and_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_dir, duckdb_dir, csv_dir, empty_dir = (tmp_path / n for n in ("s", "d", "c", "e"))
    for folder in (sqlite_dir, duckdb_dir, csv_dir, empty_dir):
        folder.mkdir()
    lite = build("sqlite", sqlite_dir)
    duck = build("duckdb", duckdb_dir)
    (csv_dir / "regions.csv").write_text("region_id,name\n1,North\n2,South\n")
    text = tmp_path / "notes.sqlite"
    text.write_text("just some text, long enough to have a header\n")
    shutil.copy(duck, tmp_path / "copy.duckdb")
    for name in ("SQL_DEMO_WAREHOUSE", "WAREHOUSE_DATABASE_URL", "SQL_DEFAULT_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "SQL_DATABASES",
        ";".join(
            [
                f"lite=sqlite://{lite}",
                f"duck=duckdb://{duck}",
                f"csv=duckdb://{csv_dir}",
                f"gone=sqlite://{tmp_path / 'missing.sqlite'}",
                f"text=sqlite://{text}",
                f"wrong=sqlite://{tmp_path / 'copy.duckdb'}",
                f"folder=sqlite://{sqlite_dir}",
                f"empty=duckdb://{empty_dir}",
            ]
        ),
    )
    monkeypatch.setenv("SQL_DATABASE_TENANTS", "lite=*;duck=*;csv=*")
    assert main(["sql-check"]) == 0  # nothing refused: the unreachable are retried on use
    out = capsys.readouterr().out.splitlines()
    lines = {line.split()[0]: i for i, line in enumerate(out) if line and line[0] != " "}

    def detail(name: str) -> str:
        return out[lines[name] + 1].strip()

    for served in ("lite", "duck", "csv"):
        assert "serve" in out[lines[served]], out
        assert "opened read-only at the connection" in detail(served)
    assert any("notes" in line and "companies" in line for line in out)  # the inferred join
    for name in ("gone", "text", "wrong", "folder", "empty"):
        assert "unreachable" in out[lines[name]]
    assert (
        detail("gone")
        == f"file not found: {tmp_path / 'missing.sqlite'} (check the path in the URL)"
    )
    assert detail("text") == f"{text} is not a SQLite database"
    assert detail("wrong") == (
        f"{tmp_path / 'copy.duckdb'} is a DuckDB database: "
        f"name it duckdb://{tmp_path / 'copy.duckdb'}"
    )
    assert detail("folder") == f"{sqlite_dir} is a folder, not a SQLite file"
    assert detail("empty") == f"the folder {empty_dir} holds no .csv, .tsv or .parquet file"


def test_sql_check_on_mariadb_names_auth_missing_database_unreachable_and_writable_users(
    mariadb: MariaDb, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    built = build_mysql(mariadb)
    with mariadb.admin() as conn, conn.cursor() as cursor:
        cursor.execute("CREATE USER IF NOT EXISTS 'writer'@'%' IDENTIFIED BY 'pw'")
        cursor.execute(f"GRANT SELECT, INSERT ON `{built.name}`.* TO 'writer'@'%'")
    port = mariadb.port
    for name in ("SQL_DEMO_WAREHOUSE", "WAREHOUSE_DATABASE_URL", "SQL_DEFAULT_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "SQL_DATABASES",
        ";".join(
            [
                f"shop={built.reader_url}",
                f"badpw=mysql://ro_{built.name}:wrong@127.0.0.1:{port}/{built.name}",
                f"nodb={mariadb.url('no_such_db', 'tandem_admin', 'admin-pw')}",
                "down=mysql://x:y@127.0.0.1:1/shop",
                f"writer=mysql://writer:pw@127.0.0.1:{port}/{built.name}",
            ]
        ),
    )
    monkeypatch.setenv("SQL_DATABASE_TENANTS", "shop=*")
    assert main(["sql-check"]) == 1  # the user that can write would stop the service
    out = capsys.readouterr().out.splitlines()
    lines = {line.split()[0]: i for i, line in enumerate(out) if line and line[0] != " "}

    def detail(name: str) -> str:
        return out[lines[name] + 1].strip()

    assert "serve" in out[lines["shop"]]
    assert "READ ONLY transaction" in detail("shop")
    assert any("notes" in line and "companies" in line for line in out)  # the inferred join
    assert "unreachable" in out[lines["badpw"]]
    assert detail("badpw") == "authentication failed: check the user and password in the URL"
    assert detail("nodb") == "database 'no_such_db' does not exist: check the name in the URL"
    assert detail("down") == "cannot connect: is MySQL/MariaDB running at that host and port?"
    assert "refuse" in out[lines["writer"]]
    assert "INSERT" in detail("writer") and "SQL_UNSAFE_WRITABLE_DATABASES" in detail("writer")
    assert f"GRANT SELECT ON `{built.name}`.*" in out[lines["writer"] + 2]
