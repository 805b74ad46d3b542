"""SQL access for principals from the attacker's side: the real SQL service (gRPC, its
generated stubs) over the real demo warehouse in the embedded Postgres, principals sent
as headers on plaintext internal calls.

alice (region 1, sales) and bob (region 2, sales) may read only their region's companies
and owners, never ``companies.annual_revenue`` nor the ``activities`` table; carol (hr) is
exempt from the filter and reads both. Through ExecuteSql (with every bypass shape),
ValidateSql, RunIntent, DescribeSchema, AskQuestion (offline engine), a conversation's
follow-up and a chart, nothing of another region or hidden appears. Role mode runs in a
second database whose own row-level security reads ``current_user``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

import grpc
import psycopg
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from services.common import GrpcServer, Principal, create_channel
from services.sql import SqlSettings, TargetConfig, Warehouse, demo_glossary, grant_read_only
from services.sql._server import SqlDeps, build_deps, create_server, ready
from services.sql.access import load_access_policy
from services.sql.demo._warehouse import database_url
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings

pytestmark = pytest.mark.integration

ALICE = Principal.of("alice", ["sales"], {"region_id": "1"})
BOB = Principal.of("bob", ["sales"], {"region_id": "2"})
CAROL = Principal.of("carol", ["hr"], {})
DAVE = Principal.of("dave", ["sales"], {})  # no region: never widened
POLICY = {
    "row_filters": {
        "companies": {"filter": "region_id = {principal.region_id}", "exempt_groups": ["hr"]},
        # compared as text: a costlier condition, which Postgres would evaluate after a
        # cheaper one of the question's if nothing fenced it (see the error test)
        "owners": {"filter": "region_id::text = {principal.region_id}", "exempt_groups": ["hr"]},
    },
    "hidden": {"companies.annual_revenue": ["hr"], "activities": ["hr"]},
}
ROLE_POLICY = {"roles": {"principals": {"alice": "wh_alice"}, "groups": {"sales": "wh_sales"}}}


@dataclass
class Running:
    stub: pb_grpc.SqlServiceAsyncStub
    owner_url: str

    async def rows(
        self, principal: Principal | None, sql: str, database: str = ""
    ) -> list[tuple[object, ...]]:
        reply = await self.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql=sql, database=database, max_rows=1000),
            metadata=_headers(principal),
            timeout=10,
        )
        return _rows(reply.result)

    async def owner(self, sql: str) -> list[tuple[object, ...]]:
        async with await psycopg.AsyncConnection.connect(self.owner_url) as conn:
            return [tuple(r) for r in await (await conn.execute(sql)).fetchall()]


def _headers(principal: Principal | None) -> tuple[tuple[str, str], ...]:
    return tuple(principal.headers()) if principal is not None else ()


def _value(value: cpb.SqlValue) -> object:
    kind = value.WhichOneof("kind")
    return None if kind in (None, "null_value") else getattr(value, kind)


def _rows(result: pb.SqlResult) -> list[tuple[object, ...]]:
    return [tuple(_value(v) for v in row.values) for row in result.rows]


async def _error(call) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    status = await rpc_status.aio.from_call(call)
    info = error_details_pb2.ErrorInfo()
    for detail in status.details if status else []:
        detail.Unpack(info)
    return err.value.code(), info.reason, dict(info.metadata)


async def _role_database(pg_url: str, warehouse: Warehouse) -> str:
    """A database whose table ``deals`` has row-level security on ``current_user``;
    roles wh_alice and wh_sales the reader may SET ROLE to."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP DATABASE IF EXISTS rls_deals")
        await conn.execute("CREATE DATABASE rls_deals")
        for role in ("wh_alice", "wh_sales"):
            found = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            if await found.fetchone() is None:
                await conn.execute(f"CREATE ROLE {role} NOLOGIN")
            await conn.execute(f"GRANT {role} TO {warehouse.reader_role}")
    admin = database_url(pg_url, "rls_deals")
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute("CREATE TABLE deals (deal_id int PRIMARY KEY, seller text, amount int)")
        await conn.execute(
            "INSERT INTO deals VALUES (1, 'wh_alice', 10), (2, 'wh_sales', 20), (3, 'x', 30)"
        )
        await conn.execute("ALTER TABLE deals ENABLE ROW LEVEL SECURITY")
        await conn.execute("CREATE POLICY own ON deals USING (seller = current_user)")
        await grant_read_only(conn, "rls_deals", warehouse.reader_role, schemas=["public"])
        await conn.execute("GRANT USAGE ON SCHEMA public TO wh_alice, wh_sales")
        await conn.execute("GRANT SELECT ON deals TO wh_alice, wh_sales")
        await conn.execute("GRANT CONNECT ON DATABASE rls_deals TO wh_alice, wh_sales")
    return psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="rls_deals")


@pytest.fixture
async def running(
    pg_url: str, warehouse: Warehouse, owner_url: str, telemetry_sink, tmp_path: Path
) -> AsyncIterator[Running]:
    policy, roles = tmp_path / "policy.json", tmp_path / "roles.json"
    policy.write_text(json.dumps(POLICY))
    roles.write_text(json.dumps(ROLE_POLICY))
    rls_url = await _role_database(pg_url, warehouse)
    deps: SqlDeps = await build_deps(
        replace(SqlSettings(), reference_date=date(2025, 6, 30)),
        telemetry_sink("sql").telemetry,
        configs=[
            TargetConfig(
                "warehouse",
                warehouse.reader_url,
                tenants=frozenset({"*"}),
                glossary=demo_glossary(),
                access=load_access_policy(policy),
            ),
            TargetConfig(
                "deals", rls_url, tenants=frozenset({"*"}), access=load_access_policy(roles)
            ),
        ],
    )
    server: GrpcServer
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    await ready(server, servicer, deps)
    channel = create_channel(server.address)
    yield Running(pb_grpc.SqlServiceStub(channel), owner_url)
    await channel.close()
    await server.stop(0)
    await deps.close()


BYPASSES = [
    "SELECT region_id FROM companies",
    "SELECT region_id FROM public.companies",
    'SELECT "region_id" FROM "public"."companies"',
    "WITH c AS (SELECT * FROM companies) SELECT region_id FROM c",
    "WITH companies AS (SELECT * FROM public.companies) SELECT region_id FROM companies",
    "SELECT (SELECT max(region_id) FROM companies WHERE company_id = o.company_id) "
    "FROM opportunities o",
    "SELECT NULL::int AS region_id UNION SELECT region_id FROM companies",
    "SELECT x.region_id FROM regions r, LATERAL (SELECT region_id FROM companies c "
    "WHERE c.region_id = r.region_id) x",
    "SELECT c.region_id FROM opportunities o JOIN companies c ON c.company_id = o.company_id",
    "SELECT region_id FROM owners WHERE EXISTS (SELECT 1 FROM companies)",
]


@pytest.mark.parametrize("sql", BYPASSES, ids=[f"b{i}" for i in range(len(BYPASSES))])
async def test_execute_never_returns_another_regions_rows_whatever_the_shape(running, sql):
    # (NULL: a scalar subquery that found none of the principal's rows)
    alice = {r[0] for r in await running.rows(ALICE, sql)} - {None}
    bob = {r[0] for r in await running.rows(BOB, sql)} - {None}
    assert alice <= {1}, alice
    assert bob <= {2}, bob
    everyone = {r[0] for r in await running.rows(None, sql)}
    assert len(everyone - {1}) >= 2  # the service key's full view, as today


async def test_counts_are_the_principals_own(running):
    sql = "SELECT count(*) FROM companies"
    total = (await running.owner(sql))[0][0]
    region1 = (await running.owner(sql + " WHERE region_id = 1"))[0][0]
    assert (await running.rows(ALICE, sql))[0][0] == region1 < total
    assert (await running.rows(CAROL, sql))[0][0] == total
    assert (await running.rows(None, sql))[0][0] == total


async def test_hidden_column_and_table_are_refused_and_absent_from_star(running):
    code, reason, meta = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT annual_revenue FROM companies"),
            metadata=_headers(ALICE),
            timeout=10,
        )
    )
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "SQL_ACCESS_DENIED")
    assert meta["rule"] == "SQL_GATE_RULE_ACCESS_DENIED"
    star = await running.stub.ExecuteSql(
        pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT * FROM companies LIMIT 1"),
        metadata=_headers(ALICE),
        timeout=10,
    )
    assert "annual_revenue" not in [c.name for c in star.result.columns]
    code, reason, meta = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT count(*) FROM activities"),
            metadata=_headers(BOB),
            timeout=10,
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and meta["rule"].endswith("UNKNOWN_TABLE")
    assert await running.rows(CAROL, "SELECT annual_revenue FROM companies LIMIT 1")
    assert await running.rows(CAROL, "SELECT count(*) FROM activities")


async def test_a_principal_without_the_attribute_is_refused_naming_it(running):
    code, reason, meta = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql="SELECT count(*) FROM companies"),
            metadata=_headers(DAVE),
            timeout=10,
        )
    )
    assert (code, reason, meta.get("attribute")) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "SQL_ACCESS_DENIED",
        "region_id",
    )
    # what does not read a filtered table still answers
    assert await running.rows(DAVE, "SELECT count(*) FROM products")


async def test_validate_names_the_access_rule(running):
    reply = await running.stub.ValidateSql(
        pb.ValidateSqlRequest(tenant_id="acme", sql="SELECT name, annual_revenue FROM companies"),
        metadata=_headers(ALICE),
        timeout=10,
    )
    assert not reply.valid
    assert reply.violations[0].rule == pb.SQL_GATE_RULE_ACCESS_DENIED


async def test_describe_shows_no_hidden_part_and_no_filtered_sample(running):
    reply = await running.stub.DescribeSchema(
        pb.DescribeSchemaRequest(tenant_id="acme", max_chars=100_000),
        metadata=_headers(ALICE),
        timeout=10,
    )
    names = {t.name for t in reply.tables}
    assert "activities" not in names and "activities" not in reply.catalog_text
    companies = next(t for t in reply.tables if t.name == "companies")
    assert "annual_revenue" not in [c.name for c in companies.columns]
    assert "annual_revenue" not in reply.catalog_text
    assert all(not c.sample_values for c in companies.columns)
    full = await running.stub.DescribeSchema(
        pb.DescribeSchemaRequest(tenant_id="acme", max_chars=100_000),
        metadata=_headers(CAROL),
        timeout=10,
    )
    assert "activities" in {t.name for t in full.tables}


async def test_run_intent_is_filtered_and_a_hidden_column_is_unknown(running):
    intent = pb.SqlIntent(
        kind=pb.INTENT_KIND_GROUP_BY,
        table="companies",
        group_by=[pb.IntentGroup(column="region_id")],
        aggregate_function=pb.AGGREGATE_FUNCTION_COUNT,
    )
    reply = await running.stub.RunIntent(
        pb.RunIntentRequest(tenant_id="acme", intent=intent), metadata=_headers(BOB), timeout=10
    )
    assert {r[0] for r in _rows(reply.result)} == {2}
    hidden = pb.SqlIntent(kind=pb.INTENT_KIND_AGGREGATE, table="companies",
                          aggregate_function=pb.AGGREGATE_FUNCTION_SUM,
                          aggregate_column="annual_revenue")  # fmt: skip
    code, reason, _ = await _error(
        running.stub.RunIntent(
            pb.RunIntentRequest(tenant_id="acme", intent=hidden),
            metadata=_headers(BOB),
            timeout=10,
        )
    )
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_INTENT")


async def test_ask_answers_each_principal_from_its_own_rows_and_chart(running):
    question = "How many companies are there per country?"
    countries_1 = {r[0] for r in await running.owner(
        "SELECT DISTINCT country FROM companies WHERE region_id = 1")}  # fmt: skip
    replies = {}
    for who in (ALICE, BOB, None):
        replies[who] = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=question),
            metadata=_headers(who),
            timeout=20,
        )
    alice = replies[ALICE]
    assert alice.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, alice.message
    shown = {r[0] for r in _rows(alice.result)}
    assert shown and shown <= countries_1
    assert "region_id = '1'" not in alice.result.sql  # the statement as asked
    bob_shown = {r[0] for r in _rows(replies[BOB].result)}
    assert not shown & bob_shown
    assert len({r[0] for r in _rows(replies[None].result)}) > len(shown)
    chart = alice.result.chart.vega_lite
    for country in bob_shown:
        assert f'"{country}"' not in chart


async def test_ask_about_a_hidden_column_never_shows_it(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question="What is the total annual revenue?"),
        metadata=_headers(ALICE),
        timeout=20,
    )
    assert "annual_revenue" not in reply.result.sql
    assert "annual_revenue" not in [c.name for c in reply.result.columns]


async def test_a_follow_up_stays_within_the_principals_rows(running):
    earlier = "SELECT c.name, c.region_id FROM companies AS c ORDER BY c.name"
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(
            tenant_id="acme",
            question="only the first 5",
            prior=pb.PriorStatement(sql=earlier, relation=pb.PRIOR_RELATION_ROW_LIMIT, limit=5),
        ),
        metadata=_headers(BOB),
        timeout=20,
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    rows = _rows(reply.result)
    assert rows and {r[1] for r in rows} == {2}
    # a follow-up built on a statement naming a hidden column is refused, not answered
    code, reason, _ = await _error(
        running.stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id="acme",
                question="only the first 5",
                prior=pb.PriorStatement(
                    sql="SELECT name, annual_revenue FROM companies",
                    relation=pb.PRIOR_RELATION_ROW_LIMIT,
                    limit=5,
                ),
            ),
            metadata=_headers(BOB),
            timeout=20,
        )
    )
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "SQL_ACCESS_DENIED")


async def test_ask_without_the_attribute_is_refused_as_access_denied(running):
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question="How many companies are there?"),
        metadata=_headers(DAVE),
        timeout=20,
    )
    assert reply.outcome != pb.SQL_ASK_OUTCOME_ANSWERED
    assert reply.refusal_reason == "SQL_ACCESS_DENIED"
    assert not reply.result.rows


async def test_role_mode_runs_as_the_mapped_role_under_the_warehouses_own_security(running):
    sql = "SELECT seller, amount FROM deals ORDER BY deal_id"
    assert await running.rows(ALICE, sql, "deals") == [("wh_alice", 10)]
    assert await running.rows(BOB, sql, "deals") == [("wh_sales", 20)]
    code, reason, _ = await _error(
        running.stub.ExecuteSql(
            pb.ExecuteSqlRequest(tenant_id="acme", sql=sql, database="deals"),
            metadata=_headers(CAROL),  # hr: no role mapped
            timeout=10,
        )
    )
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "SQL_ACCESS_DENIED")
    # the login role's own view (a service key) is its own: RLS shows it nothing
    assert await running.rows(None, sql, "deals") == []


async def test_principals_do_not_share_memoised_answers(running):
    """The same statement, asked in turn, is each principal's own every time (the gate's,
    the runner's and the offline engine's memos are keyed by the principal)."""
    sql = "SELECT DISTINCT region_id FROM companies"
    for _ in range(2):
        results = await asyncio.gather(
            running.rows(ALICE, sql), running.rows(BOB, sql), running.rows(ALICE, sql)
        )
        assert [{r[0] for r in rows} for rows in results] == [{1}, {2}, {1}]


async def test_the_runner_runs_no_verdict_checked_for_someone_else(warehouse, open_pool, tmp_path):
    """The last door: a verdict the gate made for alice (or for the full view) never runs
    for bob, whoever hands it to the runner (a memo, a bug)."""
    import contextvars

    from services.common import PermissionDenied, current_principal
    from services.sql import Catalog, ColumnInfo, SqlGate, StatementRunner, TableInfo
    from services.sql.access import bind, catalog_view
    from services.sql.gate import Limits

    policy = tmp_path / "p.json"
    policy.write_text(
        json.dumps({"row_filters": {"companies": "region_id = {principal.region_id}"}})
    )
    catalog = Catalog(
        "warehouse",
        (TableInfo("public", "companies", columns=(ColumnInfo("region_id", "integer", False),)),),
    )
    bind(catalog, load_access_policy(policy))
    pool = await open_pool(warehouse.reader_url)

    def verdict_for(principal: Principal | None):
        def make():
            current_principal.set(principal)
            return SqlGate().check("SELECT region_id FROM companies", catalog_view(catalog))

        return contextvars.copy_context().run(make)

    async def run_as(principal: Principal | None, verdict):
        current_principal.set(principal)
        return await StatementRunner().run(pool, verdict, Limits(max_rows=5), database="w")

    alices = verdict_for(ALICE)
    assert {r.values[0].int_value for r in (await run_as(ALICE, alices)).rows} == {1}
    for principal, verdict in ((BOB, alices), (BOB, verdict_for(None)), (None, alices)):
        with pytest.raises(PermissionDenied):
            await asyncio.create_task(run_as(principal, verdict))


@pytest.fixture
async def remembering(
    pg_url: str, warehouse: Warehouse, owner_url: str, *, embedding, telemetry_sink, tmp_path: Path
) -> AsyncIterator[Running]:
    """The same service with the answer memory on (real store, real embedding service)."""
    from services.sql.memory._answers import MemorySettings, open_memory
    from services.sql.memory._store import GrpcQuestionEmbedder

    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    settings = replace(SqlSettings(), reference_date=date(2025, 6, 30))
    store = await open_memory(pg_url, settings.data_dir, MemorySettings())
    embed_channel = create_channel(embedding.server.address)
    deps = await build_deps(
        settings,
        telemetry_sink("sql").telemetry,
        configs=[
            TargetConfig(
                "warehouse",
                warehouse.reader_url,
                tenants=frozenset({"*"}),
                glossary=demo_glossary(),
                access=load_access_policy(policy),
            )
        ],
        memory=(store, GrpcQuestionEmbedder(embed_channel)),
    )
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    await ready(server, servicer, deps)
    channel = create_channel(server.address)
    yield Running(pb_grpc.SqlServiceStub(channel), owner_url)
    await channel.close()
    await server.stop(0)
    await deps.close()
    await embed_channel.close()


async def test_a_pair_a_service_key_taught_is_reused_for_each_principal_with_their_filter(
    remembering,
):
    import uuid

    tenant = f"t-{uuid.uuid4().hex[:10]}"
    question = "How many companies are there?"
    sql = "SELECT count(*) AS companies FROM companies"
    taught = await remembering.stub.TeachSql(
        pb.TeachSqlRequest(tenant_id=tenant, question=question, sql=sql),
        metadata=_headers(None),
        timeout=20,
    )
    # stored as asked: no principal's filter in it
    assert "region_id" not in taught.pair.sql and "'1'" not in taught.pair.sql
    counts = {
        region: (
            await remembering.owner(f"SELECT count(*) FROM companies WHERE region_id = {region}")
        )[0][0]
        for region in (1, 2)
    }
    for who, expected in ((ALICE, counts[1]), (BOB, counts[2])):
        reply = await remembering.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id=tenant, question=question),
            metadata=_headers(who),
            timeout=20,
        )
        assert reply.HasField("confirmed_pair"), reply.message
        assert _rows(reply.result) == [(expected,)]
    # a pair naming a hidden column is never taught by, nor reused for, someone who may not
    code, _, _ = await _error(
        remembering.stub.TeachSql(
            pb.TeachSqlRequest(
                tenant_id=tenant,
                question="total annual revenue",
                sql="SELECT sum(annual_revenue) FROM companies",
            ),
            metadata=_headers(BOB),
            timeout=20,
        )
    )
    assert code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT)


async def test_a_policy_leaving_a_view_over_a_filtered_table_unprotected_refuses_the_database(
    pg_url: str, warehouse: Warehouse, tmp_path: Path
):
    """A view reads its tables as its owner, past any filter, and an inheriting table holds
    its parent's rows: the catalog load finds both (pg_depend, pg_inherits) and the
    database is refused, loudly, until the policy covers them."""
    from services.common import FailedPrecondition
    from services.sql import Target

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP DATABASE IF EXISTS views_db")
        await conn.execute("CREATE DATABASE views_db")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "views_db"), autocommit=True
    ) as conn:
        await conn.execute("CREATE TABLE deals (deal_id int PRIMARY KEY, region text)")
        await conn.execute("CREATE VIEW all_deals AS SELECT * FROM deals")
        await conn.execute("CREATE TABLE old_deals () INHERITS (deals)")
        await grant_read_only(conn, "views_db", warehouse.reader_role, schemas=["public"])
    url = psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="views_db")
    path = tmp_path / "p.json"
    for policy, refused in (
        ({"row_filters": {"deals": "region = {principal.region}"}}, "all_deals"),
        ({"row_filters": {"deals": "region = {principal.region}"},
          "hidden": {"all_deals": ["ops"]}}, "old_deals"),
        ({"row_filters": {"deals": "region = {principal.region}",
                          "old_deals": "region = {principal.region}"},
          "hidden": {"all_deals": ["ops"]}}, ""),
    ):  # fmt: skip
        path.write_text(json.dumps(policy))
        target = Target(
            TargetConfig("views", url, tenants=frozenset({"*"}), access=load_access_policy(path))
        )
        try:
            assert await target.open()
            if refused:
                with pytest.raises(FailedPrecondition, match=refused):
                    await target.get_catalog()
            else:
                assert (await target.get_catalog()).table("all_deals") is not None
        finally:
            await target.close()


async def test_an_error_on_another_regions_row_never_fires(running):
    """Outer conditions are not pushed below the filter (the derived table is a fence):
    an expression that fails only on another region's row cannot tell that row exists."""
    other = (await running.owner("SELECT min(company_id) FROM companies WHERE region_id = 1"))[0][0]
    owner = (await running.owner("SELECT min(owner_id) FROM owners WHERE region_id = 1"))[0][0]
    for sql in (
        f"SELECT count(*) FROM owners WHERE 1 / (owner_id - {owner}) > -100",
        f"SELECT count(*) FROM owners o JOIN regions r ON r.region_id = o.region_id "
        f"WHERE 1 / (o.owner_id - {owner}) > -100",
        f"SELECT count(*) FROM companies WHERE 1 / (company_id - {other}) > -100",
        f"SELECT count(*) FROM companies c JOIN regions r ON r.region_id = c.region_id "
        f"WHERE 1 / (c.company_id - {other}) > -100",
        f"SELECT count(*) FROM (SELECT * FROM companies) x "
        f"WHERE 1 / (x.company_id - {other}) > -100",
    ):
        rows = await running.rows(BOB, sql)
        assert rows and rows[0][0] > 0


async def test_a_principal_links_the_values_their_rows_hold_and_no_other(running):
    """After the service key's question (whatever it left memoised of the full catalog),
    bob's rows hold Germany and his question is answered from them; alice's hold none, and
    for her Germany reads exactly as Portugal, which no row holds."""
    question = "How many companies are in {}?"
    germany = {
        region: (await running.owner(
            f"SELECT count(*) FROM companies WHERE country = 'Germany' AND region_id = {region}"
        ))[0][0]
        for region in (1, 2)
    }  # fmt: skip
    assert germany[1] == 0 < germany[2]
    full = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=question.format("Germany")), timeout=20
    )
    assert full.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, full.message
    bob = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id="acme", question=question.format("Germany")),
        metadata=_headers(BOB),
        timeout=20,
    )
    assert _rows(bob.result) == [(germany[2],)], bob.message
    said = {}
    for country in ("Germany", "Portugal"):
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=question.format(country)),
            metadata=_headers(ALICE),
            timeout=20,
        )
        message = reply.message.replace(country, "<value>")
        said[country] = (reply.outcome, reply.refusal_reason, message, len(reply.attempts))
    assert said["Germany"] == said["Portugal"]
    assert said["Germany"][0] == pb.SQL_ASK_OUTCOME_UNANSWERABLE


@pytest.fixture
async def secured(
    pg_url: str, warehouse: Warehouse, telemetry_sink, tmp_path: Path
) -> AsyncIterator[Running]:
    """Role mode over a table whose row-level security shows each role its own leads and
    the login role every lead (so the catalog's stored values are everyone's): wh_alice's
    leads are in Lyon, the others' in Oslo."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP DATABASE IF EXISTS rls_leads")
        await conn.execute("CREATE DATABASE rls_leads")
        for role in ("wh_alice", "wh_sales"):
            found = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            if await found.fetchone() is None:
                await conn.execute(f"CREATE ROLE {role} NOLOGIN")
            await conn.execute(f"GRANT {role} TO {warehouse.reader_role}")
    admin = database_url(pg_url, "rls_leads")
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute("CREATE TABLE leads (lead_id int PRIMARY KEY, owner text, city text)")
        await conn.execute(
            "INSERT INTO leads SELECT i, CASE WHEN i % 3 = 0 THEN 'wh_alice' ELSE 'wh_sales' END,"
            " CASE WHEN i % 3 = 0 THEN 'Lyon' ELSE 'Oslo' END FROM generate_series(1, 30) i"
        )
        await conn.execute("ALTER TABLE leads ENABLE ROW LEVEL SECURITY")
        await conn.execute("CREATE POLICY own ON leads USING (owner = current_user)")
        await conn.execute(
            f"CREATE POLICY everyone ON leads TO {warehouse.reader_role} USING (true)"
        )
        await grant_read_only(conn, "rls_leads", warehouse.reader_role, schemas=["public"])
        await conn.execute("GRANT USAGE ON SCHEMA public TO wh_alice, wh_sales")
        await conn.execute("GRANT SELECT ON leads TO wh_alice, wh_sales")
        await conn.execute("ANALYZE leads")
    roles = tmp_path / "roles.json"
    roles.write_text(json.dumps(ROLE_POLICY))
    deps: SqlDeps = await build_deps(
        replace(SqlSettings(), reference_date=date(2025, 6, 30)),
        telemetry_sink("sql").telemetry,
        configs=[
            TargetConfig(
                "warehouse",  # the service's default name; the database is rls_leads
                psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="rls_leads"),
                tenants=frozenset({"*"}),
                access=load_access_policy(roles),
            )
        ],
    )
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    await ready(server, servicer, deps)
    channel = create_channel(server.address)
    yield Running(pb_grpc.SqlServiceStub(channel), admin)
    await channel.close()
    await server.stop(0)
    await deps.close()


async def test_role_mode_links_only_the_values_the_roles_rows_hold(secured):
    """The login role's stored values of a row-secured table are everyone's: alice's role
    reads them back as its own (Lyon is linked and counted from her rows), and Oslo, which
    only rows hidden from her hold, reads exactly as Porto, which no row holds."""

    async def ask(principal: Principal | None, city: str) -> pb.AskQuestionResponse:
        reply: pb.AskQuestionResponse = await secured.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=f"How many leads are in {city}?"),
            metadata=_headers(principal),
            timeout=20,
        )
        return reply

    full = await ask(None, "Oslo")
    assert _rows(full.result) == [(20,)], full.message
    lyon = await ask(ALICE, "Lyon")
    assert _rows(lyon.result) == [(10,)], lyon.message
    said = {}
    for city in ("Oslo", "Porto"):
        reply = await ask(ALICE, city)
        message = reply.message.replace(city, "<value>")
        said[city] = (reply.outcome, reply.refusal_reason, message, len(reply.attempts))
    assert said["Oslo"] == said["Porto"]
    assert said["Oslo"][0] == pb.SQL_ASK_OUTCOME_UNANSWERABLE


async def test_a_pair_another_principal_taught_is_not_reused(remembering):
    """bob's confirmed question names a country only his rows hold. alice's question on
    a country of her own is answered exactly as in a tenant where nobody taught anything:
    no reused pair, none of bob's words nor his value, the same statement and rows (a
    reuse, even with its words withheld, would tell her someone asked it). bob, asking
    the same of his own pair, is shown his question and the value swapped."""
    import uuid

    tenant, nobody = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    only_2 = await remembering.owner(
        "SELECT country FROM companies GROUP BY country "
        "HAVING bool_and(region_id = 2) ORDER BY count(*) DESC LIMIT 1"
    )
    only_1 = await remembering.owner(
        "SELECT country FROM companies GROUP BY country "
        "HAVING bool_and(region_id = 1) ORDER BY count(*) DESC LIMIT 1"
    )
    assert only_1 and only_2
    theirs, mine = only_2[0][0], only_1[0][0]
    question = "How many companies are in {}?"
    await remembering.stub.TeachSql(
        pb.TeachSqlRequest(
            tenant_id=tenant,
            question=question.format(theirs),
            sql=f"SELECT count(*) AS companies FROM companies WHERE country = '{theirs}'",
        ),
        metadata=_headers(BOB),
        timeout=20,
    )
    replies = {}
    for where in (tenant, nobody):
        replies[where] = await remembering.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id=where, question=question.format(mine)),
            metadata=_headers(ALICE),
            timeout=20,
        )
    alice, fresh = replies[tenant], replies[nobody]
    assert not alice.HasField("confirmed_pair") and not alice.citations
    assert theirs not in str(alice), "a value of rows outside alice's filter was shown"
    assert question.format(theirs) not in str(alice)
    assert (alice.outcome, alice.message, alice.interpretation, alice.result.sql) == (
        fresh.outcome, fresh.message, fresh.interpretation, fresh.result.sql
    )  # fmt: skip
    assert _rows(alice.result) == _rows(fresh.result)
    # bob's own pair, adapted for bob: his question and the value swapped are shown
    other = (await remembering.owner(
        "SELECT country FROM companies WHERE region_id = 2 AND country <> "
        f"'{theirs}' GROUP BY country ORDER BY count(*) DESC LIMIT 1"
    ))[0][0]  # fmt: skip
    bob = await remembering.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=tenant, question=question.format(other)),
        metadata=_headers(BOB),
        timeout=20,
    )
    assert bob.HasField("confirmed_pair"), bob.message
    assert [(r.before, r.after) for r in bob.confirmed_pair.replaced] == [(theirs, other)]
    assert question.format(theirs) in [c.quote for c in bob.citations]


@pytest.fixture
async def wide(
    pg_url: str, warehouse: Warehouse, telemetry_sink, tmp_path: Path
) -> AsyncIterator[Running]:
    """A database of more tables than a question is linked among whole (so each question
    is linked among the tables its words point at): ``leads`` filtered by region, alice's
    (region 1) in Lyon, everyone else's in Trondheim, beside twenty tables of other things."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP DATABASE IF EXISTS wide_leads")
        await conn.execute("CREATE DATABASE wide_leads")
    admin = database_url(pg_url, "wide_leads")
    others = (
        "invoices", "shipments", "suppliers", "warehouses", "employees", "payments", "refunds",
        "coupons", "vendors", "tickets", "carriers", "budgets", "audits", "licenses", "devices",
        "patents", "recipes", "vehicles", "parcels", "tariffs",
    )  # fmt: skip
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE leads (lead_id int PRIMARY KEY, region_id int NOT NULL, city text)"
        )
        await conn.execute(
            "INSERT INTO leads SELECT i, CASE WHEN i % 3 = 0 THEN 1 ELSE 2 END,"
            " CASE WHEN i % 3 = 0 THEN 'Lyon' ELSE 'Trondheim' END FROM generate_series(1, 30) i"
        )
        # no declared key nor foreign key: both are inferred from every row's values
        await conn.execute("CREATE TABLE calls (call_id int NOT NULL, lead_id int, region_id int)")
        await conn.execute(
            "INSERT INTO calls SELECT i, l.lead_id, l.region_id FROM generate_series(1, 40) i "
            "JOIN leads l ON l.lead_id = i % 30 + 1"
        )
        for name in others:
            await conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, label text)")
            await conn.execute(f"INSERT INTO {name} VALUES (1, 'one'), (2, 'two')")
        await conn.execute("ANALYZE")
        await grant_read_only(conn, "wide_leads", warehouse.reader_role, schemas=["public"])
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"row_filters": {
        "leads": "region_id = {principal.region_id}", "calls": "region_id = {principal.region_id}"
    }}))  # fmt: skip
    deps: SqlDeps = await build_deps(
        replace(SqlSettings(), reference_date=date(2025, 6, 30)),
        telemetry_sink("sql").telemetry,
        configs=[
            TargetConfig(
                "warehouse",
                psycopg.conninfo.make_conninfo(warehouse.reader_url, dbname="wide_leads"),
                tenants=frozenset({"*"}),
                access=load_access_policy(policy),
            )
        ],
    )
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    await ready(server, servicer, deps)
    channel = create_channel(server.address)
    yield Running(pb_grpc.SqlServiceStub(channel), admin)
    await channel.close()
    await server.stop(0)
    await deps.close()


async def test_a_wide_database_answers_a_principal_from_their_own_rows(wide):
    """Where a question is linked among some of the tables (the catalog narrowed to
    them), the statement that runs is still alice's: her filter is written into it, so
    her count is her rows' and no city of another region's rows is shown; a city only
    those rows hold reads exactly as one no row holds."""

    async def ask(principal: Principal | None, question: str) -> pb.AskQuestionResponse:
        reply: pb.AskQuestionResponse = await wide.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=question),
            metadata=_headers(principal),
            timeout=20,
        )
        return reply

    everyone = await ask(None, "How many leads are there?")
    assert _rows(everyone.result) == [(30,)], everyone.message
    count = await ask(ALICE, "How many leads are there?")
    assert count.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, count.message
    assert _rows(count.result) == [(10,)]
    per_city = await ask(ALICE, "How many leads are there per city?")
    assert per_city.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, per_city.message
    assert _rows(per_city.result) == [("Lyon", 10)]
    assert "Trondheim" not in str(per_city)
    said = {}
    for city in ("Trondheim", "Porto"):
        reply = await ask(ALICE, f"How many leads are in {city}?")
        message = reply.message.replace(city, "<value>")
        said[city] = (reply.outcome, reply.refusal_reason, message, len(reply.attempts))
        if city == "Porto":
            assert "Trondheim" not in str(reply)
    assert said["Trondheim"] == said["Porto"]
    # a misspelt city is offered the stored one nearest in spelling: alice's rows' only
    typo = await ask(None, "How many leads are in Trondhem?")
    assert "'Trondheim'" in typo.message, typo.message  # the full view's offer
    assert "Trondheim" not in str(await ask(ALICE, "How many leads are in Trondhem?"))
    # the table's row count counts other regions' rows too: not shown to alice
    described = {}
    for who in (ALICE, None):
        reply = await wide.stub.DescribeSchema(
            pb.DescribeSchemaRequest(tenant_id="acme", max_chars=100_000, tables=["leads"]),
            metadata=_headers(who),
            timeout=10,
        )
        described[who] = reply
    assert described[None].tables[0].row_estimate == 30
    assert described[ALICE].tables[0].row_estimate == -1
    assert "30 rows" not in described[ALICE].catalog_text


async def test_describe_gives_a_filtered_principal_no_count_an_inferred_key_was_read_by(wide):
    """``calls`` declares no key: its key and its join to ``leads`` are inferred from
    every row's values, and the evidence counts them (40 rows, 30 of 30 values). alice
    reads a third of those rows: she is told the key and the join are inferred, with no
    count of other regions' rows (withheld, not recounted: the key was inferred from
    every row); the full view keeps the counts."""

    async def described(principal: Principal | None) -> pb.DescribeSchemaResponse:
        reply: pb.DescribeSchemaResponse = await wide.stub.DescribeSchema(
            pb.DescribeSchemaRequest(
                tenant_id="acme", max_chars=100_000, tables=["calls", "leads"]
            ),
            metadata=_headers(principal),
            timeout=10,
        )
        return reply

    def evidence(reply: pb.DescribeSchemaResponse) -> tuple[list[str], str, list[str]]:
        calls = next(t for t in reply.tables if t.name == "calls")
        joins = [j.evidence for j in reply.joins if "calls" in j.child_table]
        return list(calls.primary_key_columns), calls.primary_key_evidence, joins

    key, why, joins = evidence(await described(None))
    assert key == ["call_id"] and "40 rows" in why, why
    assert joins and any(ch.isdigit() for ch in joins[0]), joins
    key, why, joins = evidence(alice := await described(ALICE))
    assert key == ["call_id"] and why, "the key is still said to be inferred"
    assert not any(ch.isdigit() for ch in why), why
    assert joins and not any(any(ch.isdigit() for ch in j) for j in joins), joins
    assert "40" not in alice.catalog_text
