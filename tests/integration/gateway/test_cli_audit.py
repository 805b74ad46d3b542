"""``tandem audit`` against a real gateway: every page of the trail as JSON lines or a
table, the filters, and a bad filter printed as the status naming the field."""

from __future__ import annotations

import argparse
import asyncio
import json

import pytest

from gateway import Scope
from services.cli import _audit
from services.cli._main import Commands
from tandem.v1 import gateway_service_pb2 as gpb
from tests.integration.gateway.stack import bearer
from tests.integration.retrieval.stack import new_tenant

pytestmark = pytest.mark.integration


async def tandem(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tandem")
    top = parser.add_subparsers(dest="command", required=True)
    _audit.register(Commands(top=top, bench=None, eval=None))
    args = parser.parse_args(list(argv))
    code: int = await asyncio.to_thread(args.handler, args)
    return code


async def test_tandem_audit_pages_through_filters_and_names_a_bad_filter(
    gateway, pg_url, capsys, monkeypatch
):
    tenant = new_tenant(pg_url, "cli-audit")
    admin = await gateway.key(tenant, scopes=(Scope.ADMIN,))
    asker = await gateway.key(tenant, scopes=(Scope.ASK,))
    for _ in range(3):
        await gateway.stub.AskSql(
            gpb.GatewayServiceAskSqlRequest(question="How many companies are there?"),
            metadata=bearer(asker), timeout=30,
        )  # fmt: skip
    await gateway.audit.flush()
    monkeypatch.setenv("TANDEM_GATEWAY", gateway.address)
    monkeypatch.setenv("TANDEM_API_KEY", admin)
    monkeypatch.setattr(_audit, "PAGE_SIZE", 2)  # three events: two pages

    assert await tandem("audit", "--rpc", "AskSql", "--json") == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["rpc"] for e in lines] == ["AskSql"] * 3
    assert all(e["keyId"] == asker.split("_")[1] and e["tablesRead"] for e in lines)
    assert await tandem("audit", "--outcome", "ok", "--limit", "1") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split(" | ")[:3] == ["time               ", "rpc   ", "status"]
    assert len(table) == 3 and "AskSql" in table[2] and "companies" in table[2]
    assert await tandem("audit", "--outcome", "fine") == 1
    err = capsys.readouterr().err
    assert "INVALID_ARGUMENT" in err and "outcome" in err and "Traceback" not in err
    # An ask-only key is refused naming the scope it lacks.
    monkeypatch.setenv("TANDEM_API_KEY", asker)
    assert await tandem("audit") == 1
    assert "admin" in capsys.readouterr().err
