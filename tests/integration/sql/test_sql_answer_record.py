"""Every answer is recorded (feedback refers to it by id) in one statement on its own, a
store function (``0003_record_answer.sql``): the tenant set, a reused pair's use counted
and the answer stored, together or not at all, in the tenant's row-level-security view,
with nothing left on the pooled connection. Real Postgres, the store as the service
opens it."""

from __future__ import annotations

import asyncio
import uuid

import numpy as np
import pytest

from services.common import TandemError
from services.sql import MemorySettings
from services.sql.memory._answers import open_memory
from services.sql.memory._store import MemoryStore, PairSource
from tests.integration.pg_waits import WaitCounter

pytestmark = pytest.mark.integration


async def _teach(store: MemoryStore, tenant: str) -> str:
    pair = await store.save_pair(
        tenant,
        database="demo",
        question="How many companies are there?",
        template="how many companies are there",
        sql="SELECT count(*) FROM companies",
        source=PairSource.TAUGHT,
        embedding=np.ones(384, dtype=np.float32) / np.sqrt(384),
        model_name="test-model",
    )
    return pair.pair_id


async def _uses(store: MemoryStore, tenant: str) -> list[int]:
    pairs, _ = await store.list_pairs(tenant, database="demo", page_size=10, page_token="")
    return [p.use_count for p in pairs]


async def test_an_answer_is_recorded_whole_in_its_tenants_view(pg_url, tmp_path):
    store = await open_memory(pg_url, tmp_path, MemorySettings())
    tenant, other = f"r-{uuid.uuid4().hex[:10]}", f"o-{uuid.uuid4().hex[:10]}"
    try:
        answer_id = await store.record_answer(
            tenant, database="demo", question="How many companies are there?",
            sql="SELECT count(*) FROM companies", intent=None,
        )  # fmt: skip
        recorded = await store.answer(tenant, answer_id)
        assert recorded is not None and recorded.sql == "SELECT count(*) FROM companies"
        assert await store.answer(other, answer_id) is None  # another tenant's view
        pair = await _teach(store, tenant)
        await store.record_answer(
            tenant, database="demo", question="How many companies are there?",
            sql="SELECT count(*) FROM companies", intent={"kind": "COUNT"}, used_pair=pair,
        )  # fmt: skip
        assert await _uses(store, tenant) == [1]
        # a record that fails (no database named) counts no use either: all or nothing
        with pytest.raises(TandemError):
            await store.record_answer(
                tenant, database=None, question="q", sql="", intent=None, used_pair=pair,  # type: ignore[arg-type]
            )  # fmt: skip
        assert await _uses(store, tenant) == [1]
        async with store.database.connection() as conn:
            # the statement was its own transaction: no tenant is left for the next user
            # of the connection, who sees no row of anyone's
            cur = await conn.execute(
                "SELECT coalesce(current_setting('tandem.tenant_id', true), ''), "
                "(SELECT count(*) FROM sql_answers)"
            )
            assert await cur.fetchone() == ("", 0)
    finally:
        await store.close()


async def test_recording_an_answer_is_one_statement_and_one_wait(pg_url, tmp_path):
    relay = WaitCounter(pg_url)
    store = await open_memory(await relay.start(), tmp_path, MemorySettings(), pool_max_size=1)
    try:
        async with store.database.connection() as conn:  # the connection is made and idle
            await conn.execute("SELECT 1")
        relay.waits = relay.statements = 0
        await store.record_answer(
            "acme", database="demo", question="How many companies are there?",
            sql="SELECT count(*) FROM companies", intent=None,
        )  # fmt: skip
        assert (relay.waits, relay.statements) == (1, 1)
    finally:
        await store.close()
        await relay.close()


async def _prepared(conn) -> list[str]:
    cur = await conn.execute(
        "SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s",
        ("%sql_record_answer%",),
    )
    return [row[0] for row in await cur.fetchall()]


async def test_the_record_is_parsed_once_per_connection_from_its_first_answer(pg_url, tmp_path):
    # Postgres parses the record statement once per connection, not once per answer
    # (psycopg's own cursor prepared it only from its fifth use on a connection).
    store = await open_memory(pg_url, tmp_path, MemorySettings(), pool_max_size=1)
    tenant = f"p-{uuid.uuid4().hex[:10]}"
    try:
        first = await store.record_answer(
            tenant, database="demo", question="How many companies are there?",
            sql="SELECT count(*) FROM companies", intent={"kind": "COUNT"},
        )  # fmt: skip
        async with store.database.connection() as conn:
            assert len(await _prepared(conn)) == 1
        recorded = await store.answer(tenant, first)
        assert recorded is not None and recorded.intent == {"kind": "COUNT"}
        assert recorded.question == "How many companies are there?"
    finally:
        await store.close()


async def test_a_connection_that_lost_the_statement_still_records_the_answer(pg_url, tmp_path):
    store = await open_memory(pg_url, tmp_path, MemorySettings(), pool_max_size=1)
    tenant = f"d-{uuid.uuid4().hex[:10]}"
    try:
        for _ in range(6):  # prepared by whichever way the record is sent
            await store.record_answer(
                tenant, database="demo", question="q", sql="SELECT 1", intent=None
            )
        async with store.database.connection() as conn:
            await conn.execute("DEALLOCATE ALL")  # someone else's reset of the session
        answer_id = await store.record_answer(
            tenant, database="demo", question="q", sql="SELECT 2", intent=None
        )
        recorded = await store.answer(tenant, answer_id)
        assert recorded is not None and recorded.sql == "SELECT 2"
    finally:
        await store.close()


async def test_answers_finishing_together_are_recorded_in_one_transaction(pg_url, tmp_path):
    # Records that arrive while one is queued or being written go out together: one
    # pipeline, one Sync (one implicit transaction, one commit and WAL flush for all);
    # each caller returns once its own record is stored, in its own tenant's view (each
    # record sets its tenant before its insert, inside the shared transaction).
    relay = WaitCounter(pg_url)
    store = await open_memory(await relay.start(), tmp_path, MemorySettings(), pool_max_size=2)
    tenants = [f"b-{uuid.uuid4().hex[:10]}", f"c-{uuid.uuid4().hex[:10]}"]
    try:
        async with store.database.connection() as conn:
            await conn.execute("SELECT 1")
        relay.waits = relay.statements = 0
        ids = await asyncio.gather(*(
            store.record_answer(tenants[i % 2], database="demo", question=f"q{i}",
                                sql=f"SELECT {i}", intent=None)
            for i in range(6)
        ))  # fmt: skip
        assert (relay.waits, relay.statements) == (1, 6)
        for i, answer_id in enumerate(ids):
            recorded = await store.answer(tenants[i % 2], answer_id)
            assert recorded is not None and recorded.sql == f"SELECT {i}"
            assert await store.answer(tenants[(i + 1) % 2], answer_id) is None
    finally:
        await store.close()
        await relay.close()


async def test_a_record_that_fails_in_a_batch_fails_alone(pg_url, tmp_path):
    # The batch is all or none, so a record the table refuses (no database named) would
    # take the others with it: the batch is sent again one by one, the bad one raises
    # to its own caller (who answers without an answer id), the others are stored.
    store = await open_memory(pg_url, tmp_path, MemorySettings(), pool_max_size=2)
    tenant = f"f-{uuid.uuid4().hex[:10]}"
    try:
        outcomes = await asyncio.gather(*(
            store.record_answer(tenant, database=None if i == 2 else "demo",  # type: ignore[arg-type]
                                question=f"q{i}", sql=f"SELECT {i}", intent=None)
            for i in range(4)
        ), return_exceptions=True)  # fmt: skip
        assert isinstance(outcomes[2], TandemError)
        for i in (0, 1, 3):
            answer_id = outcomes[i]
            assert isinstance(answer_id, str)
            recorded = await store.answer(tenant, answer_id)
            assert recorded is not None and recorded.sql == f"SELECT {i}"
    finally:
        await store.close()
