"""The verification checks on the real warehouse: statements that run and answer
something nobody asked are refused (or repaired) naming why, whoever wrote them.

The statements come from the real Gemini generator against the scripted local endpoint,
so each check is seen refusing a statement a model could write, with its reason reaching
the repair prompt; the same statements pass when the checks only audit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import date

import pytest

from services.sql import (
    AskOutcome,
    AskPipeline,
    AttemptOutcome,
    FailureKind,
    Limits,
    OfflineGenerator,
    SqlGate,
    StatementError,
    StatementRunner,
)
from services.sql.ask._llm_adapter import LlmSqlGenerator
from services.sql.verify import StatementChecker, VerifyMode
from tests.fakes.gemini import FakeGemini
from tests.fakes.gemini_sql import gemini_sql_generator, script_statements

pytestmark = pytest.mark.integration

ANCHOR = date(2025, 6, 30)


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini() as endpoint:
        yield endpoint


@pytest.fixture
async def model(fake: FakeGemini) -> AsyncIterator[Callable[..., LlmSqlGenerator]]:
    made: list[LlmSqlGenerator] = []

    def make(*statements: str) -> LlmSqlGenerator:
        script_statements(fake, *statements)
        made.append(gemini_sql_generator(fake))
        return made[-1]

    yield make
    for generator in made:
        await generator.aclose()


class _ProbesTimeOut(StatementRunner):
    """The real runner, except that the checks' probes (one row of ``p0``, ``p1`` …) are
    cancelled by the statement timeout, as on a database too busy to answer them in time."""

    async def run(self, pool, verdict, limits, **kwargs):
        if limits.max_rows == 1 and " AS p0" in verdict.normalized_sql:
            raise StatementError(FailureKind.TIMEOUT, "57014", "canceling statement due to timeout")
        return await super().run(pool, verdict, limits, **kwargs)


def pipeline(
    generator: LlmSqlGenerator,
    mode: VerifyMode = VerifyMode.ENFORCE,
    runner: StatementRunner | None = None,
) -> AskPipeline:
    gate, runner = SqlGate(), runner or StatementRunner()
    return AskPipeline(
        generator,
        gate=gate,
        runner=runner,
        fallback=OfflineGenerator(),
        checker=StatementChecker(gate, runner, mode=mode),
        today=lambda: ANCHOR,
    )


async def ask(pipe, target, question="Which companies are in healthcare?"):
    return await pipe.ask(question, target, await target.get_catalog(), Limits(max_rows=20))


def _repairs(fake: FakeGemini) -> list[str]:
    return [str(r.body) for r in fake.requests_for("repair_sql")]


def _failed(result) -> dict[str, str]:
    return {c.name: c.reason for c in result.checks if not c.passed}


async def test_a_literal_no_row_holds_is_repaired_with_the_check_as_the_signal(
    reader_target, fake, model
):
    generator = model(
        "SELECT name FROM companies WHERE industry = 'Healthcar'",
        "SELECT name FROM companies WHERE industry = 'Healthcare'",
    )
    result = await ask(pipeline(generator), reader_target)
    assert [a.outcome for a in result.attempts] == [
        AttemptOutcome.CHECK_FAILED,
        AttemptOutcome.SUCCEEDED,
    ]
    assert "'Healthcar' is not a value of companies.industry" in result.attempts[0].message
    (repair,) = _repairs(fake)
    assert "is not a value of companies.industry" in repair
    assert result.outcome is AskOutcome.ANSWERED
    assert [c.name for c in result.checks] == ["values", "ties", "rows", "joins"]
    assert all(c.passed for c in result.checks)


async def test_a_value_of_another_column_is_named_where_it_is(reader_target, model):
    # 'Healthcare' is an industry, not a country
    generator = model("SELECT name FROM companies WHERE country = 'Healthcare'")
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.UNANSWERABLE  # the model had nothing to repair with
    reason = _failed(result)["values"]
    assert "not a value of companies.country" in reason
    assert "companies.industry" in reason
    assert result.message.startswith("'Healthcare' is not a value of companies.country")


async def test_a_pattern_of_a_grammar_word_is_refused(reader_target, model):
    generator = model("SELECT name FROM companies WHERE name ILIKE '%the%'")
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.UNANSWERABLE
    assert "holds no word that names anything" in _failed(result)["values"]


async def test_a_ranking_by_a_value_every_row_shares_is_refused(reader_target, model):
    # a count over groups of one row: 1 for every company, so no top 3 exists
    generator = model(
        "SELECT c.name, count(*) AS n FROM companies c GROUP BY c.company_id, c.name "
        "ORDER BY n DESC LIMIT 3"
    )
    result = await ask(pipeline(generator), reader_target, "The 3 companies with most rows?")
    assert result.outcome is AskOutcome.UNANSWERABLE
    reason = _failed(result)["ties"]
    assert reason.startswith("the ranking by n is the same for all ")
    assert reason.endswith("rows: there is no top 3 to take")


async def test_a_cut_among_some_equal_values_is_answered_and_said(reader_target, model):
    # many deals share a stage: the three kept are the first of many equals, and say so
    generator = model("SELECT name, stage FROM opportunities ORDER BY stage LIMIT 3")
    result = await ask(pipeline(generator), reader_target, "Which 3 deals come first by stage?")
    assert result.outcome is AskOutcome.ANSWERED and _failed(result) == {}
    (ties,) = [c for c in result.checks if c.name == "ties"]
    assert ties.passed and "tie for the first 3 places by stage" in ties.reason
    assert result.answer is not None
    assert "tie for the first 3 places by stage" in result.answer.explanation


async def test_a_ranking_on_distinct_values_passes(reader_target, model):
    generator = model("SELECT name FROM companies ORDER BY company_id LIMIT 3")
    result = await ask(pipeline(generator), reader_target, "The first 3 companies by id?")
    assert result.outcome is AskOutcome.ANSWERED
    assert _failed(result) == {}


async def test_no_row_names_the_condition_that_holds_them_back(reader_target, model):
    generator = model(
        "SELECT name FROM companies WHERE industry = 'Healthcare' AND employee_count < 0"
    )
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.UNANSWERABLE
    reason = _failed(result)["rows"]
    assert "rows meet all but 'employee_count < 0'" in reason
    assert "industry" not in reason.split("all but", 1)[1]  # that one is no obstacle


async def test_a_count_of_zero_is_an_answer(reader_target, model):
    generator = model("SELECT count(*) FROM companies WHERE employee_count < 0")
    result = await ask(pipeline(generator), reader_target, "How many companies have no staff?")
    assert result.outcome is AskOutcome.ANSWERED
    assert _failed(result) == {}


async def test_a_join_on_a_measure_is_refused(reader_target, model):
    generator = model(
        "SELECT o.name FROM companies c JOIN opportunities o ON o.opportunity_id = c.employee_count"
    )
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.UNANSWERABLE
    assert "companies.employee_count counts or sums something" in _failed(result)["joins"]


async def test_a_join_of_two_categories_is_refused(reader_target, model):
    generator = model(
        "SELECT c.name, p.name FROM companies c JOIN products p ON p.category = c.industry"
    )
    result = await ask(pipeline(generator), reader_target)
    assert result.outcome is AskOutcome.UNANSWERABLE
    assert "neither of which is a key" in _failed(result)["joins"]


async def test_a_join_along_a_foreign_key_passes(reader_target, model):
    generator = model(
        "SELECT c.name, count(*) FROM companies c JOIN opportunities o "
        "ON o.company_id = c.company_id GROUP BY c.name ORDER BY c.name"
    )
    result = await ask(pipeline(generator), reader_target, "Deals per company?")
    assert result.outcome is AskOutcome.ANSWERED
    assert _failed(result) == {}


async def test_audit_reports_the_failures_and_answers_anyway(reader_target, model):
    generator = model("SELECT name FROM companies WHERE country = 'Healthcare'")
    result = await ask(pipeline(generator, VerifyMode.AUDIT), reader_target)
    assert result.outcome is AskOutcome.ANSWERED
    assert "values" in _failed(result)
    assert [a.outcome for a in result.attempts] == [AttemptOutcome.SUCCEEDED]


async def test_a_check_whose_probe_did_not_complete_says_so_in_the_answer(reader_target, model):
    """A probe the database could not answer in time decides nothing: the answer stands,
    and says which check it did not pass through rather than read as checked."""
    generator = model("SELECT name FROM companies WHERE industry = 'Healthcar'")
    result = await ask(pipeline(generator, runner=_ProbesTimeOut()), reader_target)
    assert result.outcome is AskOutcome.ANSWERED and _failed(result) == {}
    (values,) = [c for c in result.checks if c.name == "values"]
    assert values.reason.startswith("the values it compares could not be checked")
    assert result.answer is not None
    assert "could not be checked against the data" in result.answer.explanation


# A cross join of two series, filtered by a sum no pair reaches: a few million pairs read
# to find no row, by real work in the database; leaving out either bound on one series
# reads them all again, leaving out the sum finds a row at once.
_SLOW_EMPTY = (
    "SELECT a.x FROM generate_series(1, 1500) AS a(x) CROSS JOIN generate_series(1, 1500) "
    "AS b(y) WHERE a.x + b.y < 0 AND a.x > 0 AND b.y > 0"
)


async def test_a_probe_gets_time_in_proportion_to_the_statement_it_repeats(reader_target):
    """A statement slow for its data has probes as slow: each relaxation of this empty
    result reads what the statement read. With a flat budget the probe is cut and the
    check passes undecided; a budget from the statement's own duration lets it finish and
    name the condition that holds the rows back. The floor is made small here so that the
    statement outgrows it on any machine: the flat budget of before was the floor alone."""
    gate, runner = SqlGate(), StatementRunner()
    catalog = await reader_target.get_catalog()
    limits = Limits(max_rows=20, statement_timeout_s=60.0)
    verdict = gate.check(_SLOW_EMPTY, catalog)
    assert verdict.valid
    result = await runner.run(reader_target.pool, verdict, limits, database=reader_target.name)
    assert not result.rows
    floor = 0.05
    assert result.duration_s > floor  # the statement's work is past the floor alone
    checker = StatementChecker(gate, runner, probe_floor_s=floor)
    checks = await checker.check(verdict, result, reader_target, catalog, limits)
    (rows,) = [c for c in checks if c.name == "rows"]
    assert not rows.passed
    assert "could not be checked" not in rows.reason
    assert "rows meet all but 'a.x + b.y < 0'" in rows.reason
