"""A new statement runs in two round trips: the transaction's start, its limits (and, for
a statement the gate regenerated, Postgres's acceptance of the caller's text) and the
description; the cursor's declaration with the first rows and, when one batch holds the
row cap, the end. A statement the runner described before takes one. Every round trip
is CPU on both sides under load (psycopg's server-side cursor took six, the acceptance
check five more, the separate rollback one)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import psycopg
import pytest

from services.common import deadline_scope
from services.sql import Limits, Safeguards
from services.sql.gate._execute import (
    OutputColumn,
    StatementError,
    StatementRunner,
    execute_unvetted,
)
from services.sql.gate._gate import Verdict
from tests.integration.pg_waits import WaitCounter

pytestmark = pytest.mark.integration


async def test_a_statement_waits_for_the_database_twice(pg_url, open_pool):
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
    assert waits == 2
    assert len(many.rows) == 450 and not many.truncated
    assert waits_for_many == 5  # batches of 200: three fetches, then the rollback


async def test_the_gated_path_checks_the_callers_text_in_the_first_round_trip(pg_url, open_pool):
    """What the gate regenerated runs only after Postgres accepts the caller's own text:
    that check rides with the transaction's start, and a refusal still stops it."""
    relay = WaitCounter(pg_url)
    pool = await open_pool(await relay.start())
    limits = Limits(max_rows=10, statement_timeout_s=5.0)
    names: dict[tuple[str, int], str] = {}
    regenerated = "SELECT g AS n FROM pg_catalog.generate_series(1, 3) AS g"
    try:
        for _ in range(2):
            await execute_unvetted(pool, regenerated, limits, Safeguards(), type_names=names,
                                   source="SELECT g AS n FROM generate_series(1, 3) g")  # fmt: skip
        relay.waits = 0
        result = await execute_unvetted(
            pool, regenerated, limits, Safeguards(), type_names=names,
            source="SELECT g AS n FROM generate_series(1, 3) g -- the caller's",
        )  # fmt: skip
        waits = relay.waits
        # text Postgres refuses (sqlglot would drop the trailing comma) never runs
        with pytest.raises(StatementError) as refused:
            await execute_unvetted(
                pool, regenerated, limits, Safeguards(), type_names=names,
                source="SELECT g AS n FROM generate_series(1, 3) g WHERE g = 1 ,",
            )  # fmt: skip
    finally:
        await relay.close()
    assert [r.values[0].int_value for r in result.rows] == [1, 2, 3]
    assert waits == 2
    assert refused.value.sqlstate == "42601"


async def test_a_text_postgres_accepted_is_not_sent_to_be_accepted_again(pg_url, open_pool):
    """The runner remembers what Postgres accepted and described (per pool): the same
    statement asked again skips the four statements of the check and the description,
    and waits once; a refused text is checked every time."""
    relay = WaitCounter(pg_url)
    pool = await open_pool(await relay.start())
    runner = StatementRunner()
    limits = Limits(max_rows=10, statement_timeout_s=5.0)
    regenerated = "SELECT g AS n FROM pg_catalog.generate_series(1, 3) AS g"

    def verdict(source: str) -> Verdict:
        return Verdict((), regenerated, (), "fp", source_sql=source)

    accepted = verdict("SELECT g AS n FROM generate_series(1, 3) g")
    refused = verdict("SELECT g AS n FROM generate_series(1, 3) g WHERE g = 1 ,")
    try:
        await runner.run(pool, verdict("SELECT 1 AS n"), limits, database="t")  # warm
        counts, waits = [], []
        for _ in range(2):
            relay.statements = relay.waits = 0
            result = await runner.run(pool, accepted, limits, database="t")
            assert [r.values[0].int_value for r in result.rows] == [1, 2, 3]
            assert [c.name for c in result.columns] == ["n"]
            counts.append(relay.statements)
            waits.append(relay.waits)
        for _ in range(2):
            with pytest.raises(StatementError) as err:
                await runner.run(pool, refused, limits, database="t")
            assert err.value.sqlstate == "42601"
    finally:
        await relay.close()
    # search path, PREPARE, DEALLOCATE, search path; the description
    assert counts[0] - counts[1] == 5
    assert waits == [2, 1]


async def test_a_remembered_statement_whose_columns_changed_is_described_again(pg_url, open_pool):
    """The description is remembered by the statement's text; the table under it may
    change: a column's new type is seen in the fetch (or in Postgres's refusal of the
    measured statement), and the statement is described and run again."""
    pool = await open_pool(pg_url)
    runner = StatementRunner()
    limits = Limits(max_rows=10, statement_timeout_s=5.0)
    text = "SELECT t.v AS v FROM public.tandem_round_trip_change AS t"
    verdict = Verdict((), text, (), "fp", source_sql=text)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP TABLE IF EXISTS public.tandem_round_trip_change")
        await admin.execute("CREATE TABLE public.tandem_round_trip_change (v integer)")
        await admin.execute("INSERT INTO public.tandem_round_trip_change VALUES (7)")
        try:
            first = await runner.run(pool, verdict, limits, database="t")
            await admin.execute(
                "ALTER TABLE public.tandem_round_trip_change ALTER COLUMN v TYPE text"
            )
            await admin.execute("UPDATE public.tandem_round_trip_change SET v = 'seven'")
            second = await runner.run(pool, verdict, limits, database="t")
        finally:
            await admin.execute("DROP TABLE IF EXISTS public.tandem_round_trip_change")
    assert first.columns[0].data_type == "integer" and first.rows[0].values[0].int_value == 7
    assert second.columns[0].data_type == "text"
    assert second.rows[0].values[0].string_value == "seven"


async def test_a_described_statements_transaction_is_one_wait_on_the_connection(
    pg_url, open_pool, monkeypatch
):
    """The transaction's start, its timeout, the cursor's declaration, its first rows and
    the end go out together and are read back in one wait: psycopg's pipeline waited on
    the socket once per statement (a poll, a send and a read each), the client's largest
    CPU cost per answer. The rows are those a plain cursor reads, in its order."""
    pool = await open_pool(pg_url)
    limits = Limits(max_rows=10, statement_timeout_s=5.0)
    names: dict[tuple[str, int], str] = {}
    text = "SELECT g, 'row ' || g AS label, g * 1.5 AS half FROM generate_series(1, 12) AS g"
    described: list[OutputColumn] = []
    for _ in range(2):  # the pool's connections are made and configured
        await execute_unvetted(
            pool, text, limits, Safeguards(), type_names=names, learned=described
        )
    waits = 0
    real_wait = psycopg.AsyncConnection.wait

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal waits
        waits += 1
        return await real_wait(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, "wait", counted)
    result = await execute_unvetted(
        pool, text, limits, Safeguards(), type_names=names, described=described
    )
    # the transaction, and psycopg closing the connection's block as it goes back to the
    # pool (a wait that finds nothing to do: the transaction already ended)
    assert waits == 2
    monkeypatch.undo()
    async with pool.connection() as conn:
        cursor = await conn.execute(text)
        expected = (await cursor.fetchall())[:10]
    assert [(r.values[0].int_value, r.values[1].string_value) for r in result.rows] == [
        (g, label) for g, label, _ in expected
    ]
    assert [Decimal(r.values[2].decimal_value) for r in result.rows] == [h for *_, h in expected]
    assert len(result.rows) == 10 and result.truncated


async def test_one_prepared_timeout_serves_every_deadline(pg_url, open_pool):
    """A budget cut to the caller's deadline is a new ``SET LOCAL statement_timeout`` text
    almost every time: it goes out unprepared, so however many deadlines the callers
    bring, a connection holds one prepared timeout (the limit's), and the statements it
    holds prepared are not pushed out by them."""
    pool = await open_pool(pg_url)
    limits = Limits(max_rows=10, statement_timeout_s=5.0)
    text = "SELECT g FROM generate_series(1, 3) AS g"
    names: dict[tuple[str, int], str] = {}
    outputs: list[OutputColumn] = []  # described once, as the runner remembers it
    await execute_unvetted(pool, text, limits, Safeguards(), type_names=names, learned=outputs)
    rows = []
    for seconds in (60.0, 60.0, 4.0, 3.5, 3.0, 2.5, 2.0):
        with deadline_scope(seconds):
            result = await execute_unvetted(
                pool, text, limits, Safeguards(), type_names=names, described=outputs
            )
        rows.append(len(result.rows))
    held: set[str] = set()
    async with pool.connection() as one, pool.connection() as other:
        for conn in (one, other):
            cursor = await conn.execute(
                "SELECT statement FROM pg_prepared_statements "
                "WHERE name LIKE 'tandem\\_%' AND statement LIKE 'SET LOCAL statement_timeout%'"
            )
            held |= {row[0] for row in await cursor.fetchall()}
    assert rows == [3] * 7
    assert held == {"SET LOCAL statement_timeout = 5000"}
