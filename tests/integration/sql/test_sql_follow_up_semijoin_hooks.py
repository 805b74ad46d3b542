"""The SQL engine's follow-up reads an earlier answer (or a linked one) written as a
semi-join back as the joins it stands for, and writes what it builds as the question
asked outright is (``results.joined`` / ``results.as_asked``, the hooks in
``SqlEngine._follow_up``): on the demo warehouse, through the real engine and linker,
without the chat eval.

"The companies with a Closed Won deal" is answered as the companies having one
(``EXISTS``); "now Closed Lost" swaps the value the joined deals are compared with,
and "which companies are those deals for?" restricts the joined deals to the earlier
rows. Read as an EXISTS it did not build on, the swap kept the Closed Won test beside
the new one (a confident wrong: the companies with both) and the reference was refused."""

from __future__ import annotations

import re

import pytest
import sqlglot
from sqlglot import exp

from services.sql import AskPipeline, OfflineGenerator, SqlGate, StatementRunner, TargetRegistry
from services.sql.conversation import Prior, Relation
from services.sql.demo.data import ANCHOR_DATE
from services.sql.results import with_semijoins
from tests.integration.sql.conftest import make_engine

pytestmark = pytest.mark.integration

_DEALS = (
    "SELECT DISTINCT t0.name AS name FROM public.companies AS t0 JOIN public.opportunities "
    "AS t1 ON t1.company_id = t0.company_id WHERE t1.stage = '{stage}'"
)


@pytest.fixture
async def engine(reader_target):
    pipeline = AskPipeline(
        OfflineGenerator(), gate=SqlGate(), runner=StatementRunner(), today=lambda: ANCHOR_DATE
    )
    return make_engine(TargetRegistry([reader_target], "warehouse"), ask=pipeline)


def _values(rows) -> set[tuple[bytes, ...]]:
    return {tuple(v.SerializeToString() for v in row.values) for row in rows}


async def _rows(engine, sql: str) -> set[tuple[bytes, ...]]:
    return _values((await engine.execute("acme", "warehouse", sql)).result.rows)


async def test_a_value_swap_on_a_semi_join_answers_as_the_swap_asked_outright(
    engine, reader_target
):
    catalog = await reader_target.get_catalog()
    won = with_semijoins(_DEALS.format(stage="Closed Won"), catalog)
    lost = with_semijoins(_DEALS.format(stage="Closed Lost"), catalog)
    assert sqlglot.parse_one(won).find(exp.Exists) is not None
    got = await engine.ask(
        "acme", "warehouse", "now Closed Lost",
        prior=Prior(won, Relation.VALUE_SWAP, value="Closed Lost"),
    )  # fmt: skip
    assert got.answer is not None, got.message
    sql = got.answer.verdict.normalized_sql
    assert "Closed Won" not in sql and "Closed Lost" in sql
    tree = sqlglot.parse_one(sql, dialect="postgres")
    # written back as the question asked outright is: a semi-join, the names alone
    assert tree.find(exp.Exists) is not None and not tree.args.get("joins")
    assert [e.alias_or_name for e in tree.expressions] == ["name"]
    assert _values(got.answer.result.rows) == await _rows(engine, lost)


async def test_a_reference_to_earlier_rows_restricts_the_semi_join_they_are_linked_by(
    engine, reader_target
):
    earlier = (
        "SELECT t0.name AS name FROM public.opportunities AS t0 "
        "WHERE t0.stage = 'Closed Won' AND t0.amount > 100000"
    )
    got = await engine.ask(
        "acme", "warehouse", "which companies are those deals for?",
        prior=Prior(earlier, Relation.RESULT_SET),
    )  # fmt: skip
    assert got.answer is not None, got.message
    tree = sqlglot.parse_one(got.answer.verdict.normalized_sql, dialect="postgres")
    assert tree.find(exp.Exists) is not None and not tree.args.get("joins")
    outright = (
        "SELECT DISTINCT t0.company_id, t0.name FROM public.companies AS t0 JOIN "
        "public.opportunities AS t1 ON t1.company_id = t0.company_id "
        "WHERE t1.stage = 'Closed Won' AND t1.amount > 100000"
    )
    names = {r[-1] for r in await _rows(engine, outright)}
    at = [e.alias_or_name for e in tree.expressions].index("name")
    assert {r[at] for r in _values(got.answer.result.rows)} == names
    assert not re.search(r"\bclosed won\b.*\bclosed won\b", tree.sql().lower())
