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
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

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


async def record(conn: psycopg.AsyncConnection[Any], params: Sequence[bytes | None]) -> None:
    """Run the record statement on ``conn`` (in autocommit: it is its own transaction);
    prepared afresh once when the connection no longer holds it (nothing was stored)."""
    try:
        await _run(conn, params)
    except psycopg.errors.InvalidSqlStatementName:
        await _run(conn, params)


async def _run(conn: psycopg.AsyncConnection[Any], params: Sequence[bytes | None]) -> None:
    await exchange(
        conn, _PREPARED, lambda: _PREPARED.send(conn, STATEMENT, params), what="the record's"
    )
