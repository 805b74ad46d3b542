"""A warehouse of a thousand tables, in the real embedded Postgres, through the real SQL
service: SERVING before its catalog is read, a question that comes too early refused as
CATALOG_LOADING (and answered once the catalog is there), questions linked to the table
the business means rather than its staging, archive and yearly copies (the answer naming
the copies it passed over), a copy read when the question names it, tables in another
schema named schema-qualified, and the tables SQL_EXCLUDE_TABLES leaves out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import psycopg
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from services.common import create_channel
from services.sql import SqlSettings, TargetConfig, grant_read_only
from services.sql._server import SqlDeps, build_deps, create_server, ready
from services.sql.demo._warehouse import database_url, ensure_reader_role
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings

pytestmark = pytest.mark.integration

DATABASE = "tandem_wide"
ROLE = "tandem_wide_reader"
# Another source's tables, each kept as staging, raw and dated copies: 42 x 24 = 1,008.
_SOURCES = 42
_PREFIXES = ("stg", "raw", "src", "int", "dim", "fct")
_SUFFIXES = ("", "_2019", "_2020", "_2021")
_BUILD = f"""
CREATE TABLE singer (singer_id int PRIMARY KEY, name text, country text, age int);
CREATE TABLE concert (concert_id int PRIMARY KEY, concert_name text, year int);
CREATE TABLE singer_in_concert (
  concert_id int REFERENCES concert, singer_id int REFERENCES singer);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52),
  (2, 'Timbaland', 'United States', 32), (3, 'Justin Brown', 'France', 29),
  (4, 'Rose White', 'France', 41), (5, 'John Nizinik', 'France', 43),
  (6, 'Tribal King', 'France', 25);
INSERT INTO concert VALUES (1, 'Auditions', 2014), (2, 'Super bootcamp', 2014),
  (3, 'Home Visits', 2015);
INSERT INTO singer_in_concert VALUES (1, 2), (1, 3), (2, 3), (3, 5), (3, 6);
-- the warehouse's copies of singer: each a strict subset of its rows, without keys
CREATE TABLE singer_archive AS SELECT * FROM singer WHERE singer_id IN (1, 3, 4);
CREATE TABLE stg_singer AS SELECT * FROM singer WHERE singer_id <> 6;
CREATE TABLE singer_2019 AS SELECT * FROM singer WHERE singer_id < 3;
CREATE SCHEMA archive;
CREATE TABLE archive.singer AS SELECT * FROM singer WHERE singer_id > 4;
CREATE TABLE singer_backup AS SELECT * FROM singer;
CREATE TABLE tmp_singer_load AS SELECT * FROM singer;
CREATE TABLE aaa_gate (note text);
INSERT INTO aaa_gate VALUES ('open');
DO $$
DECLARE k int; p text; s text;
BEGIN
  FOR k IN 1..{_SOURCES} LOOP
    FOREACH p IN ARRAY ARRAY{list(_PREFIXES)} LOOP
      FOREACH s IN ARRAY ARRAY{list(_SUFFIXES)} LOOP
        EXECUTE format('CREATE TABLE %I (id int, ledger%s_code text, amount numeric)',
                       p || '_ledger' || k || '_entries' || s, k);
        EXECUTE format('INSERT INTO %I SELECT g, ''L'' || g, g * 1.5 FROM generate_series(1, 3) g',
                       p || '_ledger' || k || '_entries' || s);
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
"""


@dataclass(frozen=True)
class Wide:
    owner_url: str
    reader_url: str
    tables: int


@pytest.fixture(scope="module")
def wide(pg_url: str) -> Wide:
    async def build() -> Wide:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
            await admin.execute(f"CREATE DATABASE {DATABASE}")
            await ensure_reader_role(admin, ROLE)
        owner = database_url(pg_url, DATABASE)
        async with await psycopg.AsyncConnection.connect(owner) as conn:
            await conn.execute(_BUILD)  # one transaction
            await conn.commit()
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await conn.execute(f"REVOKE TEMPORARY ON DATABASE {DATABASE} FROM PUBLIC")
            await grant_read_only(conn, DATABASE, ROLE, schemas=["public", "archive"])
            cur = await conn.execute(
                "SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relnamespace IN "
                "(SELECT oid FROM pg_namespace WHERE nspname IN ('public', 'archive'))"
            )
            row = await cur.fetchone()
        reader = psycopg.conninfo.make_conninfo(owner, user=ROLE)
        return Wide(owner, reader, int(row[0]) if row else 0)

    return asyncio.run(build())


@dataclass
class Served:
    stub: pb_grpc.SqlServiceAsyncStub
    health: health_pb2_grpc.HealthStub
    deps: SqlDeps


@pytest.fixture
async def gate_held(wide: Wide) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A transaction holding a lock on the first table whose values the catalog load
    reads: the load waits there until the test commits it, so "before the catalog is
    loaded" is a state the test controls, not a race it hopes to win."""
    async with await psycopg.AsyncConnection.connect(wide.owner_url) as conn:
        await conn.execute("LOCK TABLE aaa_gate IN ACCESS EXCLUSIVE MODE")
        yield conn


@pytest.fixture
async def served(wide, telemetry_sink) -> AsyncIterator[Served]:
    config = TargetConfig(
        "wide", wide.reader_url, tenants=frozenset({"acme"}), exclude=("*_backup", "tmp_*")
    )
    telemetry = telemetry_sink("sql").telemetry
    server, servicer = await create_server(server_settings("sql"), telemetry)
    deps = await build_deps(SqlSettings(default_database="wide"), telemetry, configs=[config])
    try:
        await ready(server, servicer, deps)
        async with create_channel(server.address) as channel:
            yield Served(pb_grpc.SqlServiceStub(channel), health_pb2_grpc.HealthStub(channel), deps)
    finally:
        await server.stop(0)
        await deps.close()


async def _ask(served: Served, question: str) -> pb.AskQuestionResponse:
    request = pb.AskQuestionRequest(tenant_id="acme", question=question)
    reply: pb.AskQuestionResponse = await served.stub.AskQuestion(request, timeout=60)
    return reply


async def test_serving_before_the_catalog_loads_then_the_table_meant_not_its_copies(
    wide, gate_held, served
):
    assert wide.tables > 1000
    check = health_pb2.HealthCheckRequest(service="tandem.v1.SqlService")
    assert (await served.health.Check(check, timeout=5)).status == (
        health_pb2.HealthCheckResponse.SERVING
    )
    target = served.deps.targets.get("wide")
    assert target.catalog.cached is None  # held at the gate: not loaded, yet serving
    call = served.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question="How many singers are from France?"),
        timeout=1.5,
    )
    with pytest.raises(grpc.aio.AioRpcError) as early:
        await call
    assert early.value.code() == grpc.StatusCode.UNAVAILABLE
    status = await rpc_status.aio.from_call(call)
    assert status is not None
    info, retry = error_details_pb2.ErrorInfo(), error_details_pb2.RetryInfo()
    for detail in status.details:
        detail.Unpack(info) if detail.Is(info.DESCRIPTOR) else None
        detail.Unpack(retry) if detail.Is(retry.DESCRIPTOR) else None
    assert info.reason == "CATALOG_LOADING" and retry.retry_delay.seconds > 0
    await gate_held.commit()  # the load goes on; a question with time to wait is answered

    reply = await _ask(served, "How many singers are from France?")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert list(reply.result.tables_used) == ["public.singer"]
    assert reply.result.rows[0].values[0].int_value == 4  # the copies hold 1, 2, 3 or none
    assert "Read public.singer, passing over its look-alikes" in reply.interpretation
    assert "archive.singer" in reply.interpretation  # another schema, named with it

    catalog = await target.get_catalog()
    assert catalog.table("archive.singer") is not None
    assert catalog.table("singer") is catalog.table("public.singer")
    copies = ("singer_archive", "stg_singer", "singer_2019", "archive.singer")
    assert {catalog.table(name).lookalike_of for name in copies} == {"public.singer"}


async def test_a_copy_the_question_names_is_read_and_said_to_be(served):
    reply = await _ask(served, "How many singers are in the singer archive?")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert list(reply.result.tables_used) == ["public.singer_archive"]
    assert reply.result.rows[0].values[0].int_value == 3
    assert "which the question names, rather than public.singer" in reply.interpretation


async def test_excluded_tables_are_not_in_the_catalog(served):
    catalog = await served.deps.targets.get("wide").get_catalog()
    names = {t.name for t in catalog.tables}
    assert "singer_backup" not in names and "tmp_singer_load" not in names
    assert "singer_archive" in names  # not excluded: a copy, still readable by name
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await served.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT count(*) FROM singer_backup"),
            timeout=10,
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "UNKNOWN_TABLE" in (refused.value.details() or "").upper()
