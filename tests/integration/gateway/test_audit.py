"""The audit trail's table on the real embedded Postgres: append-only for every role
(the application role by its grants, the owner by the trigger), rows leave only through
the retention purge, listing is one tenant's with filters and paging, and a dead
database neither fails nor holds up recording — it is counted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from gateway import GatewaySettings
from gateway._audit import APP_ROLE, AuditEvent, AuditLog, AuditQuery, app_conninfo, parse_query
from gateway._schema import migrations
from gateway._settings import AuditSettings
from services.common import Database, InvalidArgument
from tandem.v1 import gateway_service_pb2 as gpb
from tests.integration.retrieval.stack import new_tenant

pytestmark = pytest.mark.integration


@pytest.fixture
async def audit(pg_url) -> AsyncIterator[AuditLog]:
    owner = Database(pg_url, min_size=1, max_size=1, vector=False)
    await owner.open(migrations())
    await owner.close()
    log = AuditLog(
        Database(app_conninfo(pg_url), owner_conninfo=pg_url, max_size=2, vector=False),
        AuditSettings(retention_days=30),
    )
    await log.open()
    yield log
    await log.close()


def _event(tenant: str, rpc: str = "Ask", **fields: object) -> AuditEvent:
    event = AuditEvent(rpc, tenant_id=tenant, key_id="k" * 16, **fields)  # type: ignore[arg-type]
    event.event_time = datetime.now(UTC)
    return event


async def test_the_app_role_can_insert_and_read_but_never_change_or_delete(audit, pg_url):
    tenant = new_tenant(pg_url, "audit")
    audit.record(_event(tenant, document_ids=["doc-1"]))
    assert await audit.flush() == 1
    async with audit.database.connection() as conn:
        assert await (await conn.execute("SELECT current_user")).fetchone() == (APP_ROLE,)
    async with await psycopg.AsyncConnection.connect(pg_url) as owner:
        role = await (
            await owner.execute(
                "SELECT rolsuper, rolbypassrls, rolcreaterole, "
                "pg_get_userbyid(c.relowner) = rolname FROM pg_roles, pg_class c "
                "WHERE rolname = %s AND c.oid = 'gateway_audit_events'::regclass",
                (APP_ROLE,),
            )
        ).fetchone()
    assert role == (False, False, False, False)
    async with await psycopg.AsyncConnection.connect(app_conninfo(pg_url)) as conn:
        await conn.execute("SELECT set_config('tandem.tenant_id', %s, false)", (tenant,))
        for statement in (
            "UPDATE gateway_audit_events SET status = 'OK'",
            "DELETE FROM gateway_audit_events",
            "TRUNCATE gateway_audit_events",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await conn.execute(statement)
            await conn.rollback()
        # Even the purge's cut-off, set by hand, gives no DELETE right.
        await conn.execute("SELECT set_config('tandem.audit_purge_before', '2999-01-01', false)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute("DELETE FROM gateway_audit_events")
        await conn.rollback()
        # Reads see only the tenant set (none without it).
        await conn.execute("SELECT set_config('tandem.tenant_id', 'someone-else', false)")
        other = await (await conn.execute("SELECT count(*) FROM gateway_audit_events")).fetchone()
    assert other == (0,)


async def test_the_owner_is_refused_too_by_the_trigger(audit, pg_url):
    tenant = new_tenant(pg_url, "audit")
    audit.record(_event(tenant))
    await audit.flush()
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        for statement in (
            "UPDATE gateway_audit_events SET status = 'OK' WHERE tenant_id = %s",
            "DELETE FROM gateway_audit_events WHERE tenant_id = %s",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                await conn.execute(statement, (tenant,))
            await conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            await conn.execute("TRUNCATE gateway_audit_events")
        await conn.rollback()
        left = await (
            await conn.execute(
                "SELECT count(*) FROM gateway_audit_events WHERE tenant_id = %s", (tenant,)
            )
        ).fetchone()
    assert left == (1,)


async def test_the_purge_deletes_only_rows_past_retention(audit, pg_url):
    tenant = new_tenant(pg_url, "audit")
    old, recent = _event(tenant, rpc="Search"), _event(tenant, rpc="Ask")
    old.event_time = datetime.now(UTC) - timedelta(days=31)
    recent.event_time = datetime.now(UTC) - timedelta(days=29)
    for event in (old, recent):
        audit.record(event)
    await audit.flush()
    assert await audit.purge() >= 1
    page = await audit.page(tenant, AuditQuery())
    assert [e.rpc for e in page.events] == ["Ask"]
    # The purge refuses a retention under a day (it would empty the trail).
    async with await psycopg.AsyncConnection.connect(app_conninfo(pg_url)) as conn:
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            await conn.execute("SELECT gateway_audit_purge(0)")


async def test_listing_filters_and_pages_one_tenants_events(audit, pg_url):
    tenant, other = new_tenant(pg_url, "audit"), new_tenant(pg_url, "audit")
    for index in range(5):
        audit.record(_event(tenant, rpc="Ask" if index % 2 else "Search", principal_id="ann"))
    audit.record(_event(tenant, rpc="Ask", status="PERMISSION_DENIED"))
    audit.record(_event(other, rpc="Ask"))
    await audit.flush()
    seen: list[int] = []
    request = gpb.GatewayServiceListAuditEventsRequest(page_size=2, principal_id="ann")
    while True:
        page = await audit.page(tenant, parse_query(request))
        seen.extend(e.event_id for e in page.events)
        assert len(page.events) <= 2
        if not page.next_page_token:
            break
        request.page_token = page.next_page_token
    assert len(seen) == 5 and seen == sorted(seen, reverse=True)
    denied = await audit.page(tenant, AuditQuery(outcome="PERMISSION_DENIED"))
    assert [e.status for e in denied.events] == ["PERMISSION_DENIED"]
    asks = await audit.page(tenant, AuditQuery(rpc="Ask", principal_id="ann"))
    assert len(asks.events) == 2
    # A token is bound to its filters.
    request = gpb.GatewayServiceListAuditEventsRequest(page_size=1)
    first = await audit.page(tenant, parse_query(request))
    request.rpc, request.page_token = "Ask", first.next_page_token
    with pytest.raises(InvalidArgument) as err:
        parse_query(request)
    assert "page_token" in str(err.value.details())


async def test_a_dead_database_never_fails_or_slows_recording_and_drops_are_counted(pg_url):
    settings = replace(AuditSettings(), buffer_size=3, batch_size=2)
    dead = Database(
        "postgresql://nobody@127.0.0.1:1/none", min_size=0, max_size=1, timeout_s=0.5,
        vector=False,
    )  # fmt: skip
    log = AuditLog(dead, settings)
    started = time.perf_counter()
    for _ in range(5):
        log.record(_event("t"))
    assert time.perf_counter() - started < 0.05
    assert log.pending == 3 and log.dropped == 2
    # The writer cannot reach it: the batch waits in the buffer, nothing raises.
    assert await asyncio.wait_for(log.flush(), 5) == 0
    assert log.pending == 3 and log.dropped == 2
    log.record(_event("t"))
    assert log.dropped == 3


def test_settings_are_typed_from_the_environment():
    settings = GatewaySettings.from_env(
        {"GATEWAY_AUDIT_RETENTION_DAYS": "7", "GATEWAY_AUDIT": "false"}
    )
    assert settings.audit.retention_days == 7 and not settings.audit.enabled
    assert GatewaySettings.from_env({}).audit.retention_days == 90
