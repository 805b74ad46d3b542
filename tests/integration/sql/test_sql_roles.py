"""Two references from one table to the same table whose names say no direction: in the
real embedded Postgres, through the real SQL service, a question reaches ``teams``
through ``matches.home_team_id`` or ``matches.away_team_id`` (and ``employees`` through
``reviews.employee_id`` or ``reviews.manager_id``) only by the reference its words say
("home", "manager", "managed"); one that says none is refused naming the references,
never answered on the first one silently."""

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

DATABASE = "tandem_roles"
ROLE = "tandem_roles_reader"
_BUILD = """
CREATE TABLE teams (team_id int PRIMARY KEY, name text NOT NULL, city text);
CREATE TABLE matches (
  match_id int PRIMARY KEY,
  home_team_id int NOT NULL REFERENCES teams (team_id),
  away_team_id int NOT NULL REFERENCES teams (team_id),
  played_on date NOT NULL,
  attendance int NOT NULL
);
CREATE TABLE employees (
  employee_id int PRIMARY KEY,
  name text NOT NULL,
  manager_id int REFERENCES employees (employee_id)
);
CREATE TABLE reviews (
  review_id int PRIMARY KEY,
  employee_id int NOT NULL REFERENCES employees (employee_id),
  manager_id int NOT NULL REFERENCES employees (employee_id),
  score int NOT NULL
);
CREATE TABLE ports (port_code text PRIMARY KEY, name text NOT NULL, zone text NOT NULL);
CREATE TABLE routes (
  route_id int PRIMARY KEY,
  origin text NOT NULL REFERENCES ports (port_code),
  dest text NOT NULL REFERENCES ports (port_code),
  dep_delay int NOT NULL
);
INSERT INTO ports VALUES ('AAA', 'Alder', 'East'), ('BBB', 'Birch', 'East'),
  ('CCC', 'Cedar', 'West'), ('DDD', 'Dogwood', 'West'), ('EEE', 'Elm', 'North');
INSERT INTO routes SELECT g, (ARRAY['AAA', 'BBB'])[1 + g % 2],
  (ARRAY['BBB', 'CCC', 'DDD', 'AAA'])[1 + g % 4], g % 17 FROM generate_series(1, 40) g;
INSERT INTO teams VALUES (1, 'Rovers', 'Leeds'), (2, 'United', 'York'), (3, 'Athletic', 'Hull'),
  (4, 'Wanderers', 'Bath');
INSERT INTO matches SELECT g, 1 + g % 4, 1 + (g + 1 + g % 3) % 4, DATE '2024-01-01' + g,
  1000 + 37 * g FROM generate_series(1, 40) g;
INSERT INTO employees VALUES (1, 'Ada', NULL), (2, 'Ben', 1), (3, 'Cy', 1), (4, 'Di', 2),
  (5, 'Ed', 2), (6, 'Flo', 3);
INSERT INTO reviews SELECT g, 2 + g % 5, 1 + g % 3, 1 + g % 5 FROM generate_series(1, 30) g;
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
    config = TargetConfig("league", reader_url, tenants=frozenset({"acme"}))
    telemetry = telemetry_sink("sql").telemetry
    server, servicer = await create_server(server_settings("sql"), telemetry)
    deps = await build_deps(SqlSettings(default_database="league"), telemetry, configs=[config])
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


async def test_nothing_through_the_reference_joined_and_rows_through_the_other_is_refused(
    stub,
) -> None:
    """ "departure" says where from, but no route leaves a port of the West zone (every
    origin is in the East): joined on ``routes.origin`` the average is over nothing, a
    confident "none" where routes arrive there. The stored values point at
    ``routes.dest``: refused naming it."""
    reply = await _ask(stub, "What is the average departure delay of routes in the West zone?")
    assert reply.outcome != pb.SQL_ASK_OUTCOME_ANSWERED, reply.result.sql
    assert "routes.origin" in reply.message and "routes.dest" in reply.message


@pytest.mark.parametrize(
    "question",
    [
        # rows through the reference joined: answered as before
        "What is the average departure delay of routes in the East zone?",
        # rows through neither (no route touches the North): not this check's to say
        "What is the average departure delay of routes in the North zone?",
    ],
)
async def test_a_condition_the_joined_reference_meets_or_none_does_is_not_swapped(
    stub, question
) -> None:
    reply = await _ask(stub, question)
    assert "routes.dest" not in reply.message, reply.message


def _rows(url: str, sql: str) -> set[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return set(conn.execute(sql).fetchall())


@pytest.mark.parametrize(
    "question",
    [
        "How many matches did each team play?",
        "What was the total attendance of the matches of each team?",
    ],
)
async def test_a_question_saying_no_role_is_refused_naming_the_references(stub, question) -> None:
    reply = await _ask(stub, question)
    assert reply.outcome != pb.SQL_ASK_OUTCOME_ANSWERED, reply.result.sql
    assert "matches.home_team_id" in reply.message
    assert "matches.away_team_id" in reply.message


async def test_the_role_a_question_says_chooses_the_reference(stub, reader_url) -> None:
    reply = await _ask(stub, "How many home matches did each team play?")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert "home_team_id" in reply.result.sql
    assert "away_team_id" not in reply.result.sql
    got = {(r.values[1].string_value, r.values[2].int_value) for r in reply.result.rows}
    assert got == _rows(
        reader_url,
        "SELECT t.name, COUNT(*) FROM matches m JOIN teams t ON t.team_id = m.home_team_id"
        " GROUP BY t.name",
    )


async def test_a_verb_whose_agent_a_reference_names_chooses_it(stub) -> None:
    """ "managed by each employee": the manager is the agent of "managed"; read on the
    first reference (``reviews.employee_id``) it would average each employee's own."""
    reply = await _ask(stub, "What is the average score of the reviews managed by each employee?")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert "= t0.manager_id" in reply.result.sql
    assert "= t0.employee_id" not in reply.result.sql


async def test_a_question_reaching_neither_reference_is_answered(stub, reader_url) -> None:
    reply = await _ask(stub, "How many reviews are there?")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert {(reply.result.rows[0].values[0].int_value,)} == _rows(
        reader_url, "SELECT COUNT(*) FROM reviews"
    )
