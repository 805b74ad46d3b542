"""Statements prepared on a connection under names of our own, sent in one pipeline.

Two hot paths send their statements on the libpq connection itself, in pipeline mode,
and keep the repeated ones prepared there: an answer's transaction (``_pipelined``) and
the answer memory's record of it (``services.sql.memory``). Both must agree on how:
which statements a connection holds (a statement is held only once Postgres said its
Parse succeeded), at most :data:`PREPARED_MAX` per connection (the least recently used
deallocated first, in the same pipeline), everything forgotten when a connection no
longer holds what we think (``InvalidSqlStatementName``: someone sent ``DEALLOCATE``) or
when a pipeline could not be read to its end. A connection left in pipeline mode (a call
cancelled midway, its results unread) is closed, so the pool never hands it out again.

Only names of our own are tracked (``tandem_*``); psycopg's (``_pg3_*``) are its business,
which is why warehouse connections let psycopg prepare nothing (``prepare_threshold`` is
None): psycopg sends ``DEALLOCATE ALL`` on a ROLLBACK it sees while holding its own,
which would drop ours.
"""

from __future__ import annotations

import enum
import itertools
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import generators, pq
from psycopg.abc import PQGen

# At most this many statements of ours prepared per connection.
PREPARED_MAX = 64
_NAMES = itertools.count()


class Step(enum.Enum):
    """What one result of a pipeline answers."""

    RUN = "run"  # a statement's own result
    PREPARE = "prepare"  # the Parse of a statement prepared before its run
    DROP = "drop"  # a DEALLOCATE, to stay within the cap


@dataclass(frozen=True)
class Sent:
    """One message sent in a pipeline: its step, the statement's text, its name."""

    step: Step
    statement: bytes = b""
    name: bytes = b""


class PreparedStatements:
    """The statements each connection holds prepared under our names, by text, most
    recently used last (weakly keyed: a closed connection's entry goes with it).

    Named ``tandem_<n>`` unless ``name`` is given: a registry for one statement may give
    it a fixed name (``tandem_record_answer``), which reads better in
    ``pg_prepared_statements``."""

    def __init__(self, *, name: bytes | None = None) -> None:
        self._name = name
        self._held: weakref.WeakKeyDictionary[Any, OrderedDict[bytes, bytes]] = (
            weakref.WeakKeyDictionary()
        )

    def send(
        self,
        conn: psycopg.AsyncConnection[Any],
        statement: bytes,
        params: Sequence[bytes | None] | None = None,
    ) -> list[Sent]:
        """Queue ``statement`` on ``conn``'s libpq connection as a prepared statement's
        run: prepared first (in the same pipeline) when the connection does not hold it,
        after deallocating the least recently used beyond the cap."""
        pgconn = conn.pgconn
        held = self._held.setdefault(conn, OrderedDict())
        sent: list[Sent] = []
        name = held.get(statement)
        if name is None:
            while len(held) >= PREPARED_MAX:
                _, old = held.popitem(last=False)
                pgconn.send_query_params(b"DEALLOCATE " + old, None)
                sent.append(Sent(Step.DROP))
            name = self._name or f"tandem_{next(_NAMES)}".encode()
            pgconn.send_prepare(name, statement)
            sent.append(Sent(Step.PREPARE, statement, name))
        else:
            held.move_to_end(statement)
        pgconn.send_query_prepared(name, params)
        sent.append(Sent(Step.RUN, statement, name))
        return sent

    def send_each(
        self,
        conn: psycopg.AsyncConnection[Any],
        statement: bytes,
        batch: Sequence[Sequence[bytes | None]],
    ) -> list[Sent]:
        """Queue one run of ``statement`` per parameter list of ``batch`` in the same
        pipeline, prepared at most once (by the first: the others run what its Parse,
        ahead of them in the pipeline, prepares)."""
        sent = self.send(conn, statement, batch[0])
        name = sent[-1].name
        for params in batch[1:]:
            conn.pgconn.send_query_prepared(name, params)
            sent.append(Sent(Step.RUN, statement, name))
        return sent

    def forget(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Hold nothing for ``conn``: the next use of each statement prepares it afresh."""
        self._held.pop(conn, None)

    def keep(self, conn: psycopg.AsyncConnection[Any], statement: bytes, name: bytes) -> None:
        """Hold ``statement`` as prepared on ``conn`` under ``name`` (its Parse succeeded)."""
        self._held.setdefault(conn, OrderedDict())[statement] = name


def send_unprepared(
    conn: psycopg.AsyncConnection[Any],
    statement: bytes,
    params: Sequence[bytes | None] | None = None,
) -> list[Sent]:
    """Queue ``statement`` as it is (Parse, Bind, Execute of the unnamed statement)."""
    conn.pgconn.send_query_params(statement, params)
    return [Sent(Step.RUN, statement)]


def _send_and_read(pgconn: pq.abc.PGconn) -> PQGen[list[pq.abc.PGresult]]:
    """Send what is queued, then read every result up to the pipeline's sync: one wait
    on the connection for the whole batch."""
    yield from generators.send(pgconn)
    results: list[pq.abc.PGresult] = []
    while not results or results[-1].status != pq.ExecStatus.PIPELINE_SYNC:
        results += yield from generators.fetch_many(pgconn)
    return results


async def exchange(
    conn: psycopg.AsyncConnection[Any],
    prepared: PreparedStatements,
    queue: Callable[[], Sequence[Sent]],
    *,
    what: str,
) -> list[pq.abc.PGresult]:
    """Queue (``queue``, under the connection's lock, in pipeline mode) and send one
    pipeline with one sync, read every result in one wait, and return the runs' results
    in order. Statements that prepared are held from then on; the first failed one's
    error is raised once everything is read (the connection left as psycopg's pipeline
    leaves it). ``what`` names the batch in the error raised when the results do not
    match what was sent ("the pipeline's")."""
    async with conn.lock:
        pgconn = conn.pgconn
        pgconn.enter_pipeline_mode()
        try:
            sent = list(queue())
            pgconn.pipeline_sync()
            results = await conn.wait(_send_and_read(pgconn))
            pgconn.exit_pipeline_mode()
        except BaseException:
            prepared.forget(conn)
            if pgconn.pipeline_status != pq.PipelineStatus.OFF:
                await conn.close()  # results still unread: no one can use it again
            raise
    if len(results) != len(sent) + 1:
        prepared.forget(conn)
        raise psycopg.InterfaceError(f"{what} results do not match its statements")
    failure: psycopg.Error | None = None
    runs: list[pq.abc.PGresult] = []
    for message, result in zip(sent, results, strict=False):
        if message.step is Step.PREPARE and result.status == pq.ExecStatus.COMMAND_OK:
            prepared.keep(conn, message.statement, message.name)  # later uses reuse it
        if message.step is Step.RUN:
            runs.append(result)
        if result.status == pq.ExecStatus.FATAL_ERROR and failure is None:
            failure = psycopg.errors.error_from_result(result, encoding=conn.info.encoding)
    if failure is not None:
        if isinstance(failure, psycopg.errors.InvalidSqlStatementName):
            prepared.forget(conn)  # not what this connection holds: start afresh
        raise failure
    return runs
