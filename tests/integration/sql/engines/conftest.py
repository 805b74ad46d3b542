"""Real SQLite and DuckDB files and a real MariaDB server, each warehouse built in the
test from small SQL, and targets on them."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from services.bench.mariadb import MariaDb, available, running_mariadb
from services.sql import TargetConfig
from services.sql.targets import EngineTarget

pytestmark = pytest.mark.integration

ENGINES = ("sqlite", "duckdb", "mysql")
FILE_ENGINES = ("sqlite", "duckdb")

# The demo warehouse's shape in miniature (the hostile corpora name these tables), with
# declared keys, and a table that declares none (``notes``: its key and its join to
# ``companies`` are inferred from the data, as on Postgres).
SCHEMA = """
CREATE TABLE companies (
  company_id INTEGER PRIMARY KEY, name VARCHAR(100) NOT NULL, industry VARCHAR(50),
  domain VARCHAR(100), annual_revenue DECIMAL(14, 2), segment VARCHAR(20),
  created_at TIMESTAMP NULL, deleted_at TIMESTAMP NULL, comment VARCHAR(200), active BOOLEAN);
CREATE TABLE contacts (
  contact_id INTEGER PRIMARY KEY, company_id INTEGER,
  first_name VARCHAR(50), last_name VARCHAR(50), email VARCHAR(100),
  FOREIGN KEY (company_id) REFERENCES companies (company_id));
CREATE TABLE opportunities (
  opportunity_id INTEGER PRIMARY KEY, company_id INTEGER,
  amount DECIMAL(12, 2), stage VARCHAR(20), close_date DATE, lost_reason VARCHAR(50),
  score INTEGER, FOREIGN KEY (company_id) REFERENCES companies (company_id));
CREATE TABLE activities (
  activity_id INTEGER PRIMARY KEY, opportunity_id INTEGER, occurred_at TIMESTAMP NULL,
  FOREIGN KEY (opportunity_id) REFERENCES opportunities (opportunity_id));
CREATE TABLE notes (note_id INTEGER, company_id INTEGER, body VARCHAR(200));
"""
INDUSTRIES = ("Healthcare", "Retail", "Finance", "Energy")
STAGES = ("won", "lost", "open")


def rows() -> list[str]:
    """The data, as INSERTs both engines read."""
    out = []
    for i in range(1, 41):
        industry = INDUSTRIES[i % len(INDUSTRIES)]
        out.append(
            f"INSERT INTO companies VALUES ({i}, 'Company {i:02d}', '{industry}', "
            f"'c{i}.test', {i * 1000}.50, '{'enterprise' if i % 3 else 'smb'}', "
            f"'2024-{1 + i % 12:02d}-{1 + i % 27:02d} 10:00:00', NULL, 'note {i}', "
            f"{'TRUE' if i % 5 else 'FALSE'})"
        )
        out.append(
            f"INSERT INTO contacts VALUES ({i}, {i}, 'First{i}', 'Last{i}', 'p{i}@c{i}.test')"
        )
        out.append(
            f"INSERT INTO opportunities VALUES ({i}, {1 + i % 20}, {i * 250}.00, "
            f"'{STAGES[i % 3]}', '2025-{1 + i % 12:02d}-15', NULL, {i % 100})"
        )
        out.append(f"INSERT INTO activities VALUES ({i}, {i}, '2025-03-{1 + i % 27:02d} 09:00:00')")
        out.append(f"INSERT INTO notes VALUES ({100 + i}, {1 + i % 30}, 'body {i}')")
    order = ("companies", "contacts", "opportunities", "activities", "notes")
    return sorted(out, key=lambda s: order.index(s.split()[2]))


def build(engine: str, folder: Path) -> Path:
    """A fresh database file of ``engine`` holding :data:`SCHEMA` and :func:`rows`."""
    statements = [s for s in SCHEMA.split(";") if s.strip()] + rows()
    if engine == "sqlite":
        path = folder / "warehouse.sqlite"
        conn = sqlite3.connect(path)
        for statement in statements:
            conn.execute(statement)
        conn.commit()
        conn.close()
    else:
        path = folder / "warehouse.duckdb"
        dconn = duckdb.connect(str(path))
        for statement in statements:
            dconn.execute(statement)
        dconn.close()
    return path


def url(engine: str, path: Path) -> str:
    return f"{engine}://{path}"


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDb]:
    """A private MariaDB server for the session (the tests skip, saying why, without one)."""
    problem = available()
    if problem is not None:
        pytest.skip(problem)
    with running_mariadb() as server:
        yield server


_databases = itertools.count()


@dataclass(frozen=True)
class MysqlDatabase:
    reader_url: str  # a SELECT-only user
    owner_url: str  # every privilege: for proving the gates alone
    name: str


def build_mysql(server: MariaDb) -> MysqlDatabase:
    """A fresh database on ``server`` holding :data:`SCHEMA` and :func:`rows`, with a
    SELECT-only user."""
    name = f"warehouse_{next(_databases)}"
    with server.admin() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{name}`")
        cursor.execute(f"USE `{name}`")
        for statement in [s for s in SCHEMA.split(";") if s.strip()] + rows():
            cursor.execute(statement)
    reader = server.create_reader(name, f"ro_{name}", "reader-pw")
    server.create_admin("tandem_admin", "admin-pw")
    return MysqlDatabase(reader, server.url(name, "tandem_admin", "admin-pw"), name)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def warehouse_file(engine: str, tmp_path: Path) -> Path:
    return build(engine, tmp_path)


@pytest.fixture
def warehouse_url(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    """The test's warehouse: (the service's URL, a privileged URL) for ``engine``."""
    if engine == "mysql":
        built = build_mysql(request.getfixturevalue("mariadb"))
        return built.reader_url, built.owner_url
    path = url(engine, build(engine, tmp_path))
    return path, path


TargetFactory = Callable[..., EngineTarget]


@pytest.fixture
async def file_target(warehouse_url: tuple[str, str]) -> AsyncIterator[TargetFactory]:
    """``file_target(read_only=True, **config)``: a target on the test's warehouse
    (``read_only`` False: a writable connection, as a privileged user)."""
    made: list[EngineTarget] = []

    def make(*, read_only: bool = True, **config: object) -> EngineTarget:
        target = EngineTarget(
            TargetConfig(
                "w",
                warehouse_url[0] if read_only else warehouse_url[1],
                tenants=frozenset({"*"}),
                allow_superuser=not read_only,
                **config,  # type: ignore[arg-type]
            ),
            pool_max_size=2,
            read_only=read_only,
        )
        made.append(target)
        return target

    yield make
    for target in made:
        await target.close()
