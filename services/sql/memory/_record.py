"""The answer record's one statement, sent on the libpq connection itself.

Every answer the SQL service gives is recorded (``0003_record_answer.sql``), so this
statement runs once per question. Through ``AsyncConnection.execute`` it took about 100 us
of the service's CPU per answer (a cursor, the query converted and its parameters dumped
through the adapters, psycopg's prepare bookkeeping, then the wait), about a tenth of
the service's main thread under AskSql load. Sent here, it is the same single statement
with the same parameters as text, in the same single wait: measured side by side on the
embedded Postgres, about a third less of the client's CPU per record.

The statement is prepared once per connection, in the same batch as its first use
(Parse, then Bind and Execute, one Sync: still one wait), so Postgres parses it once per
connection, as psycopg's auto-prepare did after five uses (the bookkeeping of what a
connection holds prepared is the gate's, shared with the answers' own statements). A
connection that no longer holds it (a ``DEALLOCATE`` by someone else) has it prepared
again and the record sent once more (the failed one stored nothing). A failed statement
raises the error psycopg raises for it; a call cancelled midway closes the connection
(its result unread, no one may use it again), as the pool would.

Records that arrive while one is being written go out together (``RecordQueue``): one
pipeline of the same statement per answer and one Sync, so one implicit transaction and
one commit. The commit's WAL flush was most of what a record cost Postgres (about 250 us
of the backend's CPU per answer of 370, measured on the embedded Postgres, one answer at a
time): under load, answers finishing together share it. Nothing is written after its
reply: every caller waits for the commit that holds its answer, as before; with nothing
in flight, a record goes out at once, alone.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg

from services.common import ResourceExhausted, Unavailable
from services.sql.gate import PreparedStatements, exchange

STATEMENT = b"SELECT sql_record_answer($1, $2, $3, $4, $5, $6::jsonb, $7, $8)"

# Connections that hold the statement prepared (as ``tandem_record_answer``).
_PREPARED = PreparedStatements(name=b"tandem_record_answer")


def _text(value: str | None) -> bytes | None:
    return None if value is None else value.encode()


def parameters(
    tenant_id: str,
    *,
    answer_id: str,
    database: str | None,
    question: str,
    sql: str,
    intent: dict[str, Any] | None,
    principal_id: str | None,
    used_pair: str | None,
) -> list[bytes | None]:
    """The statement's parameters as text, NULL where absent (an empty intent: none).
    A missing database is a NULL too, which the table refuses, as before."""
    return [
        _text(tenant_id),
        _text(answer_id),
        _text(database),
        _text(question),
        _text(sql),
        json.dumps(intent).encode() if intent else None,
        _text(principal_id),
        _text(used_pair),
    ]


Params = Sequence[bytes | None]

# Records written in one transaction at most: a batch's statements and results are held
# at once, and one failed record sends the batch's others again one by one.
BATCH_MAX = 64


async def record(conn: psycopg.AsyncConnection[Any], *batch: Params) -> None:
    """Run the record statement once per ``batch`` entry on ``conn`` (in autocommit: one
    pipeline, one Sync, so the batch is one implicit transaction: all stored or none);
    prepared afresh once when the connection no longer holds it (nothing was stored)."""
    try:
        await _run(conn, batch)
    except psycopg.errors.InvalidSqlStatementName:
        await _run(conn, batch)


async def _run(conn: psycopg.AsyncConnection[Any], batch: Sequence[Params]) -> None:
    await exchange(
        conn, _PREPARED, lambda: _PREPARED.send_each(conn, STATEMENT, batch), what="the record's"
    )


class RecordQueue:
    """Answers' records written together while a write is in flight.

    ``write`` stores a batch in one transaction (all or none). A record with no write in
    flight is written at once; those that arrive meanwhile wait for it and go out as the
    next batch, so under load one commit serves many answers. Each caller returns when
    the transaction holding its record committed, or raises what that write raised:
    a batch refused for something other than an unreachable store is written again one
    record at a time, so one bad record fails alone and the others are still stored.

    The writer is a task of its own, in a context of its own: a caller that stops
    waiting (cancelled) does not stop the write, which belongs to every record in its
    batch, and no caller's deadline bounds another's records.
    """

    def __init__(
        self, write: Callable[[Sequence[Params]], Awaitable[None]], *, batch_max: int = BATCH_MAX
    ) -> None:
        self._write = write
        self._batch_max = batch_max
        self._waiting: list[tuple[Params, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def record(self, params: Params) -> None:
        """Store ``params``' record; returns once it is committed."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._waiting.append((params, done))
        if self._writer is None:
            self._writer = loop.create_task(self._drain(), context=contextvars.Context())
        await done

    async def drained(self) -> None:
        """Return once every record queued so far is written (or failed): a store that
        closes its pool waits for this first, so no answer already given loses its
        record to the shutdown."""
        while self._writer is not None:
            await asyncio.wait({self._writer})

    async def _drain(self) -> None:
        batch: list[tuple[Params, asyncio.Future[None]]] = []
        try:
            while self._waiting:
                batch = self._waiting[: self._batch_max]
                del self._waiting[: self._batch_max]
                await self._store(batch)
        finally:
            self._writer = None
            for _, done in batch:  # the writer itself cancelled (the loop closing)
                done.cancel()

    async def _store(self, batch: list[tuple[Params, asyncio.Future[None]]]) -> None:
        try:
            await self._write([params for params, _ in batch])
        except (Unavailable, ResourceExhausted) as exc:
            for _, done in batch:  # nothing stored, and each alone would fare the same
                _settle(done, exc)
            return
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0][1], exc)
                return
            for one in batch:  # which record failed: each alone
                await self._store([one])
            return
        for _, done in batch:
            _settle(done, None)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
