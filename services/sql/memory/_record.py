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
connection, as psycopg's auto-prepare did after five uses. A connection that no longer
holds it (a ``DEALLOCATE`` by someone else) has it prepared again and the record sent
once more (the failed one stored nothing). A failed statement raises the error
psycopg raises for it; a call cancelled midway closes the connection (its result unread,
no one may use it again), as the pool would.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import generators, pq
from psycopg.abc import PQGen

STATEMENT = b"SELECT sql_record_answer($1, $2, $3, $4, $5, $6::jsonb, $7, $8)"
_NAME = b"tandem_record_answer"

# Connections that hold the statement prepared under ``_NAME``.
_PREPARED: weakref.WeakSet[Any] = weakref.WeakSet()


def _send_and_read(pgconn: pq.abc.PGconn) -> PQGen[list[pq.abc.PGresult]]:
    """Send what is queued, then read every result up to the pipeline's sync."""
    yield from generators.send(pgconn)
    results: list[pq.abc.PGresult] = []
    while not results or results[-1].status != pq.ExecStatus.PIPELINE_SYNC:
        results += yield from generators.fetch_many(pgconn)
    return results


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


async def record(conn: psycopg.AsyncConnection[Any], params: Sequence[bytes | None]) -> None:
    """Run the record statement on ``conn`` (in autocommit: it is its own transaction);
    prepared afresh once when the connection no longer holds it (nothing was stored)."""
    try:
        await _run(conn, params)
    except psycopg.errors.InvalidSqlStatementName:
        await _run(conn, params)


async def _run(conn: psycopg.AsyncConnection[Any], params: Sequence[bytes | None]) -> None:
    async with conn.lock:
        pgconn = conn.pgconn
        prepare = conn not in _PREPARED
        pgconn.enter_pipeline_mode()
        try:
            if prepare:
                pgconn.send_prepare(_NAME, STATEMENT)
            pgconn.send_query_prepared(_NAME, params)
            pgconn.pipeline_sync()
            results = await conn.wait(_send_and_read(pgconn))
            pgconn.exit_pipeline_mode()
        except BaseException:
            _PREPARED.discard(conn)
            if pgconn.pipeline_status != pq.PipelineStatus.OFF:
                await conn.close()  # results still unread: no one can use it again
            raise
    if len(results) != (3 if prepare else 2):
        _PREPARED.discard(conn)
        raise psycopg.InterfaceError("the record's results do not match its statements")
    if prepare and results[0].status == pq.ExecStatus.COMMAND_OK:
        _PREPARED.add(conn)
    for result in results:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            failure = psycopg.errors.error_from_result(result, encoding=conn.info.encoding)
            if isinstance(failure, psycopg.errors.InvalidSqlStatementName):
                _PREPARED.discard(conn)
            raise failure
