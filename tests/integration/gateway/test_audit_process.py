"""The gateway process as ``tandem run`` starts it keeps the audit trail: a call through
the edge shows up in ListAuditEvents within the flush interval, written as the
INSERT-and-SELECT-only role."""

from __future__ import annotations

import asyncio
import time

import grpc
import psycopg
import pytest

from tandem.v1 import gateway_service_pb2 as gpb
from tests.integration.gateway.stack import bearer
from tests.processes import ProcessStack, fresh_key, gateway_stub

pytestmark = pytest.mark.integration


async def test_a_call_through_the_edge_is_in_the_trail_within_seconds(
    process_stack: ProcessStack,
):
    stack = process_stack
    key = await fresh_key(stack, "audit")
    async with grpc.aio.insecure_channel(stack.edge_address) as channel:
        stub = gateway_stub(channel)
        await stub.DescribeSchema(gpb.GatewayServiceDescribeSchemaRequest(), metadata=bearer(key))
        deadline = time.monotonic() + 10
        events: list[gpb.AuditEvent] = []
        while time.monotonic() < deadline and not events:
            page = await stub.ListAuditEvents(
                gpb.GatewayServiceListAuditEventsRequest(rpc="DescribeSchema"),
                metadata=bearer(key),
            )
            events = list(page.events)
            if not events:
                await asyncio.sleep(0.2)
    (event,) = events
    assert event.status == "OK" and event.key_id == key.split("_")[1]
    async with await psycopg.AsyncConnection.connect(stack.database_url()) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'tandem_audit_app'"
        )
        assert (await cur.fetchone())[0] >= 1  # type: ignore[index]
