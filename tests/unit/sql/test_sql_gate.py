"""The read-only gate on its own: a pure function of the text and the catalog."""

from __future__ import annotations

import contextvars
import re

import pytest

from services.sql import Catalog, GateRule, SqlEngine, SqlGate, TableInfo
from tests.unit.sql.corpus import HOSTILE, LEGITIMATE

TABLES = ["activities", "audit_notes", "companies", "contacts", "opportunities", "owners",
          "products", "regions"]  # fmt: skip
CATALOG = Catalog("warehouse", tuple(TableInfo("public", name) for name in TABLES))
GATE = SqlGate()


def test_corpus_is_big_enough():
    assert len(HOSTILE) >= 120
    assert len(LEGITIMATE) >= 60
    # ACCESS_DENIED needs a principal and a policy: tests/unit/sql/test_sql_access.py
    assert {rule for _, rule in HOSTILE} == set(GateRule) - {GateRule.ACCESS_DENIED}


@pytest.mark.parametrize(("sql", "rule"), HOSTILE, ids=[f"h{i}" for i in range(len(HOSTILE))])
def test_hostile_statement_is_rejected_with_its_rule(sql, rule):
    verdict = GATE.check(sql, CATALOG)
    assert not verdict.valid
    assert verdict.first_rule is rule, [(v.rule.name, v.subject) for v in verdict.violations]
    assert verdict.normalized_sql == ""


@pytest.mark.parametrize("sql", LEGITIMATE, ids=[f"l{i}" for i in range(len(LEGITIMATE))])
def test_legitimate_read_passes_and_normalises_to_a_fixed_point(sql):
    verdict = GATE.check(sql, CATALOG)
    assert verdict.valid, [(v.rule.name, v.subject) for v in verdict.violations]
    again = GATE.check(verdict.normalized_sql, CATALOG)
    assert again.valid
    assert again.normalized_sql == verdict.normalized_sql
    assert len(verdict.fingerprint) == 64


def test_subjects_name_identifiers_never_literals():
    for sql, _ in HOSTILE:
        for violation in GATE.check(sql, CATALOG).violations:
            assert "/etc/passwd" not in violation.subject
            assert "'" not in violation.subject


def test_every_violation_is_reported_with_its_subject():
    verdict = GATE.check(
        "SELECT pg_sleep(1), set_config('a', 'b', false) FROM secrets, pg_catalog.pg_authid",
        CATALOG,
    )
    found = {(v.rule, v.subject) for v in verdict.violations}
    assert (GateRule.FUNCTION_NOT_ALLOWED, "pg_sleep") in found
    assert (GateRule.FUNCTION_NOT_ALLOWED, "set_config") in found
    assert (GateRule.UNKNOWN_TABLE, "secrets") in found
    assert (GateRule.SYSTEM_SCHEMA, "pg_catalog.pg_authid") in found


def test_normalised_sql_qualifies_tables_and_drops_comments():
    verdict = GATE.check(
        "SELECT c.name /* the name */ FROM companies c -- trailing\nWHERE c.name <> 'x'", CATALOG
    )
    assert verdict.valid
    assert verdict.normalized_sql == (
        "SELECT c.name FROM public.companies AS c WHERE c.name <> 'x'"
    )
    assert verdict.tables_used == ("public.companies",)


def test_cte_names_shadow_only_inside_their_scope():
    ok = GATE.check("WITH secrets AS (SELECT 1 AS x) SELECT x FROM secrets", CATALOG)
    assert ok.valid and ok.tables_used == ()
    recursive = GATE.check(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) "
        "SELECT n FROM t",
        CATALOG,
    )
    assert recursive.valid


def test_fingerprint_ignores_literals_but_not_shape():
    one = GATE.check("SELECT name FROM companies WHERE name = 'Acme'", CATALOG)
    two = GATE.check("SELECT name FROM companies WHERE name = 'Globex'", CATALOG)
    other = GATE.check("SELECT name FROM companies WHERE industry = 'Acme'", CATALOG)
    assert one.fingerprint == two.fingerprint != other.fingerprint
    assert re.fullmatch(r"[0-9a-f]{64}", one.fingerprint)


def test_quoted_identifiers_are_case_sensitive():
    catalog = Catalog("w", (TableInfo("public", "Mixed Case"), TableInfo("public", "lower")))
    assert GATE.check('SELECT * FROM "Mixed Case"', catalog).valid
    assert GATE.check("SELECT * FROM LOWER", catalog).valid
    assert GATE.check('SELECT * FROM "LOWER"', catalog).first_rule is GateRule.UNKNOWN_TABLE
    normalized = GATE.check('SELECT * FROM "Mixed Case"', catalog).normalized_sql
    assert normalized == 'SELECT * FROM public."Mixed Case"'


def test_length_limit_is_configurable():
    gate = SqlGate(max_chars=20)
    assert gate.check("SELECT name FROM companies", CATALOG).first_rule is (
        GateRule.STATEMENT_TOO_LONG
    )
    assert gate.check("SELECT 1", CATALOG).valid


def test_rule_wire_names_match_the_contract():
    from tandem.v1 import sql_service_pb2 as pb

    for rule in GateRule:
        assert pb.SqlGateRule.Value(rule.wire_name) == rule.value


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM companies; -- note",
        "SELECT name FROM companies; /* a */ -- b\n",
        "SELECT 1;  \n",
    ],
)
def test_comment_or_whitespace_after_the_final_semicolon_is_one_statement(sql):
    verdict = GATE.check(sql, CATALOG)
    assert verdict.valid, [(v.rule.name, v.subject) for v in verdict.violations]
    assert verdict.source_sql == sql  # what Postgres must accept before the rewrite runs


def test_a_statement_hidden_after_a_comment_is_still_a_second_statement():
    verdict = GATE.check("SELECT 1; -- note\nDELETE FROM companies", CATALOG)
    assert verdict.first_rule is GateRule.SINGLE_STATEMENT


def test_a_statement_is_checked_once_per_catalog_load(monkeypatch):
    from dataclasses import replace
    from datetime import timedelta

    from services.sql.gate import _gate

    parses: list[str] = []
    real = _gate._parse

    def counting(text: str) -> object:
        parses.append(text)
        return real(text)

    monkeypatch.setattr(_gate, "_parse", counting)
    gate = SqlGate()
    first = gate.check("SELECT name FROM companies", CATALOG)
    assert gate.check("SELECT name FROM companies", CATALOG) is first
    assert len(parses) == 2  # the text and its normalised form, once
    # a reloaded catalog (a table may have gone) is checked afresh
    reloaded = replace(CATALOG, refreshed_at=CATALOG.refreshed_at + timedelta(seconds=1))
    assert gate.check("SELECT name FROM companies", reloaded).valid
    assert len(parses) == 4
    gone = replace(reloaded, tables=(), refreshed_at=reloaded.refreshed_at + timedelta(seconds=1))
    assert not gate.check("SELECT name FROM companies", gone).valid
    for i in range(600):  # bounded
        gate.check(f"SELECT {i} FROM companies", CATALOG)
    assert len(gate._verdicts) <= 256


class _CountingGate(SqlGate):
    """The gate, counting the checks it really makes (the memo's misses)."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = 0

    def _check(self, text, catalog):
        self.checked += 1
        return super()._check(text, catalog)


def test_a_verdict_is_remembered_for_its_tenant_only():
    """Issue 46: a verdict another tenant's request left must not answer faster."""
    gate = _CountingGate()
    text = "SELECT name FROM companies WHERE name = 'Merger'"

    def as_tenant(tenant: str) -> None:
        SqlEngine.check_tenant(tenant)
        assert gate.check(text, CATALOG).valid

    for tenant in ("victim", "victim", "attacker", "attacker", "victim"):
        contextvars.copy_context().run(as_tenant, tenant)
    assert gate.checked == 2  # one fresh check per tenant, none shared
