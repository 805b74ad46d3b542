"""The gateway in front of the real retrieval and SQL services on the embedded Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.gateway.stack import Gateway, start_gateway

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def gateway(
    pg_url, retrieval, sql, telemetry_sink, unused_tcp_port
) -> AsyncIterator[Gateway]:
    service = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr=f"127.0.0.1:{unused_tcp_port}",
        retrieval_addr=retrieval.server.address,
        sql_addr=sql.address,
    )
    yield service
    await service.close()
