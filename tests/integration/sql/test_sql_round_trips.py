"""A statement runs in three round trips: the transaction's start, its limits and the
description; the cursor's declaration with the first rows; the end. Every round trip
is CPU on both sides under load (psycopg's server-side cursor took six)."""

from __future__ import annotations

import pytest

from services.sql import Limits, Safeguards
from services.sql._execute import execute_unvetted
from tests.integration.pg_waits import WaitCounter

pytestmark = pytest.mark.integration


async def test_a_statement_waits_for_the_database_three_times(pg_url, open_pool):
    relay = WaitCounter(pg_url)
    pool = await open_pool(await relay.start())
    limits = Limits(max_rows=10, statement_timeout_s=5.0)
    names: dict[tuple[str, int], str] = {}  # the runner's cache of type names
    text = "SELECT g, 'row ' || g AS label FROM generate_series(1, 12) AS g"
    try:
        for _ in range(2):  # the pool's connections are made and configured
            await execute_unvetted(pool, text, limits, Safeguards(), type_names=names)
        relay.waits = 0
        result = await execute_unvetted(pool, text, limits, Safeguards(), type_names=names)
        waits = relay.waits
        # a result that takes a second batch: one more
        relay.waits = 0
        many = await execute_unvetted(
            pool,
            "SELECT g FROM generate_series(1, 450) AS g",
            Limits(max_rows=1000, statement_timeout_s=5.0),
            Safeguards(),
            type_names=names,
        )
        waits_for_many = relay.waits
    finally:
        await relay.close()
    assert [r.values[1].string_value for r in result.rows][:2] == ["row 1", "row 2"]
    assert len(result.rows) == 10 and result.truncated  # the row cap still holds
    assert waits == 3
    assert len(many.rows) == 450 and not many.truncated
    assert waits_for_many == 5  # batches of 200: three fetches
