"""Two evals on one Postgres server at once: each reserves the databases it re-creates.

An eval drops and re-creates its databases under fixed names (``tandem_eval_<db>``, so a
user can open them after the run), and serves them to its SQL service for the whole run.
A second run started beside it from the same checkout (the same embedded server) would
drop them under the first one's catalog and questions: "database … does not exist",
"schema catalog unavailable", a half-broken report. So each run holds a session-level
advisory lock per name it re-creates, from before the first DROP until its last question
is scored; a run that needs a name another holds waits for it, saying so, and then loads
its own copy. Runs over different names (the study and blind halves, keyed and key-less
copies) do not wait for each other.

Session locks go with the connection, so a run that dies frees its names at once; names
are locked in sorted order, so two runs never wait for each other in a circle. A name this
task already holds is not locked again (an eval inside a bigger one, as the refusal check
runs the dataset eval then reads the same databases); another thread or task of the same
process is another run and waits like one.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from contextvars import ContextVar

import psycopg

# The first key of every eval reservation (the second is the name's hash): the two-key
# form is a space of its own, apart from the single-key locks of migrations and the demo
# warehouse.
_RESERVE_CLASS = 0x7A4D_0E0A

# Names the current task (and what it awaits) holds; a new thread or task starts empty.
_held: ContextVar[frozenset[str]] = ContextVar("tandem_eval_reserved", default=frozenset())


def _say(text: str) -> None:
    print(text, file=sys.stderr)


@asynccontextmanager
async def reserved(
    admin_url: str, names: Iterable[str], *, say: Callable[[str], None] = _say
) -> AsyncIterator[None]:
    """Hold ``names`` (database or role names, or any other shared name) against every
    other process on the server of ``admin_url`` until the block ends; wait, saying for
    which name, while another holds one."""
    held = _held.get()
    mine = sorted(set(names) - held)
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as conn:
        for name in mine:
            cur = await conn.execute(
                "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (_RESERVE_CLASS, name)
            )
            row = await cur.fetchone()
            if not (row and row[0]):
                say(f"waiting for another eval on this server to finish with {name}")
                await conn.execute(
                    "SELECT pg_advisory_lock(%s, hashtext(%s))", (_RESERVE_CLASS, name)
                )
        token = _held.set(held | set(mine))
        try:
            yield
        finally:
            _held.reset(token)
    # closing the session released its locks
