"""SQL access for principals on its own: the policy file, the views, the rewrite, and the
gate's independent check fed statements that bypass the rewriter (no database needed)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from pathlib import Path

import pytest
import sqlglot

from services.common import Principal, SettingsError, current_principal
from services.sql import Catalog, ColumnInfo, GateRule, SqlGate, TableInfo
from services.sql.access import (
    ROW_SECURITY_KEY,
    PolicyError,
    bind,
    bound_policy,
    catalog_view,
    check,
    load_access_policy,
    parse_access_policies,
)

ALICE = Principal.of("alice", ["sales"], {"region": "EMEA"})
BOB = Principal.of("bob", ["sales"], {"region": "US"})
CAROL = Principal.of("carol", ["hr"], {})
OPS = Principal.of("olga", ["sales_ops"], {})
POLICY = {
    "row_filters": {
        "opportunities": {"filter": "region = {principal.region}", "exempt_groups": ["sales_ops"]}
    },
    "hidden": {"employees.salary": ["hr"], "payroll": ["hr"]},
}


def _table(name: str, columns: list[str], schema: str = "public") -> TableInfo:
    return TableInfo(
        schema,
        name,
        columns=tuple(ColumnInfo(c, "text", True, sample_values=("EMEA", "US")) for c in columns),
    )


def _catalog(
    policy: dict[str, object], tmp_path: Path, row_security: frozenset[str] = frozenset()
) -> Catalog:
    catalog = Catalog(
        "warehouse",
        (
            _table("accounts", ["id", "name"]),
            _table("opportunities", ["id", "region", "amount", "account"]),
            _table("employees", ["id", "name", "department", "salary"]),
            _table("payroll", ["id", "amount"]),
            _table("opportunities", ["id", "region", "amount"], schema="archive"),
        ),
    )
    catalog.derived[ROW_SECURITY_KEY] = row_security  # as the catalog load reads it
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy))
    bind(catalog, load_access_policy(path))
    return catalog


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return _catalog(POLICY, tmp_path)


def _as(principal: Principal | None, fn, *args):
    """``fn(*args)`` with ``principal`` as the request's, in a context of its own."""

    def run():
        current_principal.set(principal)
        return fn(*args)

    return contextvars.copy_context().run(run)


def _gate(principal: Principal | None, sql: str, catalog: Catalog):
    return _as(principal, lambda: SqlGate().check(sql, catalog_view(catalog)))


# --- the policy file -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "key"),
    [
        ({"filters": {}}, "filters"),
        ({"row_filters": {"opportunities": ""}}, "row_filters.opportunities"),
        ({"row_filters": {"opportunities": "region = (SELECT 1)"}}, "row_filters.opportunities"),
        ({"row_filters": {"opportunities": "pg_sleep(1) IS NULL"}}, "row_filters.opportunities"),
        ({"row_filters": {"opportunities": "o.region = 'x'"}}, "row_filters.opportunities"),
        ({"row_filters": {"opportunities": "region = {region}"}}, "row_filters.opportunities"),
        ({"row_filters": {"opportunities": {"filter": "true", "x": 1}}}, "opportunities.x"),
        ({"hidden": {"employees.salary": []}}, "hidden.employees.salary"),
        ({"hidden": {"employees.salary": "hr"}}, "hidden.employees.salary"),
        ({"roles": {"groups": {"hr": "bad role"}}}, "roles.groups.hr"),
        ({"roles": {"users": {}}}, "roles.users"),
    ],
)
def test_a_malformed_policy_file_is_refused_naming_file_and_key(tmp_path, policy, key):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(policy))
    with pytest.raises(SettingsError) as err:
        load_access_policy(path)
    assert str(path) in str(err.value)
    assert key in str(err.value)


@pytest.mark.parametrize(
    ("policy", "key"),
    [
        ({"row_filters": {"deals": "true"}}, "row_filters.deals"),
        ({"row_filters": {"opportunities": "territory = 'x'"}}, "row_filters.opportunities"),
        ({"hidden": {"employees.wage": ["hr"]}}, "hidden.employees.wage"),
        ({"hidden": {"ledger": ["hr"]}}, "hidden.ledger"),
    ],
)
def test_a_name_the_catalog_lacks_is_refused_when_the_catalog_loads(tmp_path, policy, key):
    with pytest.raises(PolicyError) as err:
        _catalog(policy, tmp_path)
    assert key in str(err.value)


def test_the_setting_names_one_file_per_database(tmp_path):
    assert parse_access_policies("warehouse=/a.json; hr=/b.json") == (
        ("warehouse", Path("/a.json")),
        ("hr", Path("/b.json")),
    )
    with pytest.raises(SettingsError, match="twice"):
        parse_access_policies("w=/a.json;w=/b.json")
    with pytest.raises(SettingsError, match="name=path"):
        parse_access_policies("w")


# --- what each principal sees ----------------------------------------------------------


def test_a_principal_sees_no_hidden_part_and_no_stored_value_of_a_filtered_table(catalog):
    seen = _as(ALICE, catalog_view, catalog)
    assert seen.table("payroll") is None
    employees = seen.table("employees")
    assert employees is not None and employees.column("salary") is None
    opportunities = seen.table("opportunities")
    assert opportunities is not None
    assert all(not c.sample_values and not c.known_values for c in opportunities.columns)
    hr = _as(CAROL, catalog_view, catalog)
    assert hr.table("payroll") is not None
    assert hr.table("employees").column("salary") is not None
    assert _as(None, catalog_view, catalog) is catalog


def test_views_and_restricted_catalogs_are_computed_once(catalog):
    first = _as(ALICE, catalog_view, catalog)
    assert _as(ALICE, catalog_view, catalog) is first
    # bob's view differs in a filter value only: the same restricted catalog
    assert _as(BOB, catalog_view, catalog) is first


# --- the rewrite, through the gate -----------------------------------------------------


def test_every_scan_of_a_filtered_table_gets_the_principals_filter(catalog):
    sql = (
        "WITH x AS (SELECT * FROM opportunities) "
        "SELECT (SELECT count(*) FROM opportunities), a.name FROM accounts a "
        "JOIN x ON x.account = a.id WHERE EXISTS (SELECT 1 FROM public.opportunities o) "
        'UNION ALL SELECT 1, region FROM "opportunities"'
    )
    verdict = _gate(ALICE, sql, catalog)
    assert verdict.valid, verdict.violations
    assert verdict.normalized_sql.count("'EMEA'") == 0  # the statement as asked
    assert verdict.executed_sql.count("WHERE region = 'EMEA' OFFSET 0") == 4
    assert "'US'" not in verdict.executed_sql
    assert verdict.view == ALICE.canonical()
    bob = _gate(BOB, sql, catalog)
    assert bob.executed_sql.count("WHERE region = 'US' OFFSET 0") == 4
    assert bob.normalized_sql == verdict.normalized_sql


def test_a_value_is_a_quoted_literal_never_pasted(catalog):
    mallory = Principal.of("m", ["sales"], {"region": "x' OR '1'='1"})
    verdict = _gate(mallory, "SELECT * FROM opportunities", catalog)
    assert verdict.valid
    tree = sqlglot.parse_one(verdict.executed_sql, read="postgres")
    literals = [lit.this for lit in tree.find_all(sqlglot.exp.Literal) if lit.is_string]
    assert literals == ["x' OR '1'='1"]


def test_select_star_shows_only_visible_columns_and_a_hidden_column_is_refused(catalog):
    verdict = _gate(ALICE, "SELECT * FROM employees", catalog)
    assert verdict.valid
    assert "salary" not in verdict.executed_sql
    for sql in (
        "SELECT salary FROM employees",
        "SELECT e.name FROM employees e ORDER BY e.salary",
        "SELECT name FROM employees WHERE salary > 10",
    ):
        refused = _gate(ALICE, sql, catalog)
        assert refused.first_rule in (GateRule.ACCESS_DENIED, GateRule.UNKNOWN_TABLE), sql
        assert not refused.valid
    assert _gate(CAROL, "SELECT salary FROM employees", catalog).executed_sql == ""


def test_a_hidden_table_is_unknown_to_the_principal(catalog):
    verdict = _gate(ALICE, "SELECT * FROM payroll", catalog)
    assert verdict.first_rule is GateRule.UNKNOWN_TABLE
    assert _gate(CAROL, "SELECT * FROM payroll", catalog).valid


def test_a_missing_attribute_is_refused_naming_it_never_widened(catalog):
    nobody = Principal.of("dave", ["sales"], {})
    verdict = _gate(nobody, "SELECT count(*) FROM opportunities", catalog)
    assert verdict.first_rule is GateRule.ACCESS_DENIED
    assert verdict.violations[0].subject == "principal.region"
    # a statement not reading the filtered table is unaffected
    assert _gate(nobody, "SELECT * FROM accounts", catalog).valid


def test_an_exempt_group_and_a_service_key_read_unfiltered(catalog):
    assert "WHERE" not in _gate(OPS, "SELECT * FROM opportunities", catalog).executed_sql
    service = _gate(None, "SELECT * FROM opportunities", catalog)
    assert service.valid and service.executed_sql == "" and service.view == ""


def test_the_archive_copy_in_another_schema_is_not_the_filtered_table(catalog):
    verdict = _gate(ALICE, "SELECT * FROM archive.opportunities", catalog)
    assert verdict.valid and verdict.executed_sql.count("WHERE") == 0


def test_two_principals_never_share_a_memoised_verdict(catalog):
    gate = SqlGate()

    def check_as(principal: Principal) -> str:
        def run() -> str:
            from services.sql.gate import scope_memos

            current_principal.set(principal)
            scope_memos("acme", principal.canonical())
            return gate.check("SELECT * FROM opportunities", catalog_view(catalog)).executed_sql

        return contextvars.copy_context().run(run)

    assert "'EMEA'" in check_as(ALICE)
    assert "'US'" in check_as(BOB)


# --- the independent check, fed statements that bypass the rewriter --------------------

_COLS = '"id", "region", "amount", "account"'
_OK = f'(SELECT {_COLS} FROM "public"."opportunities" WHERE region = \'EMEA\' OFFSET 0)'
BYPASSES = [
    "SELECT * FROM opportunities",
    "SELECT * FROM public.opportunities",
    'SELECT * FROM "opportunities"',
    'SELECT * FROM "public"."opportunities" AS o',
    "WITH o AS (SELECT * FROM opportunities) SELECT * FROM o",
    "WITH RECURSIVE r AS (SELECT * FROM opportunities) SELECT * FROM r",
    "WITH opportunities AS (SELECT * FROM public.opportunities) SELECT * FROM opportunities",
    "SELECT (SELECT sum(amount) FROM opportunities) AS s",
    "SELECT 1 UNION SELECT count(*) FROM opportunities",
    "SELECT 1 FROM accounts WHERE EXISTS (SELECT 1 FROM opportunities)",
    "SELECT 1 FROM accounts WHERE id IN (SELECT account FROM opportunities)",
    "SELECT * FROM accounts a, LATERAL (SELECT * FROM opportunities o WHERE o.account = a.id) x",
    "SELECT * FROM accounts JOIN opportunities ON opportunities.account = accounts.id",
    f'SELECT * FROM (SELECT {_COLS} FROM "public"."opportunities") AS o',
    f'SELECT * FROM (SELECT {_COLS} FROM "public"."opportunities" WHERE region = \'US\') AS o',
    f'SELECT * FROM (SELECT {_COLS} FROM "public"."opportunities" '
    "WHERE region = 'EMEA' OR TRUE) AS o",
    f'SELECT * FROM (SELECT {_COLS} FROM "public"."opportunities" AS x '
    "WHERE region = 'EMEA') AS o",
    f'SELECT * FROM (SELECT {_COLS} FROM "public"."opportunities" '
    "JOIN accounts ON TRUE WHERE region = 'EMEA') AS o",
    f'SELECT * FROM (SELECT {_COLS} FROM "public"."opportunities" '
    "WHERE region = 'EMEA' UNION SELECT 1, 'a', 1, 1 FROM accounts) AS o",
    f'SELECT * FROM (SELECT *, {_COLS} FROM "public"."opportunities" WHERE region = \'EMEA\') AS o',
    f'SELECT * FROM (SELECT {_COLS} FROM "public"."opportunities" '
    "WHERE region = 'EMEA' GROUP BY 1, 2, 3, 4) AS o",
    "SELECT * FROM employees",
    'SELECT * FROM (SELECT "id", "name", "department", "salary" FROM "public"."employees") AS e',
    'SELECT salary FROM (SELECT "id", "name", "department" FROM "public"."employees" '
    "OFFSET 0) AS e",
    "SELECT * FROM payroll",
    "SELECT * FROM public.PAYROLL",
    # the canonical shape without its fence, or with another offset or a limit
    "SELECT * FROM " + _OK.replace(" OFFSET 0", "") + " AS o",
    "SELECT * FROM " + _OK.replace(" OFFSET 0", " OFFSET 1") + " AS o",
    "SELECT * FROM " + _OK.replace(" OFFSET 0", " LIMIT 5 OFFSET 0") + " AS o",
]
ALLOWED = [
    f"SELECT * FROM {_OK} AS o",
    f"WITH x AS (SELECT * FROM {_OK} AS o) SELECT count(*) FROM x",
    'SELECT name FROM (SELECT "id", "name", "department" FROM "public"."employees" OFFSET 0) AS e',
    "SELECT * FROM accounts",
    "SELECT * FROM archive.opportunities",
]


@pytest.fixture
def alice_view(catalog):
    bound = bound_policy(catalog)
    assert bound is not None
    return bound.view(ALICE), bound.catalog


@pytest.mark.parametrize("sql", BYPASSES, ids=[f"b{i}" for i in range(len(BYPASSES))])
def test_the_check_refuses_a_statement_that_bypassed_the_rewriter(alice_view, sql):
    view, full = alice_view
    assert check(sqlglot.parse_one(sql, read="postgres"), view, full), sql


@pytest.mark.parametrize("sql", ALLOWED, ids=[f"a{i}" for i in range(len(ALLOWED))])
def test_the_check_passes_what_the_view_allows(alice_view, sql):
    view, full = alice_view
    assert check(sqlglot.parse_one(sql, read="postgres"), view, full) == []


def test_the_rewriter_output_passes_the_check_for_every_bypass_it_rewrites(catalog):
    """Each bypass statement the gate accepts for alice runs only as its filtered form."""
    for sql in BYPASSES:
        verdict = _gate(ALICE, sql, catalog)
        if verdict.valid:
            bound = bound_policy(catalog)
            assert bound is not None
            final = sqlglot.parse_one(verdict.executed_sql, read="postgres")
            assert check(final, bound.view(ALICE), bound.catalog) == [], sql
            assert "'EMEA'" in verdict.executed_sql or "opportunities" not in sql.lower(), sql


# --- role mode -------------------------------------------------------------------------


def test_role_mode_maps_principal_then_group_and_refuses_the_unmapped(tmp_path):
    catalog = _catalog(
        {"roles": {"groups": {"hr": "wh_hr", "sales": "wh_sales"},
                   "principals": {"alice": "wh_alice"}}},
        tmp_path,
    )  # fmt: skip
    assert _gate(ALICE, "SELECT * FROM accounts", catalog).role == "wh_alice"
    assert _gate(BOB, "SELECT * FROM accounts", catalog).role == "wh_sales"
    assert _gate(CAROL, "SELECT * FROM accounts", catalog).role == "wh_hr"
    stranger = _gate(Principal.of("eve", ["guests"], {}), "SELECT * FROM accounts", catalog)
    assert stranger.first_rule is GateRule.ACCESS_DENIED
    both = _gate(Principal.of("zed", ["hr", "sales"], {}), "SELECT * FROM accounts", catalog)
    assert both.first_rule is GateRule.ACCESS_DENIED
    assert _gate(None, "SELECT * FROM accounts", catalog).role == ""


# --- cost ------------------------------------------------------------------------------


def test_the_rewrite_costs_little_per_statement(catalog):
    """A typical statement's gate with a principal (first sight, no memo) within a few
    times the gate alone; printed for the report."""
    sql = (
        "SELECT a.name, sum(o.amount) FROM opportunities o JOIN accounts a ON a.id = o.account "
        "WHERE o.amount > 10 GROUP BY a.name ORDER BY 2 DESC LIMIT 10"
    )

    def timed(principal: Principal | None) -> float:
        seen = _as(principal, catalog_view, catalog)
        started = time.perf_counter()
        for i in range(200):
            _as(principal, lambda i=i: SqlGate().check(f"{sql} OFFSET {i}", seen))
        return (time.perf_counter() - started) / 200

    without, with_ = timed(None), timed(ALICE)
    print(f"gate ms/statement: without {without * 1000:.2f}, with principal {with_ * 1000:.2f}")
    assert with_ < 3 * without + 0.002


def test_groups_and_id_placeholders_are_literals_the_check_recognises(tmp_path):
    catalog = _catalog(
        {"row_filters": {"opportunities": "account = {principal.id} OR region = ANY("
                         "{principal.groups})"}},
        tmp_path,
    )  # fmt: skip
    verdict = _gate(ALICE, "SELECT count(*) FROM opportunities", catalog)
    assert verdict.valid, verdict.violations
    assert "account = 'alice'" in verdict.executed_sql
    assert "ARRAY['sales']" in verdict.executed_sql
    bound = bound_policy(catalog)
    assert bound is not None
    final = sqlglot.parse_one(verdict.executed_sql, read="postgres")
    assert check(final, bound.view(ALICE), bound.catalog) == []


async def test_a_filtered_table_is_never_probed_for_a_stored_value(catalog):
    """The memory's value probe reads rows unfiltered: for a principal's filtered table it
    answers "no evidence" without touching the database (``conn`` is never used)."""
    from services.sql.catalog import stored_in

    seen = _as(ALICE, catalog_view, catalog)
    opportunities = seen.table("opportunities")
    assert opportunities is not None and opportunities.row_filtered
    assert await stored_in(None, opportunities, "region", "US")  # type: ignore[arg-type]
    assert not seen.table("accounts").row_filtered


def test_a_view_over_a_protected_table_must_be_protected_too(tmp_path):
    from services.sql.access import SOURCES_KEY

    def catalog_with_view(policy: dict[str, object]) -> Catalog:
        catalog = Catalog(
            "warehouse",
            (
                _table("opportunities", ["id", "region"]),
                _table("opps_emea", ["id", "region"]),
                _table("opps_by_id", ["id"]),
            ),
        )
        catalog.derived[SOURCES_KEY] = {
            "public.opps_emea": frozenset({"public.opportunities"}),
            "public.opps_by_id": frozenset({"public.opps_emea", "public.opportunities"}),
        }
        path = tmp_path / "p.json"
        path.write_text(json.dumps(policy))
        bind(catalog, load_access_policy(path))
        return catalog

    filtered: dict[str, object] = {"row_filters": {"opportunities": "region = {principal.region}"}}
    with pytest.raises(PolicyError, match=r"views: public\.opps_by_id reads"):
        catalog_with_view(filtered)
    covered = {**filtered, "hidden": {"opps_emea": ["sales_ops"], "opps_by_id": ["sales_ops"]}}
    assert bound_policy(catalog_with_view(covered)) is not None


def test_a_views_catalog_is_memoised_apart_from_the_full_one(catalog):
    """A principal's catalog shares the full one's database, load time and tables: memos
    of a catalog's contents (the linker's vocabulary, a checker's stored values) must key
    it apart, or the service key's vocabulary links a principal's question with values
    only rows hidden from them hold."""
    seen = _as(ALICE, catalog_view, catalog)
    assert [t.qualified for t in seen.tables if t.qualified != "public.payroll"] == [
        t.qualified for t in catalog.tables if t.qualified != "public.payroll"
    ]
    assert seen.memo_key != catalog.memo_key
    assert catalog.memo_key[2] == ""
    assert _as(CAROL, catalog_view, catalog).memo_key not in (seen.memo_key, catalog.memo_key)


async def test_a_principal_links_only_the_values_their_own_rows_hold(catalog):
    """The values a filtered table shows a principal are read through their own view (the
    reader here stands for the engine's gated run as the principal): only stored values
    it returned are kept, per filter as substituted, and a read that fails leaves the
    table without values and is tried again next time."""
    from services.sql.access import asking_view

    asked: list[str] = []
    answers: dict[str, list[tuple[int, str]] | None] = {}

    async def read(text: str, rows: int) -> list[tuple[int, str]] | None:
        asked.append(text)
        assert rows == 9  # two values stored in each of four columns, and one more
        # columns in order: id, region, amount, account (each stored EMEA and US)
        principal = current_principal.get()
        assert principal is not None
        return answers[principal.id]

    def values(catalog: Catalog, table: str, column: str) -> tuple[str, ...]:
        found = catalog.table(table)
        info = found.column(column) if found is not None else None
        assert info is not None
        return info.sample_values

    async def linked(principal: Principal) -> Catalog:
        async def run() -> Catalog:
            current_principal.set(principal)
            return await asking_view(catalog, read)

        return await asyncio.create_task(run())

    answers["alice"] = [(1, "EMEA"), (1, "Mars"), (0, "x")]
    alice = await linked(ALICE)
    assert values(alice, "opportunities", "region") == ("EMEA",)  # "Mars" was never stored
    assert values(alice, "opportunities", "amount") == ()
    assert values(alice, "accounts", "name") == ("EMEA", "US")  # unfiltered
    assert len(asked) == 1 and "opportunities" in asked[0]
    assert await linked(ALICE) is alice and len(asked) == 1  # once per load and filter
    answers["bob"] = None  # the read failed: no values, not kept
    bob = await linked(BOB)
    assert values(bob, "opportunities", "region") == ()
    assert bob.memo_key != alice.memo_key
    answers["bob"] = [(1, "US")]
    assert values(await linked(BOB), "opportunities", "region") == ("US",)
    assert len(asked) == 3
    # a service key and an exempt group read nothing: the full view as it is
    assert await linked(OPS) is _as(OPS, catalog_view, catalog)
    assert len(asked) == 3


async def test_role_mode_reads_a_row_secured_tables_values_as_the_role(tmp_path):
    """In role mode the warehouse's own row-level security picks a role's rows: the login
    role's stored values of such a table are not the role's. They are dropped from the
    role's catalog and read back as the role (the reader stands for the gated run), one
    read per role; tables without row security keep theirs."""
    from services.sql.access import asking_view

    catalog = _catalog(
        {"roles": {"principals": {"alice": "wh_alice", "bob": "wh_bob"}}},
        tmp_path,
        row_security=frozenset({"public.opportunities"}),
    )
    seen = _as(ALICE, catalog_view, catalog)
    opportunities = seen.table("opportunities")
    assert opportunities is not None and opportunities.row_filtered
    assert all(not c.sample_values for c in opportunities.columns)
    assert seen.table("accounts") is catalog.table("accounts")
    read_for: list[str] = []

    async def read(text: str, rows: int) -> list[tuple[int, str]] | None:
        principal = current_principal.get()
        assert principal is not None
        read_for.append(principal.id)
        return [(1, "EMEA")] if principal.id == "alice" else [(1, "US")]

    async def linked(principal: Principal | None) -> Catalog:
        async def run() -> Catalog:
            current_principal.set(principal)
            return await asking_view(catalog, read)

        return await asyncio.create_task(run())

    alice, bob = await linked(ALICE), await linked(BOB)
    regions = {
        who: found.table("opportunities").column("region").sample_values  # type: ignore[union-attr]
        for who, found in (("alice", alice), ("bob", bob))
    }
    assert regions == {"alice": ("EMEA",), "bob": ("US",)}
    assert alice.memo_key != bob.memo_key  # same shape, another role: other values
    assert await linked(None) is catalog and read_for == ["alice", "bob"]


# --- a principal's catalog narrowed to a question's tables ------------------------------


def test_a_narrowed_view_keeps_the_principals_filter(catalog):
    """On a wide warehouse a question is linked and gated among some of the tables (the
    narrowing): the catalog of those tables is still the principal's, bound to their
    policy, so their filter is written into the statement that runs."""
    seen = _as(ALICE, catalog_view, catalog)
    tables = tuple(t for t in seen.tables if t.name == "opportunities" and t.schema == "public")
    narrowed = seen.narrowed(tables, None)
    assert [t.qualified for t in narrowed.tables] == ["public.opportunities"]
    assert bound_policy(narrowed) is bound_policy(catalog)
    verdict = _as(ALICE, lambda: SqlGate().check("SELECT count(*) FROM opportunities", narrowed))
    assert verdict.valid, verdict.violations
    assert "WHERE region = 'EMEA' OFFSET 0" in verdict.executed_sql
    # what the load derived about its contents stays with the catalog it describes
    seen.derived["index"] = object()
    assert "index" not in seen.narrowed(tables, None).derived


def test_a_principals_catalog_that_lost_its_policy_runs_nothing(catalog):
    """A principal's view rebuilt without its policy (a copy made around
    ``Catalog.narrowed``) would gate statements with no filter to write: refused."""
    from dataclasses import replace

    seen = _as(ALICE, catalog_view, catalog)
    bare = replace(seen, tables=seen.tables)
    assert bound_policy(bare) is None and bare.access_view
    verdict = _as(ALICE, lambda: SqlGate().check("SELECT count(*) FROM opportunities", bare))
    assert not verdict.valid
    assert verdict.first_rule is GateRule.ACCESS_DENIED
    # a catalog no policy was ever bound to (a database without one) is read as it is
    plain = Catalog("warehouse", seen.tables)
    assert _as(ALICE, lambda: SqlGate().check("SELECT count(*) FROM accounts", plain)).valid


def test_a_filtered_tables_row_count_is_not_shown_to_a_principal(tmp_path):
    """A filtered table's row estimate counts every row, other people's too: a principal
    under the filter is told the count is unknown; an exempt group sees it."""
    catalog = Catalog(
        "warehouse",
        (
            replace_rows(_table("opportunities", ["id", "region", "amount", "account"]), 120),
            replace_rows(_table("accounts", ["id", "name"]), 40),
            _table("employees", ["id", "name", "department", "salary"]),
            _table("payroll", ["id", "amount"]),
            _table("opportunities", ["id", "region", "amount"], schema="archive"),
        ),
    )
    catalog.derived[ROW_SECURITY_KEY] = frozenset()
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(POLICY))
    bind(catalog, load_access_policy(path))
    seen = _as(ALICE, catalog_view, catalog)
    assert seen.table("public.opportunities").row_estimate == -1
    assert seen.table("accounts").row_estimate == 40
    assert _as(OPS, catalog_view, catalog).table("public.opportunities").row_estimate == 120


def test_an_inferred_keys_and_joins_counts_are_not_shown_to_a_filtered_principal(tmp_path):
    """A key or join inferred from the data says how many rows and values it was read
    over: every row of a filtered table, other people's too. A principal under the filter
    is told the key and join are inferred, with no count; the overlap's reason (the kind
    of join) stays; a join between unfiltered tables and an exempt group keep theirs."""
    from dataclasses import replace

    from services.sql.catalog import JoinGraph
    from services.sql.catalog._catalog import JoinInfo, JoinOrigin

    opportunities = replace(
        _table("opportunities", ["id", "region", "amount", "account"]),
        primary_key=("id",),
        key_evidence="id is never null and never repeats in 120 rows",
    )
    joins = (
        JoinInfo("public.opportunities", ("account",), "public.accounts", ("id",),
                 JoinOrigin.INFERRED,
                 "same name and shared values; 38 of 40 distinct values found in public.accounts"),
        JoinInfo("public.employees", ("id",), "public.accounts", ("id",), JoinOrigin.INFERRED,
                 "the only key holding them; 12 of 12 distinct values found in public.accounts"),
    )  # fmt: skip
    catalog = Catalog(
        "warehouse",
        (
            opportunities,
            replace(_table("accounts", ["id", "name"]), primary_key=("id",)),
            _table("employees", ["id", "name", "department", "salary"]),
            _table("payroll", ["id", "amount"]),
            _table("opportunities", ["id", "region", "amount"], schema="archive"),
        ),
        joins=joins,
    )
    catalog.derived[ROW_SECURITY_KEY] = frozenset()
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(POLICY))
    bind(catalog, load_access_policy(path))

    def evidence(principal: Principal) -> tuple[str, dict[str, tuple[str, str]]]:
        seen = _as(principal, catalog_view, catalog)
        table = seen.table("public.opportunities")
        assert table is not None and table.primary_key == ("id",)
        return table.key_evidence, {
            e.child: (e.kind, e.evidence) for e in JoinGraph(seen).edges if e.kind != "declared"
        }

    key, edges = evidence(ALICE)
    assert key and not any(ch.isdigit() for ch in key), key
    kind, why = edges["public.opportunities"]
    assert kind == "overlap" and why.startswith("same name and shared values")
    assert not any(ch.isdigit() for ch in why), why
    assert edges["public.employees"][1] == joins[1].evidence  # no filtered table in it
    key, edges = evidence(OPS)
    assert key == opportunities.key_evidence
    assert edges["public.opportunities"][1] == joins[0].evidence


def replace_rows(table: TableInfo, rows: int) -> TableInfo:
    from dataclasses import replace

    return replace(table, row_estimate=rows)
