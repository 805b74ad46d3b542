"""How long a data-check probe may run: in proportion to the statement it checks.

A probe repeats the checked statement's own work: each of its expressions is an
``EXISTS`` or a count over the statement's tables (a literal looked for in its column,
the statement with one condition left out, its rows counted with and without the cut).
When no row meets what an expression asks, Postgres reads everything the statement read
to say so. A flat timeout cut such probes wherever the statement was slow for its data
or the machine was busy, and the check then passed undecided: the same question was
refused or answered wrongly by how loaded the database happened to be. So a probe gets
:data:`WORK_FACTOR` times what the statement took for each expression it holds,
measured on the same database at the same moment: a load that slows the statement
slows the probe alike, and its budget grows with it. The measure is the statement's
duration, already known: no ``EXPLAIN`` round trip per answer (and without planner
statistics, as in a freshly restored warehouse, the planner's estimate is no measure).

Within bounds. The floor (:data:`PROBE_FLOOR_S`, the flat budget of before) is for a
statement of a few milliseconds, whose probe a busy moment can still delay by more than
any multiple of them. The ceiling is the statement's own limit: a probe is never allowed
more than the statement it checks was, and the caller's deadline still cuts it at
execution (``statement_budget``). A probe that does not finish within its budget still
decides nothing, and the answer says what was not checked.
"""

from __future__ import annotations

from dataclasses import replace

from services.sql.gate import Limits

# A probe of a statement that took a few milliseconds gets this much (seconds).
PROBE_FLOOR_S = 2.0
# Each expression of a probe gets this many times the checked statement's duration: an
# expression repeats at most about the statement's reading (measured: a probe took up to
# 2.6 times its statement on the dev sets, round trips included), with room for the
# moment's variation.
WORK_FACTOR = 3.0


def probe_budget(
    statement_s: float, expressions: int, limits: Limits, floor_s: float = PROBE_FLOOR_S
) -> float:
    """Seconds a probe of ``expressions`` expressions may run, checking a statement that
    took ``statement_s`` under ``limits``."""
    wanted = WORK_FACTOR * max(expressions, 1) * max(statement_s, 0.0)
    return min(limits.statement_timeout_s, max(floor_s, wanted))


def probe_limits(
    statement_s: float, expressions: int, limits: Limits, floor_s: float = PROBE_FLOOR_S
) -> Limits:
    """The statement's limits for one of its probes: one row, :func:`probe_budget`."""
    return replace(
        limits,
        max_rows=1,
        statement_timeout_s=probe_budget(statement_s, expressions, limits, floor_s),
    )
