"""A statement's transaction sent as one pipeline, its results read in one pass.

An answer's execution is five statements on one connection (BEGIN READ ONLY, the
statement timeout, the cursor's DECLARE, its FETCH, ROLLBACK). Sent through psycopg's
pipeline, each ``execute`` polls, sends and reads on its own (a wait on the socket per
statement, the backend woken per message): measured side by side on the demo warehouse at
16 connections, about 105 us of the client's CPU and 85 us of the backend's per answer.
Queued on the libpq connection with one sync and read in one wait, the same statements
cost about 32 and 60 us.

What goes over the wire is what the pipeline sent: each statement its own Parse, Bind and
Execute in the extended protocol (so a text can never stack a second statement), no
parameters, text results, in order, then one Sync. Rows are loaded by the connection's
own loaders (what a cursor's ``fetchall`` gives), and a failed statement raises the error
psycopg raises for it, after the pipeline has been read to its end: the connection is
left as psycopg's pipeline leaves it (the failed transaction for the caller to roll back).
A connection this could not leave out of pipeline mode (a cancelled call midway) is
closed, so the pool never hands it out again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.adapt import Transformer

from services.sql.gate._prepared import PreparedStatements, Sent, exchange, send_unprepared


@dataclass(frozen=True)
class Fetched:
    """The rows of the pipeline's result of interest and their columns' type oids."""

    rows: list[tuple[Any, ...]]
    type_oids: list[int]


# The answers' statements prepared per connection (``_prepared``: names, the cap).
_PREPARED = PreparedStatements()


async def pipelined(
    conn: psycopg.AsyncConnection[Any],
    statements: Sequence[bytes],
    rows_of: int,
    *,
    preparable: Sequence[bool] | None = None,
) -> Fetched:
    """Send ``statements`` in one pipeline and read every result; the rows of statement
    ``rows_of`` (an index into ``statements``). The first failed statement's error is
    raised once the pipeline has been read.

    A statement marked ``preparable`` (repeated text: the transaction's start, the
    cursor's declaration of a statement asked again) runs as a statement prepared on the
    connection, as psycopg's pipeline ran it after a few uses: Postgres parses and
    analyses the measuring wrapper once per connection, not per answer (about 100 us of
    the backend's CPU for a grouped statement's)."""
    marks = preparable if preparable is not None else [False] * len(statements)

    def queue() -> list[Sent]:
        sent: list[Sent] = []
        for statement, mark in zip(statements, marks, strict=True):
            if mark:
                sent += _PREPARED.send(conn, statement)
            else:
                sent += send_unprepared(conn, statement)
        return sent

    results = await exchange(conn, _PREPARED, queue, what="the pipeline's")
    wanted = results[rows_of]
    loader = Transformer(conn)
    loader.set_pgresult(wanted)
    return Fetched(
        rows=loader.load_rows(0, wanted.ntuples, tuple),
        type_oids=[wanted.ftype(i) for i in range(wanted.nfields)],
    )
