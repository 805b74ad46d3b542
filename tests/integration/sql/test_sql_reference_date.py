"""Relative dates on the demo warehouse: with SQL_REFERENCE_DATE unset, a service that set
up the demo warehouse itself reads "last quarter" against the data's anchor, not today."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import date
from pathlib import Path

import grpc
import psycopg
import pytest

from services.sql import SqlSettings, TargetConfig, Warehouse
from services.sql._server import build_deps, create_server, ready
from services.sql.demo import data as demo_data
from services.sql.demo._warehouse import database_url
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import TelemetrySink, server_settings

pytestmark = pytest.mark.integration

QUESTION = "How many deals did we win last quarter?"

Count = Callable[..., Awaitable[int]]


def _won_between(owner_url: str, start: str, end: str) -> int:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM opportunities WHERE stage = 'Closed Won' "
            "AND close_date >= %s::date AND close_date < %s::date",
            (start, end),
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
async def count_last_quarter(pg_url: str, warehouse: Warehouse) -> AsyncIterator[Count]:
    """``await count(settings, configs=None)``: the answer a fresh SQL service gives."""
    closers: list[Callable[[], Awaitable[object]]] = []

    async def count(settings: SqlSettings, configs: list[TargetConfig] | None = None) -> int:
        sink = TelemetrySink("sql")
        deps = await build_deps(settings, sink.telemetry, configs=configs)
        server, servicer = await create_server(server_settings("sql"), sink.telemetry)
        await ready(server, servicer, deps)
        channel = grpc.aio.insecure_channel(server.address)
        closers.extend([deps.close, lambda: server.stop(0), channel.close])
        reply = await pb_grpc.SqlServiceStub(channel).AskQuestion(
            pb.AskQuestionRequest(tenant_id="demo", question=QUESTION), timeout=30
        )
        assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
        (row,) = reply.result.rows
        return int(row.values[0].int_value)

    yield count
    for close in reversed(closers):
        await close()


async def test_unset_reference_date_on_the_demo_warehouse_is_the_data_anchor(
    count_last_quarter: Count, pg_url: str, warehouse: Warehouse, tmp_path: Path
) -> None:
    owner = database_url(pg_url, warehouse.database)
    anchor_quarter = _won_between(owner, "2025-01-01", "2025-04-01")
    assert date(2025, 6, 30) == demo_data.ANCHOR_DATE
    assert anchor_quarter > 0

    # The service finds (sets up) the demo warehouse itself: anchor, not today.
    demo = SqlSettings(admin_url=pg_url, data_dir=tmp_path)
    assert demo.reference_date is None
    assert await count_last_quarter(demo) == anchor_quarter

    # An explicit SQL_REFERENCE_DATE still wins.
    later = SqlSettings.from_env({"DATABASE_URL": pg_url, "SQL_REFERENCE_DATE": "2030-02-01"})
    assert await count_last_quarter(later) == _won_between(owner, "2029-10-01", "2030-01-01")


async def test_a_warehouse_the_service_did_not_set_up_keeps_today(
    count_last_quarter: Count, pg_url: str, warehouse: Warehouse
) -> None:
    owner = database_url(pg_url, warehouse.database)
    today = date.today()
    start_month = 3 * ((today.month - 1) // 3) + 1
    quarter_start = date(today.year, start_month, 1)
    last_start = date(
        quarter_start.year - (1 if start_month == 1 else 0), (start_month - 4) % 12 + 1, 1
    )
    expected = _won_between(owner, last_start.isoformat(), quarter_start.isoformat())
    configured = await count_last_quarter(
        SqlSettings(),
        configs=[TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({"demo"}))],
    )
    assert configured == expected
