"""Execution of gated statements: the database-side layers of the read-only gate.

Every statement runs on the target's read-only pool (a role holding only SELECT grants),
inside ``BEGIN READ ONLY`` with ``SET LOCAL statement_timeout``, through a server-side
cursor (``DECLARE ... CURSOR FOR``: one statement over the extended protocol, and
Postgres accepts only a SELECT or VALUES there), under a client-side timeout that
cancels the query even if the server-side one was tampered with. Rows are fetched up
to the row cap (+1 to detect truncation) and the result-size cap; the transaction is
always rolled back, since a read has nothing to commit.

What runs is the gate's regenerated text, but only once Postgres has accepted the
caller's own text: it is ``PREPARE``d (parsed and analysed, nothing executed) in the
same read-only transaction first, so text sqlglot would silently repair (a dangling
comma, two adjacent literals read as a concatenation) fails as Postgres would fail it.

The result-size cap is also applied by Postgres, before a value is sent: one stored or
aggregated value of 50 MB (the gate refuses only values built that large from constants,
``_sizes``), or two hundred values of a megabyte in one fetch, would
otherwise land whole in this process before the cap here could see them. The
statement's output columns are described first (``SELECT * FROM (...) LIMIT 0``: planned,
no row read), then it runs wrapped (:func:`measured_statement`): Postgres measures each
value in the text it would send, keeps a running total over the rows, and from the first
row past a budget sends NULLs and a mark instead of values. The budget is a few times the
cap, since text and encoded sizes differ; the exact cap is still applied here, on the
encoded values, so results truncate where they did before. Outputs that are all small
fixed-size values have nothing to measure and skip those levels (``_measured``).

All of it takes two round trips, pipelined: the transaction's start, its limits,
Postgres's acceptance of the caller's own text (``acceptance_check``) and the
description; the cursor's declaration, its first rows and, where one batch holds the row
cap, the rollback (which also closes the cursor). A text this runner saw accepted and
described before takes one: its remembered output columns are checked against the
fetch's, and a statement whose tables changed since is described and run again. A result
larger than one batch takes one more round trip per batch and one for the rollback.
The memory limits are the connections' own session settings (``memory_options``): a
statement under those sends no ``SET LOCAL`` for them.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg
import psycopg_pool
from opentelemetry import metrics, trace
from psycopg import sql

from services.common import (
    DeadlineExceeded,
    InvalidArgument,
    LimitExceeded,
    PermissionDenied,
    TandemError,
    Unavailable,
    current_principal,
    deadline_passed,
    pooled_connection,
    remaining,
)
from services.sql.access import view_key
from services.sql.gate._gate import Verdict
from services.sql.gate._pipelined import pipelined
from services.sql.gate._scope import memo_scope
from services.sql.results import column_kind, encode, encoded_size, fingerprint
from tandem.v1 import sql_service_pb2 as pb

_log = logging.getLogger("tandem.sql.execute")
_CURSOR_NAME = "tandem_statement"
# The cursor's statements as text (the name is a constant identifier, quoted once here).
_DECLARE = (
    sql.SQL("DECLARE {} NO SCROLL CURSOR FOR\n").format(sql.Identifier(_CURSOR_NAME)).as_string()
)
_FETCH = "FETCH FORWARD "
_FROM_CURSOR = " FROM " + sql.Identifier(_CURSOR_NAME).as_string()
_Statement = str | sql.SQL | sql.Composed
# A star in a select list (``SELECT *``, ``t0.*``), not ``COUNT(*)`` or a product.
_STAR = re.compile(r"(?:\bSELECT\s+(?:DISTINCT\s+)?|,\s*|\.)\*\s*(?:,|\bFROM\b|$)", re.I)
_FETCH_BATCH = 200
_MESSAGE_CHARS = 200
# Server-side budget = this many times the result-size cap, in bytes of the text form.
# No value's text is more than about 2.5 times its encoded size (hex bytea, a timestamp
# with offset, a float with exponent), so the server never marks a row the exact cap
# below would have kept; and a fetch brings at most this many caps of values.
SERVER_BUDGET_FACTOR = 4
# Types whose size in text is octet_length of the value: read from the varlena header,
# without decompressing or rendering it.
_TEXT_OIDS = frozenset({25, 1042, 1043})  # text, bpchar, varchar
_BYTEA_OID = 17
# Fixed-size types whose text is never longer than this (an interval, the longest, takes
# under 70 bytes): not measured per value, they bound the rows fetched at once instead.
_SMALL_TEXT_BYTES = 80
_SMALL_OIDS = frozenset(
    {
        16, 20, 21, 23, 26, 700, 701, 790,  # bool, int8, int2, int4, oid, float4/8, money
        1082, 1083, 1114, 1184, 1186, 1266, 2950,  # date, time(tz), timestamp(tz), interval, uuid
    }
)  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """Hard limits for one statement."""

    max_rows: int = 50
    statement_timeout_s: float = 5.0
    max_result_bytes: int = 1_048_576
    client_grace_s: float = 1.0
    # Memory each sort or hash of the statement may hold before it spills to temp files
    # (``work_mem``, in kB), with hashes held to the same (``hash_mem_multiplier`` 1):
    # set for the statement's transaction only. The temp files themselves are bounded by
    # the reader role's ``temp_file_limit`` (a superuser setting; see README).
    work_mem_kb: int = 8192


@dataclass(frozen=True)
class Safeguards:
    """The execution layers. The service always runs with every one on; tests turn them
    off one at a time to prove that each remaining layer alone stops a write."""

    read_only_transaction: bool = True
    server_timeout: bool = True
    client_timeout: bool = True


class FailureKind(enum.Enum):
    """How the database (or the clock) refused a statement."""

    DATA = "data"  # SQLSTATE classes 22 and 42 (and other statement faults)
    PERMISSION = "permission"  # 42501 insufficient privilege, 25006 read-only transaction
    TIMEOUT = "timeout"  # the statement timeout (server- or client-side) cancelled it
    DEADLINE = "deadline"  # the call's own deadline passed
    RESOURCE = "resource"  # classes 53 and 54: memory, temp files, a value past 1 GB
    UNAVAILABLE = "unavailable"  # the database could not be reached
    OTHER = "other"


class StatementError(Exception):
    """A gated statement failed in execution; carries what repair and mapping need."""

    def __init__(self, kind: FailureKind, sqlstate: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.sqlstate = sqlstate
        self.message = message

    def to_tandem(self, field: str = "sql") -> TandemError:
        """The documented gRPC error for this failure (messages never quote the SQL)."""
        meta = {"sqlstate": self.sqlstate} if self.sqlstate else {}
        if self.kind is FailureKind.DATA:
            return InvalidArgument.field(
                field,
                f"the database rejected the statement (SQLSTATE {self.sqlstate})",
                reason="SQL_DATABASE_ERROR",
                metadata=meta,
            )
        if self.kind is FailureKind.PERMISSION:
            return PermissionDenied(
                f"a database-side defence refused the statement (SQLSTATE {self.sqlstate})",
                reason="SQL_DATABASE_ERROR",
                metadata=meta,
            )
        if self.kind is FailureKind.TIMEOUT:
            return DeadlineExceeded("the statement timed out", reason="STATEMENT_TIMEOUT")
        if self.kind is FailureKind.DEADLINE:
            return DeadlineExceeded("deadline exceeded before the statement finished")
        if self.kind is FailureKind.UNAVAILABLE:
            return Unavailable("the target database is unavailable", reason="DATABASE_UNAVAILABLE")
        if self.kind is FailureKind.RESOURCE:
            return LimitExceeded(
                f"the statement needed more than the database allows it "
                f"({RESOURCE_LIMITS.get(self.sqlstate, 'a resource limit')}; "
                f"SQLSTATE {self.sqlstate})",
                reason=RESOURCE_LIMIT_REASON,
                metadata=meta,
            )
        return TandemError(f"database error (SQLSTATE {self.sqlstate or 'none'})")


@dataclass(frozen=True)
class ResultSet:
    """Rows of one executed statement, already in their wire form."""

    columns: tuple[pb.SqlColumn, ...]
    rows: tuple[pb.SqlRow, ...]
    truncated: bool
    truncation_reason: pb.TruncationReason.ValueType
    fingerprint: str
    duration_s: float


_DATA_CLASSES = ("22", "42", "0A", "21", "2F", "38", "39", "P0", "44")
# What a statement ran out of, by SQLSTATE (classes 53 and 54): said in the error, which
# the ask path turns into an answer's refusal with reason SQL_RESOURCE_LIMIT.
RESOURCE_LIMIT_REASON = "SQL_RESOURCE_LIMIT"
RESOURCE_LIMITS = {
    "53000": "insufficient resources",
    "53100": "disk space for temporary files",
    "53200": "memory",
    "53400": "the temporary-file limit (temp_file_limit)",
    "54000": "a value or array larger than Postgres builds",
    "54001": "a statement too complex to plan",
    "54011": "too many columns",
    "54023": "too many arguments",
}


def classify(exc: BaseException, *, deadline_bound: bool = False) -> StatementError:
    """Map a psycopg error to a failure kind; the message is the short primary text."""
    if isinstance(exc, psycopg_pool.PoolTimeout):
        if deadline_bound and deadline_passed():
            # The caller's deadline cut the wait for a connection, not the database.
            return StatementError(FailureKind.DEADLINE, "", "deadline exceeded")
        return StatementError(FailureKind.UNAVAILABLE, "", "no database connection available")
    sqlstate = getattr(exc, "sqlstate", None) or ""
    diag = getattr(exc, "diag", None)
    primary = (getattr(diag, "message_primary", None) or "").splitlines()
    message = (primary[0] if primary else type(exc).__name__)[:_MESSAGE_CHARS]
    if sqlstate == "57014":
        kind = FailureKind.DEADLINE if deadline_bound else FailureKind.TIMEOUT
        return StatementError(kind, sqlstate, "statement timed out")
    if sqlstate in ("42501", "25006"):
        return StatementError(FailureKind.PERMISSION, sqlstate, message)
    if sqlstate[:2] == "54" or (sqlstate[:2] == "53" and sqlstate != "53300"):
        # 53300 (too many connections) is the server's state, not the statement's.
        return StatementError(FailureKind.RESOURCE, sqlstate, message)
    if sqlstate[:2] in _DATA_CLASSES:
        return StatementError(FailureKind.DATA, sqlstate, message)
    if sqlstate[:2] in ("08", "53", "57", "58") or (
        not sqlstate and isinstance(exc, psycopg.OperationalError)
    ):
        return StatementError(FailureKind.UNAVAILABLE, sqlstate, "database unavailable")
    return StatementError(FailureKind.OTHER, sqlstate, message)


class GatedHost(Protocol):
    """A target that is not a Postgres pool (a SQLite or DuckDB file warehouse): it
    runs a verdict's text itself, in its own dialect, behind its own gate and limits
    (``services.sql.targets``)."""

    name: str

    async def run_gated(self, text: str, limits: Limits, tables: Sequence[str]) -> ResultSet: ...


# At most this many accepted texts remembered, each at most this long (about 2 MB in all).
_ACCEPTED_MAX = 256
_ACCEPTED_TEXT_MAX = 4000


class StatementRunner:
    """Runs gated statements on a target's read-only pool under the hard limits."""

    def __init__(
        self,
        *,
        tracer: trace.Tracer | None = None,
        meter: metrics.Meter | None = None,
    ) -> None:
        self._tracer = tracer or trace.NoOpTracer()
        meter = meter or metrics.NoOpMeter("tandem.sql")
        self._duration = meter.create_histogram(
            "tandem.sql.execute.duration", unit="s", description="statement execution time"
        )
        self._outcomes = meter.create_counter(
            "tandem.sql.execute.outcomes", description="executed statements by outcome"
        )
        self._type_names: dict[tuple[str, int], str] = {}
        # Caller's texts Postgres accepted (see acceptance_check), with the statement the
        # gate regenerated from each, per pool (a database server): a statement asked
        # again (a dashboard's question, the offline generator's answer to a repeated
        # question) is not sent to be accepted again. A text Postgres refused is never
        # remembered. Bounded; per tenant of the request (``_scope``).
        # The value is the statement's output columns as Postgres described them: the
        # same text asked again is not described again (its types are checked against
        # the fetch's, and a statement whose tables changed is described afresh).
        self._accepted: dict[
            tuple[str, str, str, str, tuple[str, ...], str], tuple[OutputColumn, ...] | None
        ] = {}

    async def run(
        self,
        pool: psycopg_pool.AsyncConnectionPool[Any] | GatedHost,
        verdict: Verdict,
        limits: Limits,
        *,
        database: str,
    ) -> ResultSet:
        """Execute a statement the gate accepted (its normalised text, nothing else)."""
        if not verdict.valid or not verdict.normalized_sql:
            raise ValueError("only statements the gate accepted may be executed")
        if verdict.view != view_key(current_principal.get()):
            # The last door: a verdict checked for the full view, or for someone else,
            # never runs for this principal (its filters were written for that view).
            raise PermissionDenied(
                "the statement was not checked for this principal",
                reason="SQL_ACCESS_DENIED",
            )
        text = verdict.executed_sql or verdict.normalized_sql
        # The database's message can quote a literal: the span gets the kind and SQLSTATE.
        with self._tracer.start_as_current_span(
            "sql.execute", record_exception=False, set_status_on_exception=False
        ) as span:
            span.set_attribute("db.name", database)
            span.set_attribute("sql.fingerprint", verdict.fingerprint)
            span.set_attribute("sql.tables", list(verdict.tables_used))
            accepted = (
                memo_scope(),
                pool.name,
                verdict.source_sql,
                text,
                verdict.source_schemas,
                verdict.role,
            )
            known = accepted in self._accepted
            described = self._accepted.get(accepted)
            # a star's columns are the tables' of the moment, names included: described
            # every time (a remembered description is checked by types only)
            learned: list[OutputColumn] | None = None if _STAR.search(text) else []
            try:
                if not isinstance(pool, psycopg_pool.AsyncConnectionPool):
                    # A file warehouse (SQLite, DuckDB): it writes the statement in its
                    # dialect, gates that again and runs it with its own limits.
                    if verdict.role:
                        raise PermissionDenied(
                            "role mode needs a Postgres database",
                            reason="SQL_ACCESS_DENIED",
                        )
                    known = True
                    result = await pool.run_gated(text, limits, verdict.tables_used)
                else:
                    result = await execute_unvetted(
                        pool,
                        text,
                        limits,
                        Safeguards(),
                        type_names=self._type_names,
                        database=database,
                        source="" if known else verdict.source_sql,
                        source_schemas=verdict.source_schemas,
                        role=verdict.role,
                        described=described,
                        learned=learned,
                    )
            except StatementError as exc:
                span.set_attribute("sql.outcome", exc.kind.value)
                span.set_attribute("db.sqlstate", exc.sqlstate)
                span.set_status(trace.Status(trace.StatusCode.ERROR, exc.kind.value))
                self._outcomes.add(1, {"database": database, "outcome": exc.kind.value})
                raise
            if (not known or learned) and len(verdict.source_sql) <= _ACCEPTED_TEXT_MAX:
                if len(self._accepted) >= _ACCEPTED_MAX:
                    self._accepted.clear()
                self._accepted[accepted] = tuple(learned) if learned else None
            span.set_attribute("sql.outcome", "ok")
            span.set_attribute("sql.row_count", len(result.rows))
            span.set_attribute("sql.truncated", result.truncated)
            self._outcomes.add(1, {"database": database, "outcome": "ok"})
            self._duration.record(result.duration_s, {"database": database})
            return result


async def execute_unvetted(
    pool: psycopg_pool.AsyncConnectionPool[Any],
    text: str,
    limits: Limits,
    safeguards: Safeguards,
    *,
    type_names: dict[tuple[str, int], str] | None = None,
    database: str = "",
    source: str = "",
    source_schemas: Sequence[str] = (),
    role: str = "",
    described: Sequence[OutputColumn] | None = None,
    learned: list[OutputColumn] | None = None,
) -> ResultSet:
    """The database-side layers alone, on text that may not have been gated.

    The service reaches this only through :meth:`StatementRunner.run`; tests call it
    directly to prove that the transaction, the role and the timeouts each stop what
    the gate would have stopped. ``source``, when given, is the text ``text`` was
    regenerated from: Postgres must accept it first (:func:`acceptance_check`, in the
    first round trip). ``described``: the output columns an earlier description of
    ``text`` gave (it is not described again unless its columns changed); a description
    made here is put in ``learned``.
    """
    timeout, deadline_bound = statement_budget(limits)
    started = time.perf_counter()
    try:
        # Never a connection the server closed (a failover, a restart): see checkout.
        async with pooled_connection(pool, max(min(timeout, 5.0), 0.1)) as conn:
            run = functools.partial(
                _on_connection,
                conn,
                text,
                limits=limits,
                safeguards=safeguards,
                budget_s=timeout,
                deadline_bound=deadline_bound,
                type_names=type_names if type_names is not None else {},
                database=database,
                started=started,
                source=source,
                source_schemas=source_schemas,
                role=role,
                learned=learned,
            )
            if described is None:
                return await run()
            try:
                return await run(described=described)
            except _Redescribe:
                pass
            except StatementError as exc:
                if not exc.sqlstate.startswith("42"):
                    raise
                # an undefined column or function, a type mismatch: the remembered
                # outputs may be what is out of date; the description says
            return await run()
    except StatementError:
        raise
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        raise classify(exc, deadline_bound=deadline_bound) from exc


def statement_budget(limits: Limits) -> tuple[float, bool]:
    """The seconds a statement may run (its limit, cut to the caller's deadline) and
    whether the deadline is what bounds it (a timeout is then DEADLINE_EXCEEDED, not the
    statement's own); DEADLINE when the deadline has already passed. Every engine's
    execution starts here."""
    timeout = limits.statement_timeout_s
    left = remaining()
    deadline_bound = left is not None and left < timeout
    if left is not None:
        if left <= 0:
            raise StatementError(FailureKind.DEADLINE, "", "deadline exceeded")
        timeout = min(timeout, left)
    return timeout, deadline_bound


async def _on_connection(
    conn: psycopg.AsyncConnection[Any],
    text: str,
    *,
    limits: Limits,
    safeguards: Safeguards,
    budget_s: float,
    deadline_bound: bool,
    type_names: dict[tuple[str, int], str],
    database: str,
    started: float,
    source: str = "",
    source_schemas: Sequence[str] = (),
    role: str = "",
    described: Sequence[OutputColumn] | None = None,
    learned: list[OutputColumn] | None = None,
) -> ResultSet:
    # Plain text where nothing is quoted (keywords and integers): composing it afresh
    # per statement was a measurable part of the client's CPU.
    setup: list[_Statement] = [
        "BEGIN READ ONLY" if safeguards.read_only_transaction else "BEGIN READ WRITE"
    ]
    if role:
        # Role mode (``services.sql.access``): the statement runs as the principal's
        # database role for this transaction only, so the warehouse's own row-level
        # security and grants apply; the login role must be a member of it.
        setup.append(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
    if safeguards.server_timeout:
        millis = max(int(budget_s * 1000), 1)
        timeout = f"SET LOCAL statement_timeout = {millis}"
        # The limit's own text repeats from answer to answer and stays prepared; a budget
        # cut to the caller's deadline is a new text almost every time, so it goes out
        # unprepared (a SET has no parameters, and the reader role may not call
        # set_config): prepared, each would cost a Parse and, past the cap, a DEALLOCATE,
        # and push a repeated statement's cursor out of the connection's prepared ones.
        setup.append(sql.SQL(timeout) if deadline_bound else timeout)
    if limits.work_mem_kb > 0 and limits.work_mem_kb != session_work_mem_kb(conn.pgconn.options):
        # Not already the connection's own (``memory_options``, set when it was opened):
        # set for this transaction.
        setup.append(f"SET LOCAL work_mem = '{int(limits.work_mem_kb)}kB'")
        setup.append("SET LOCAL hash_mem_multiplier = 1")
    try:
        client_limit = budget_s + limits.client_grace_s if safeguards.client_timeout else None
        try:
            async with asyncio.timeout(client_limit):
                if source:
                    # Postgres must accept the caller's text before the regenerated one
                    # is described: in the same round trip, and it stops the pipeline.
                    setup += acceptance_check(source, source_schemas)
                if described is None:
                    outputs = await _describe(conn, text, setup)
                    setup = []
                    if learned is not None:
                        learned[:] = outputs
                else:
                    outputs = list(described)
                result = await _fetch(
                    conn,
                    text,
                    outputs,
                    limits,
                    type_names=type_names,
                    database=database,
                    started=started,
                    setup=setup,
                    check_types=described is not None,
                )
                if result is None:  # described before, described otherwise now
                    raise _Redescribe()
                return result
        except TimeoutError:
            kind = FailureKind.DEADLINE if deadline_bound else FailureKind.TIMEOUT
            raise StatementError(kind, "57014", "statement timed out (client-side)") from None
        except psycopg.Error as exc:
            raise classify(exc, deadline_bound=deadline_bound) from exc
    finally:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            await _rollback(conn)  # not ended with the last fetch: an error, more batches


def memory_options(work_mem_kb: int) -> str:
    """Startup options (libpq ``options``) that make ``work_mem_kb`` and a hash multiplier
    of 1 an execution connection's session settings, so that a statement whose limits are
    those sends no ``SET LOCAL`` for them: two statements of seven fewer per answer, each
    a send, a wake-up of the backend and a result to read. Empty for 0 (the server's own).

    Options from the startup packet outrank the database's and the role's defaults
    (``ALTER ROLE ... SET``), the reader role may not call ``set_config``, a ``SET`` by
    a statement is refused by the gate and undone by the rollback, and ``SET ROLE`` does
    not apply a role's defaults: the session value stays what was asked for."""
    if work_mem_kb <= 0:
        return ""
    return f"-c work_mem={int(work_mem_kb)}kB -c hash_mem_multiplier=1"


_MEMORY_OPTIONS = re.compile(r"(?:^|\s)-c work_mem=(\d+)kB -c hash_mem_multiplier=1(?:\s|$)")


@functools.lru_cache(maxsize=64)
def session_work_mem_kb(options: bytes | None) -> int:
    """The ``work_mem`` (kB) a connection opened with these startup ``options`` has as
    its session setting, hash multiplier 1 included (:func:`memory_options`); 0 if none.
    Cached: a pool's connections all share one options string."""
    text = (options or b"").decode(errors="replace")
    found = _MEMORY_OPTIONS.findall(text)
    if len(found) != 1 or text.count("work_mem=") != 1 or text.count("hash_mem_multiplier=") != 1:
        return 0  # not ours alone: set per transaction
    return int(found[0])


class _Redescribe(Exception):
    """The outputs remembered for a statement are not those it has now (its tables
    changed): it is described again."""


async def _fetch(
    conn: psycopg.AsyncConnection[Any],
    text: str,
    outputs: list[OutputColumn],
    limits: Limits,
    *,
    type_names: dict[tuple[str, int], str],
    database: str,
    started: float,
    setup: Sequence[_Statement] = (),
    check_types: bool = False,
) -> ResultSet | None:
    """The rows, in one round trip where one batch holds the row cap: the transaction's
    start (``setup``, when the statement was not described in this transaction), the
    cursor's declaration, its first rows and the rollback. None when ``outputs`` were
    remembered from an earlier description and the statement's columns are no longer
    those (nothing is returned from such a fetch)."""
    budget = SERVER_BUDGET_FACTOR * limits.max_result_bytes
    # The wrapper keeps every output's type (CASE ... ELSE value END), so the described
    # types are the fetched ones.
    names = await _type_names(conn, [o.type_oid for o in outputs], type_names, database)
    columns = tuple(pb.SqlColumn(name=o.name, data_type=names[o.type_oid]) for o in outputs)
    kinds = [column_kind(c.data_type) for c in columns]
    rows: list[pb.SqlRow] = []
    size = 0
    reason: pb.TruncationReason.ValueType = pb.TRUNCATION_REASON_UNSPECIFIED
    small = _SMALL_TEXT_BYTES * sum(1 for o in outputs if o.type_oid in _SMALL_OIDS)
    batch_rows = max(1, min(_FETCH_BATCH, budget // max(small, 1)))
    # A cursor, declared and read in one round trip: rows come in batches, the first
    # with the declaration, and the transaction's end closes it. (psycopg's server-side
    # cursors would take a round trip each to declare, fetch and close.) The extended
    # protocol carries exactly one statement, so the text cannot stack another.
    wrapped = (
        _measured(text, tuple(outputs), budget)
        if len(text) <= _ACCEPTED_TEXT_MAX
        else _measured.__wrapped__(text, tuple(outputs), budget)
    )
    want = min(limits.max_rows + 1, batch_rows)
    encoding = conn.info.encoding
    statements = [_as_bytes(s, conn, encoding) for s in setup]
    # Plain-text setup repeats from answer to answer (keywords and integers); composed
    # ones (a role, the acceptance check's unique names, a deadline's timeout) are sent
    # as they are.
    preparable = [isinstance(s, str) for s in setup]
    statements.append((_DECLARE + wrapped).encode(encoding))
    statements.append(f"{_FETCH}{int(want)}{_FROM_CURSOR}".encode(encoding))
    preparable += [True, True]
    fetch_at = len(statements) - 1
    if want == limits.max_rows + 1:
        # one batch holds the cap: no other fetch follows, the transaction ends here (an
        # error above skips it, and the caller rolls back)
        statements.append(b"ROLLBACK")
        preparable.append(True)
    first = await pipelined(conn, statements, fetch_at, preparable=preparable)
    if check_types and first.type_oids[:-1] != [o.type_oid for o in outputs]:
        return None
    batch: list[Any] = first.rows
    while True:
        for record in batch:
            if len(rows) >= limits.max_rows:
                reason = pb.TRUNCATION_REASON_ROW_CAP
                break
            if record[-1]:  # past the server-side budget: its values were not sent
                reason = pb.TRUNCATION_REASON_SIZE_CAP
                break
            row = pb.SqlRow(values=[encode(v, k) for v, k in zip(record[:-1], kinds, strict=True)])
            row_size = sum(encoded_size(v) for v in row.values) + 2 * len(row.values)
            if size + row_size > limits.max_result_bytes:
                reason = pb.TRUNCATION_REASON_SIZE_CAP
                break
            rows.append(row)
            size += row_size
        if len(batch) < want or reason != pb.TRUNCATION_REASON_UNSPECIFIED:
            break
        want = min(limits.max_rows + 1 - len(rows), batch_rows)
        async with conn.cursor() as cursor:
            await cursor.execute(f"{_FETCH}{int(want)}{_FROM_CURSOR}")
            batch = await cursor.fetchall()
    return ResultSet(
        columns=columns,
        rows=tuple(rows),
        truncated=reason != pb.TRUNCATION_REASON_UNSPECIFIED,
        truncation_reason=reason,
        fingerprint=fingerprint(columns, rows),
        duration_s=time.perf_counter() - started,
    )


def _as_bytes(statement: _Statement, conn: psycopg.AsyncConnection[Any], encoding: str) -> bytes:
    """A setup statement's text as psycopg would send it without parameters."""
    if isinstance(statement, str):
        return statement.encode(encoding)
    return statement.as_bytes(conn)


def acceptance_check(source: str, schemas: Sequence[str]) -> list[_Statement]:
    """Statements that fail (as Postgres does) unless Postgres parses and analyses
    ``source``; nothing runs. They go out in the transaction ahead of the description.

    The search path that lets Postgres resolve the caller's unqualified table names is
    set for the check only and put back after it; the prepared statement is dropped.
    """
    path = [sql.Identifier(name) for name in dict.fromkeys(("pg_catalog", "public", *schemas))]
    # A unique name: one left behind by a cancelled call can never collide with the next.
    name = sql.Identifier(f"tandem_accept_{uuid.uuid4().hex}")
    # Each goes out over the extended protocol (a pipeline), so each is one statement:
    # the caller's text cannot stack another one behind the PREPARE.
    return [
        sql.SQL("SET LOCAL search_path = {}").format(sql.SQL(", ").join(path)),
        sql.Composed([sql.SQL("PREPARE {} AS\n").format(name), sql.SQL(source)]),
        sql.SQL("DEALLOCATE {}").format(name),
        sql.SQL("SET LOCAL search_path = pg_catalog"),
    ]


@dataclass(frozen=True)
class OutputColumn:
    """One output column of a statement, as Postgres describes it."""

    name: str
    type_oid: int


async def _describe(
    conn: psycopg.AsyncConnection[Any], text: str, setup: Sequence[_Statement] = ()
) -> list[OutputColumn]:
    """The statement's output columns, planned but not run (``LIMIT 0`` reads no row);
    ``setup`` (the transaction's start and limits) goes out in the same round trip."""
    # The extended protocol (a pipeline, or binary=True) carries exactly one statement:
    # the text cannot close the parenthesis and stack another one behind it.
    async with conn.cursor() as cursor:
        async with conn.pipeline():
            for statement in setup:
                await cursor.execute(statement)
            await cursor.execute(
                f"SELECT * FROM (\n{text}\n) AS tandem_statement LIMIT 0", binary=True
            )
        return [OutputColumn(d.name, d.type_code) for d in cursor.description or []]


@functools.lru_cache(maxsize=_ACCEPTED_MAX)
def _measured(text: str, outputs: tuple[OutputColumn, ...], budget: int) -> str:
    """:func:`measured_statement`, built once per statement (an answer asked again, a
    dashboard's question): the same text, outputs and budget give the same wrapper.

    A statement whose every output is of a small fixed-size type (a count, a sum of
    integers, a date) has nothing to measure: its sizes are all 0, so the full wrapper's
    mark could never be set. It is sent with the mark as a constant over the same fenced
    statement instead, which Postgres plans in a fraction of the time (four subquery
    levels and a window fewer, about 50 us of the backend's CPU per answer). The
    statement's own plan is the same: the levels above it pass the cursor's fraction
    down unchanged in both (no aggregate, grouping or sort among them), so its rows come
    in the same order; its row count per fetch is bounded as before (``batch_rows``)."""
    if outputs and all(o.type_oid in _SMALL_OIDS for o in outputs):
        return (
            "SELECT q.*, false AS tandem_over FROM ("
            f"SELECT * FROM (\n{text}\n) AS tandem_statement OFFSET 0"
            ") AS q"
        )
    return measured_statement(text, list(outputs), budget)


def measured_statement(text: str, outputs: list[OutputColumn], budget: int) -> str:
    """``text`` wrapped so that Postgres sends NULL for every value of every row from the
    first one whose running total of value sizes passes ``budget``, with a last column
    saying so; output order, values and types are the statement's own.

    Each level below the window is fenced (``OFFSET 0``) against being merged into the
    next: the statement's values are computed once, each row's size once, and a row
    larger than the whole budget loses its values before the window, whose buffer then
    holds only small rows. The running sum streams (its frame ends at the current row).
    The text is built from ``text``, positional aliases and integers, nothing else.
    """
    budget = int(budget)
    names = [f"c{i}" for i in range(1, len(outputs) + 1)]
    sizes = [
        _size_of(f"q.{n}", o.type_oid, budget)
        for n, o in zip(names, outputs, strict=True)
        if o.type_oid not in _SMALL_OIDS
    ]
    size = " + ".join(sizes)
    aliases = f"({', '.join(names)})" if names else ""
    sized = ", ".join([*(f"q.{n}" for n in names), f"{size or 0} AS tandem_size"])
    trimmed = ", ".join(
        [
            *(f"CASE WHEN s.tandem_size > {budget} THEN NULL ELSE s.{n} END AS {n}" for n in names),
            "s.tandem_size",
        ]
    )
    marked = ", ".join(
        [
            *(f"m.{n}" for n in names),
            "pg_catalog.sum(m.tandem_size) OVER "
            f"(ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) > {budget} AS tandem_over",
        ]
    )
    sent = ", ".join(
        [*(f"CASE WHEN w.tandem_over THEN NULL ELSE w.{n} END" for n in names), "w.tandem_over"]
    )
    return (
        f"SELECT {sent} FROM ("
        f"SELECT {marked} FROM ("
        f"SELECT {trimmed} FROM ("
        f"SELECT {sized} FROM ("
        f"SELECT * FROM (\n{text}\n) AS tandem_statement OFFSET 0"
        f") AS q{aliases} OFFSET 0"
        ") AS s OFFSET 0"
        ") AS m"
        ") AS w"
    )


def _size_of(value: str, type_oid: int, budget: int) -> str:
    """Bytes of ``value`` in the text Postgres would send (0 for NULL), as int8."""
    if type_oid in _TEXT_OIDS:
        size = f"pg_catalog.octet_length({value})::pg_catalog.int8"
    elif type_oid == _BYTEA_OID:
        size = f"pg_catalog.octet_length({value})::pg_catalog.int8 * 2 + 2"
    else:
        # A datum stored in more than twice the budget is past the cap as text too (no
        # type's stored form is four times its text; jsonb comes closest), so it is
        # marked without being rendered. Anything smaller, compressed perhaps, is
        # rendered once to be measured exactly.
        size = (
            f"CASE WHEN pg_catalog.pg_column_size({value}) > {2 * budget} "
            f"THEN pg_catalog.pg_column_size({value})::pg_catalog.int8 "
            f"ELSE pg_catalog.octet_length({value}::pg_catalog.text)::pg_catalog.int8 END"
        )
    return f"COALESCE({size}, 0)"


async def _type_names(
    conn: psycopg.AsyncConnection[Any],
    oids: list[int],
    cache: dict[tuple[str, int], str],
    database: str,
) -> dict[int, str]:
    """Postgres type names (``integer``, ``timestamp with time zone``, ``text[]``)."""
    missing = sorted({oid for oid in oids if (database, oid) not in cache})
    if missing:
        cur = await conn.execute(
            "SELECT o, format_type(o, NULL) FROM unnest(%s::oid[]) AS t(o)", (missing,)
        )
        for oid, name in await cur.fetchall():
            cache[(database, int(oid))] = str(name)
    return {oid: cache[(database, oid)] for oid in oids}


async def _rollback(conn: psycopg.AsyncConnection[Any]) -> None:
    """End the transaction; a connection that cannot is closed so the pool drops it."""
    try:
        await conn.execute("ROLLBACK")
    except psycopg.Error as exc:
        _log.warning(
            "rollback failed; discarding the connection",
            extra={"fields": {"error.type": type(exc).__name__}},
        )
        await conn.close()
