"""Places a question names in full, where the warehouse stores their ISO 3166 code: in
the real embedded Postgres, through the real SQL service, "New Jersey" is the stored
'NJ' of a column of US state codes and "Australia" the stored 'AU' of a column of
country codes, the interpretation saying so; a place whose code is not stored is
refused as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from services.common import create_channel
from services.sql import SqlSettings, TargetConfig, grant_read_only
from services.sql._server import build_deps, create_server, ready
from services.sql.demo._warehouse import database_url, ensure_reader_role
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings

pytestmark = pytest.mark.integration

DATABASE = "tandem_places"
ROLE = "tandem_places_reader"
_BUILD = """
CREATE TABLE customers (customer_id int PRIMARY KEY, name text, state text);
CREATE TABLE shops (shop_id int PRIMARY KEY, title text, country text);
INSERT INTO customers SELECT g, 'Customer ' || g,
  (ARRAY['NJ', 'NY', 'TX', 'CA', 'FL', 'NJ', 'TX'])[1 + g % 7] FROM generate_series(1, 70) g;
INSERT INTO shops SELECT g, 'Shop ' || g,
  (ARRAY['US', 'AU', 'FR', 'GB', 'DE'])[1 + g % 5] FROM generate_series(1, 20) g;
"""


@pytest.fixture(scope="module")
def reader_url(pg_url: str) -> str:
    async def build() -> str:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
            await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
            await admin.execute(f"CREATE DATABASE {DATABASE}")
            await ensure_reader_role(admin, ROLE)
        owner = database_url(pg_url, DATABASE)
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await conn.execute(_BUILD)
            await conn.execute("ANALYZE")
            await grant_read_only(conn, DATABASE, ROLE, schemas=["public"])
        return psycopg.conninfo.make_conninfo(owner, user=ROLE)

    return asyncio.run(build())


@pytest.fixture
async def stub(reader_url: str, telemetry_sink) -> AsyncIterator[pb_grpc.SqlServiceAsyncStub]:
    reader = reader_url
    config = TargetConfig("places", reader, tenants=frozenset({"acme"}))
    telemetry = telemetry_sink("sql").telemetry
    server, servicer = await create_server(server_settings("sql"), telemetry)
    deps = await build_deps(SqlSettings(default_database="places"), telemetry, configs=[config])
    try:
        await ready(server, servicer, deps)
        async with create_channel(server.address) as channel:
            yield pb_grpc.SqlServiceStub(channel)
    finally:
        await server.stop(0)
        await deps.close()


async def _ask(stub: pb_grpc.SqlServiceAsyncStub, question: str) -> pb.AskQuestionResponse:
    request = pb.AskQuestionRequest(tenant_id="acme", question=question)
    reply: pb.AskQuestionResponse = await stub.AskQuestion(request, timeout=60)
    return reply


async def test_a_state_named_in_full_is_its_stored_code(stub) -> None:
    reply = await _ask(stub, "How many customers are based in New Jersey?")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert "'NJ'" in reply.result.sql
    assert reply.result.rows[0].values[0].int_value == 20  # g % 7 in (0, 5) of 1..70
    assert "'New Jersey' as customers.state 'NJ' (ISO 3166-2 code of US)" in (reply.interpretation)


async def test_a_country_named_in_full_is_its_stored_code(stub) -> None:
    reply = await _ask(stub, "How many shops are in Australia?")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert "'AU'" in reply.result.sql
    assert reply.result.rows[0].values[0].int_value == 4
    assert "ISO 3166-1 alpha-2 code" in reply.interpretation


async def test_a_place_whose_code_is_not_stored_is_still_refused(stub) -> None:
    reply = await _ask(stub, "How many customers are based in Oregon?")
    assert reply.outcome != pb.SQL_ASK_OUTCOME_ANSWERED
    assert "Oregon" in reply.message
