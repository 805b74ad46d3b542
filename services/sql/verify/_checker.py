"""The checks an executed statement goes through before its answer is given.

:class:`StatementChecker` reads the statement the gate accepted, the rows it returned and
the catalog, and answers with one :class:`CheckResult` per check (``values``, ``ties``,
``rows``, ``joins``). What the catalog already knows is decided here; what only the data
can tell is asked of the database in probes — each a SELECT of ``EXISTS`` subqueries and
counts built from the statement, which goes through the same gate and the same read-only
execution as any other statement: at most one probe for the statement's values and cut,
and one more only when it found no row. Each gets time in proportion to what the
statement took and the expressions it asks (``_budget``).

A probe that cannot run (refused, timed out, the database gone) decides nothing: the
check passes with that said, since a check must never turn a database hiccup into a
refusal of a good answer.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from opentelemetry import trace
from sqlglot import exp

from services.sql.catalog import Catalog, JoinGraph, StoredValues
from services.sql.gate import (
    Limits,
    ResultSet,
    SqlGate,
    StatementError,
    StatementRunner,
    Verdict,
    parse_statements,
)
from services.sql.targets import Target
from services.sql.verify._budget import PROBE_FLOOR_S, probe_limits
from services.sql.verify._checks import (
    JOINS,
    ROWS,
    TIES,
    VALUES,
    CheckResult,
    VerifyMode,
    failure,
)
from services.sql.verify._joins import join_pairs, join_refusal
from services.sql.verify._other_reference import Swapped, found_nothing, swapped_references
from services.sql.verify._rows import refusal as rows_refusal
from services.sql.verify._rows import relaxations
from services.sql.verify._statement import StatementNodes, read_statement
from services.sql.verify._ties import TiesTest, ties_test
from services.sql.verify._values import ValueTest, settled, value_tests

_log = logging.getLogger("tandem.sql.verify")
# A probe that could not run (past its budget, or failing) decides nothing: the answer
# stands, and says what was not checked rather than pass as checked.
_UNCHECKED_END = " could not be checked against the data: the check's query did not complete"
_UNCHECKED = "{}" + _UNCHECKED_END
_CACHED_CATALOGS = 64
# Statements read per catalog: a service answers the same few statements again and again
# (a question asked again, a confirmed pair reused); a bounded memo, oldest out first.
_CACHED_STATEMENTS = 256


@dataclass(frozen=True)
class _Reading:
    """What the checks read from one statement against one catalog before any probe: its
    tree, tables and literals, the value tests (decided by the catalog's stored values, or
    a probe), the ranking's ties test and the first join the join graph refuses. None of
    it depends on the rows the statement returned, so a statement answered again is not
    walked again (a third of the checks' CPU per answer, ``tandem bench cost``)."""

    tree: exp.Expr
    nodes: StatementNodes
    tests: tuple[ValueTest, ...]
    ties: TiesTest | None
    join_refusal: str


@dataclass(frozen=True)
class _Derived:
    """What the checks derive from one catalog: its stored values and join graph, and
    the statements read against it. Held per catalog (its load and the reader's view), so
    a refreshed catalog, whose stored values and keys may differ, reads every statement
    afresh."""

    values: StoredValues
    graph: JoinGraph
    readings: OrderedDict[str, _Reading] = field(default_factory=OrderedDict)


class StatementChecker:
    """Runs every check on one executed statement (see the module docstring)."""

    def __init__(
        self,
        gate: SqlGate,
        runner: StatementRunner,
        *,
        mode: VerifyMode = VerifyMode.ENFORCE,
        tracer: trace.Tracer | None = None,
        probe_floor_s: float = PROBE_FLOOR_S,
    ) -> None:
        self._gate = gate
        self._probe_floor_s = probe_floor_s
        self._runner = runner
        self.mode = mode
        self._tracer = tracer or trace.NoOpTracer()
        self._derived: OrderedDict[tuple[object, ...], _Derived] = OrderedDict()

    def _of(self, catalog: Catalog) -> _Derived:
        # a question on a wide warehouse is checked against the tables it was linked
        # among (a narrowed catalog of the same load): the tables are part of the key
        # (a principal's view of the load holds only what they may see: keyed apart)
        key = catalog.contents_key
        found = self._derived.get(key)
        if found is None:
            found = _Derived(StoredValues.of(catalog), JoinGraph(catalog))
            self._derived[key] = found
            if len(self._derived) > _CACHED_CATALOGS:
                self._derived.popitem(last=False)
        return found

    def _read(self, sql: str, catalog: Catalog) -> tuple[_Derived, _Reading]:
        """The catalog's derived data and the statement's reading against it, from the
        catalog's memo when the statement was read against this catalog before."""
        derived = self._of(catalog)
        found = derived.readings.get(sql)
        if found is not None:
            derived.readings.move_to_end(sql)
            return derived, found
        # the parse's tree is kept with what was read from it (the nodes point into it)
        tree = parse_statements(sql, shared=True)[0]
        nodes = read_statement(tree, catalog)
        pairs = join_pairs(nodes)
        refusal = ""
        for pair in pairs:
            refusal = join_refusal(pair, derived.graph, pairs)
            if refusal:
                break
        found = _Reading(tree, nodes, tuple(value_tests(nodes)), ties_test(tree, catalog), refusal)
        derived.readings[sql] = found
        if len(derived.readings) > _CACHED_STATEMENTS:
            derived.readings.popitem(last=False)
        return derived, found

    def refuses(self, results: tuple[CheckResult, ...]) -> CheckResult | None:
        """The check that refuses the answer: the first failure, in ``enforce`` mode."""
        return failure(results) if self.mode is VerifyMode.ENFORCE else None

    async def check(
        self,
        verdict: Verdict,
        result: ResultSet,
        target: Target,
        catalog: Catalog,
        limits: Limits,
    ) -> tuple[CheckResult, ...]:
        """One result per check, in :data:`CHECKS` order."""
        with self._tracer.start_as_current_span("sql.verify") as span:
            found = await self._check(verdict, result, target, catalog, limits)
            failed = [r.name for r in found if not r.passed]
            span.set_attribute("sql.verify.failed", failed)
            # what the data could not decide (a probe past its budget): said in the answer
            unchecked = [r.name for r in found if r.passed and r.reason.endswith(_UNCHECKED_END)]
            span.set_attribute("sql.verify.unchecked", unchecked)
            span.set_attribute("sql.verify.mode", self.mode.value)
            return found

    async def _check(
        self,
        verdict: Verdict,
        result: ResultSet,
        target: Target,
        catalog: Catalog,
        limits: Limits,
    ) -> tuple[CheckResult, ...]:
        derived, reading = self._read(verdict.normalized_sql, catalog)
        tree, nodes, tests, ties = reading.tree, reading.nodes, reading.tests, reading.ties
        asked = [t.probe for t in tests if t.probe]
        first = asked + ([ties.kept_probe, ties.all_probe] if ties else [])
        answers = await self._probe(first, target, catalog, self._limits(result, first, limits))
        # values: decided here, or by the probe (undecided when it could not run)
        by_probe = iter(answers[: len(asked)] if answers is not None else [None] * len(asked))
        held: list[bool | None] = []
        for test in tests:
            answer = next(by_probe) if test.probe else test.held
            held.append(None if answer is None else bool(answer))
        refused = settled(tests, held)
        values = (
            CheckResult(VALUES, False, refused.refusal(derived.values))
            if refused is not None
            else CheckResult(
                VALUES, True, _UNCHECKED.format("the values it compares") if None in held else ""
            )
        )
        # ties: a degenerate ranking refuses, a cut among some equals is said
        cut = CheckResult(TIES, True)
        if ties is not None and answers is None:
            cut = CheckResult(TIES, True, _UNCHECKED.format("whether its ranking ties"))
        if ties is not None and answers is not None:
            kept, total = answers[-2], answers[-1]
            if isinstance(kept, int) and isinstance(total, int) and kept > ties.limit:
                cut = (
                    CheckResult(TIES, False, ties.refusal(total))
                    if ties.degenerate(kept, total)
                    else CheckResult(TIES, True, ties.note(kept))
                )
        # rows
        rows = CheckResult(ROWS, True)
        if not result.rows:
            relaxed = relaxations(tree)
            probes = [r.probe for r in relaxed]
            through = await self._probe(
                probes, target, catalog, self._limits(result, probes, limits)
            )
            if through is not None or not relaxed:
                rows = CheckResult(
                    ROWS, False, rows_refusal(relaxed, [bool(x) for x in (through or [])])
                )
            else:
                rows = CheckResult(ROWS, True, _UNCHECKED.format("why no row meets it"))
        # joins
        joins = (
            CheckResult(JOINS, False, reading.join_refusal)
            if reading.join_refusal
            else CheckResult(JOINS, True)
        )
        if joins.passed and rows.passed and found_nothing(result):
            swapped = swapped_references(tree, nodes, derived.graph)
            joins = await self._other_reference(swapped, result, target, catalog, limits)
        return (values, cut, rows, joins)

    async def _other_reference(
        self,
        swapped: list[Swapped],
        result: ResultSet,
        target: Target,
        catalog: Catalog,
        limits: Limits,
    ) -> CheckResult:
        """A statement that found nothing through one of a table's several references to
        the table it joins, where rows meet its conditions through another, is refused
        naming that one (``_other_reference``): one probe for all its such joins."""
        probes = [p for s in swapped for p in s.probes]
        if not probes:
            return CheckResult(JOINS, True)
        answers = await self._probe(probes, target, catalog, self._limits(result, probes, limits))
        if answers is None:
            return CheckResult(JOINS, True)
        for one in swapped:
            mine, answers = answers[: len(one.probes)], answers[len(one.probes) :]
            reason = one.refusal(mine)
            if reason:
                return CheckResult(JOINS, False, reason)
        return CheckResult(JOINS, True)

    def _limits(self, result: ResultSet, expressions: list[str], limits: Limits) -> Limits:
        """A probe's limits: time in proportion to the statement's (``_budget``)."""
        return probe_limits(result.duration_s, len(expressions), limits, self._probe_floor_s)

    async def _probe(
        self, expressions: list[str], target: Target, catalog: Catalog, limits: Limits
    ) -> list[object] | None:
        """The values of ``expressions`` selected in one gated, read-only statement; None
        when there is nothing to ask or the probe could not run."""
        if not expressions:
            return None
        text = "SELECT " + ", ".join(f"{e} AS p{i}" for i, e in enumerate(expressions))
        verdict = self._gate.check(text, catalog)
        # The probe is this module's own text, written by sqlglot from a statement Postgres
        # already accepted: it runs as the gate regenerated it, without the check that a
        # caller's text means to Postgres what it means to the parser (one round trip less).
        verdict = replace(verdict, source_sql="", source_schemas=())
        if not verdict.valid:
            _log.warning(
                "a verification probe was refused by the gate",
                extra={"fields": {"gate.rule": verdict.violations[0].rule.name}},
            )
            return None
        try:
            probed = await self._runner.run(target.pool, verdict, limits, database=target.name)
        except StatementError as exc:
            _log.info(
                "a verification probe could not run; the check decides nothing",
                extra={"fields": {"error.kind": exc.kind.value, "db.sqlstate": exc.sqlstate}},
            )
            return None
        if not probed.rows:
            return None
        return [_plain(v) for v in probed.rows[0].values]


def _plain(value: object) -> object:
    """A probe's value: a boolean or an integer (``SqlValue``)."""
    which = value.WhichOneof("kind")  # type: ignore[attr-defined]
    if which == "bool_value":
        return bool(value.bool_value)  # type: ignore[attr-defined]
    if which == "int_value":
        return int(value.int_value)  # type: ignore[attr-defined]
    return None
