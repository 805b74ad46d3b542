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

import itertools
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import generators, pq
from psycopg.abc import PQGen
from psycopg.adapt import Transformer


@dataclass(frozen=True)
class Fetched:
    """The rows of the pipeline's result of interest and their columns' type oids."""

    rows: list[tuple[Any, ...]]
    type_oids: list[int]


def _send_and_read(pgconn: pq.abc.PGconn) -> PQGen[list[pq.abc.PGresult]]:
    """Send what is queued, then read every result up to the pipeline's sync: one wait
    on the connection for the whole transaction."""
    yield from generators.send(pgconn)
    results: list[pq.abc.PGresult] = []
    while not results or results[-1].status != pq.ExecStatus.PIPELINE_SYNC:
        results += yield from generators.fetch_many(pgconn)
    return results


# Statements a connection holds prepared, by text (most recently used last), per
# connection: psycopg's own (``_pg3_*``) are its business, these are ours.
_PREPARED: weakref.WeakKeyDictionary[Any, OrderedDict[bytes, bytes]] = weakref.WeakKeyDictionary()
PREPARED_MAX = 64
_NAMES = itertools.count()


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
    held = _PREPARED.setdefault(conn, OrderedDict())
    marks = preparable if preparable is not None else [False] * len(statements)
    # what each result in order answers: ("run", index), ("prepare", text), ("drop", None)
    expected: list[tuple[str, Any]] = []
    async with conn.lock:
        pgconn = conn.pgconn
        pgconn.enter_pipeline_mode()
        try:
            for index, (statement, mark) in enumerate(zip(statements, marks, strict=True)):
                if not mark:
                    pgconn.send_query_params(statement, None)
                    expected.append(("run", index))
                    continue
                name = held.get(statement)
                if name is None:
                    while len(held) >= PREPARED_MAX:
                        _, old = held.popitem(last=False)
                        pgconn.send_query_params(b"DEALLOCATE " + old, None)
                        expected.append(("drop", None))
                    name = f"tandem_{next(_NAMES)}".encode()
                    pgconn.send_prepare(name, statement)
                    expected.append(("prepare", (statement, name)))
                else:
                    held.move_to_end(statement)
                pgconn.send_query_prepared(name, None)
                expected.append(("run", index))
            pgconn.pipeline_sync()
            results = await conn.wait(_send_and_read(pgconn))
            pgconn.exit_pipeline_mode()
        except BaseException:
            _PREPARED.pop(conn, None)
            if pgconn.pipeline_status != pq.PipelineStatus.OFF:
                # results still unread: no one can use this connection again
                await conn.close()
            raise
    if len(results) != len(expected) + 1:
        _PREPARED.pop(conn, None)
        raise psycopg.InterfaceError("the pipeline's results do not match its statements")
    failure: psycopg.Error | None = None
    by_index: dict[int, pq.abc.PGresult] = {}
    for (kind, what), result in zip(expected, results, strict=False):
        if kind == "prepare" and result.status == pq.ExecStatus.COMMAND_OK:
            held[what[0]] = what[1]  # prepared: later answers reuse it
        if kind == "run":
            by_index[what] = result
        if result.status == pq.ExecStatus.FATAL_ERROR and failure is None:
            failure = psycopg.errors.error_from_result(result, encoding=conn.info.encoding)
    if failure is not None:
        if isinstance(failure, psycopg.errors.InvalidSqlStatementName):
            _PREPARED.pop(conn, None)  # not what this connection holds: start afresh
        raise failure
    wanted = by_index[rows_of]
    loader = Transformer(conn)
    loader.set_pgresult(wanted)
    return Fetched(
        rows=loader.load_rows(0, wanted.ntuples, tuple),
        type_oids=[wanted.ftype(i) for i in range(wanted.nfields)],
    )
