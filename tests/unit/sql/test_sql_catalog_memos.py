"""What is derived from a catalog is kept with that catalog load, never across loads: the
checks' reading of a statement (a statement checked again against the same catalog is
not walked again; a refreshed catalog, whose stored values may differ, reads it afresh),
the grouping checks' catalog words (the vocabulary's, one per load) and the whole
catalog's rendered text (the schema view every question shows)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo, render
from services.sql.gate import Limits, ResultSet, SqlGate, StatementRunner, Verdict
from services.sql.linker import Vocabulary
from services.sql.verify import StatementChecker
from services.sql.verify._statement import read_statement
from tandem.v1 import common_pb2
from tandem.v1 import sql_service_pb2 as pb

STATEMENT = "SELECT document_id FROM documents WHERE document_name = 'Annual'"
LOADED = datetime(2026, 1, 1, tzinfo=UTC)


def _catalog(
    *, samples: tuple[str, ...], at: datetime = LOADED, name: str = "document_name"
) -> Catalog:
    return Catalog(
        "docs",
        (
            TableInfo(
                "public",
                "documents",
                columns=(
                    ColumnInfo("document_id", "integer", True),
                    ColumnInfo(name, "text", True, sample_values=samples),
                ),
                primary_key=("document_id",),
            ),
        ),
        refreshed_at=at,
    )


@dataclass
class _Target:
    name: str = "docs"
    pool: object = None


class _Counting(StatementRunner):
    """Counts the probes; every expression a probe asks is true."""

    def __init__(self) -> None:
        super().__init__()
        self.probes = 0

    async def run(self, pool: Any, verdict: Verdict, limits: Limits, **kwargs: Any) -> ResultSet:
        self.probes += 1
        asked = verdict.normalized_sql.count(" AS p")
        row = pb.SqlRow(values=[common_pb2.SqlValue(bool_value=True) for _ in range(asked)])
        return ResultSet((), (row,), False, pb.TRUNCATION_REASON_UNSPECIFIED, "", 0.001)


def _answered() -> ResultSet:
    row = pb.SqlRow(values=[common_pb2.SqlValue(int_value=1)])
    return ResultSet((), (row,), False, pb.TRUNCATION_REASON_UNSPECIFIED, "", 0.001)


async def _check(checker: StatementChecker, gate: SqlGate, catalog: Catalog) -> None:
    verdict = gate.check(STATEMENT, catalog)
    assert verdict.valid
    found = await checker.check(
        verdict,
        _answered(),
        _Target(),  # type: ignore[arg-type]
        catalog,
        Limits(),
    )
    assert all(r.passed for r in found)


async def test_a_statement_checked_again_is_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []

    def counted(tree: Any, catalog: Catalog) -> Any:
        reads.append(catalog.database)
        return read_statement(tree, catalog)

    monkeypatch.setattr("services.sql.verify._checker.read_statement", counted)
    gate, runner = SqlGate(), _Counting()
    checker = StatementChecker(gate, runner)
    catalog = _catalog(samples=("Annual",))
    await _check(checker, gate, catalog)
    await _check(checker, gate, catalog)
    assert reads == ["docs"]
    # the catalog's samples hold the value: decided without asking the database
    assert runner.probes == 0


async def test_a_refreshed_catalog_reads_the_statement_afresh() -> None:
    """The first load's samples held 'Annual' (no probe); the refreshed load's do not, so
    its check must ask the database. A reading kept across loads would skip the probe
    and pass the value on the old load's word."""
    gate, runner = SqlGate(), _Counting()
    checker = StatementChecker(gate, runner)
    await _check(checker, gate, _catalog(samples=("Annual",)))
    assert runner.probes == 0
    await _check(checker, gate, _catalog(samples=("Quarterly",), at=LOADED + timedelta(hours=1)))
    assert runner.probes == 1


def test_the_catalog_words_are_the_loads_own() -> None:
    """A refreshed catalog that renamed a column no longer holds the old name's words:
    each load's vocabulary builds its own, once."""
    before = _catalog(samples=(), name="document_name")
    after = _catalog(samples=(), name="title", at=LOADED + timedelta(hours=1))
    first = Vocabulary(before, JoinGraph(before))
    assert "name" in first.named_words
    assert first.named_words is first.named_words  # built once
    second = Vocabulary(after, JoinGraph(after))
    assert "name" not in second.named_words
    assert "title" in second.named_words


def test_the_rendered_catalog_is_the_loads_own() -> None:
    """The schema view of every table is written once per catalog; a refreshed catalog
    that renamed a column shows the new name, not the old load's text."""
    before = _catalog(samples=(), name="document_name")
    first = render(before, max_chars=8000)
    assert "document_name" in first.text
    assert render(before, max_chars=8000).text is first.text  # written once
    after = _catalog(samples=(), name="title", at=LOADED + timedelta(hours=1))
    shown = render(after, max_chars=8000).text
    assert "title" in shown
    assert "document_name" not in shown
    # a view of some tables is that view's text, not the whole catalog's
    assert render(after, max_chars=8000, tables=()).text == ""
