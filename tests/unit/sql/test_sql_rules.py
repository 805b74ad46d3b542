"""The rule-based generator: lexical schema linking into structured intents."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql import (
    Aggregate,
    AttemptOutcome,
    Failure,
    FilterOp,
    GeneratorRole,
    IntentKind,
    ModelTier,
    Proposal,
    RuleBasedGenerator,
    SchemaView,
    SqlGate,
    SqlGenerator,
    TimeGrain,
    Understanding,
    compile_intent,
)

TODAY = date(2025, 6, 30)


@pytest.fixture
def view(catalog) -> SchemaView:
    return SchemaView("warehouse", catalog, catalog.tables, "", TODAY)


def read(question, view):
    reading = RuleBasedGenerator().read_rules(question, view)
    assert reading.intent is not None, reading.reason
    return reading


def filters(intent):
    return {f.column: (f.op, tuple(v.value for v in f.values)) for f in intent.filters}


def test_is_a_sql_generator():
    assert isinstance(RuleBasedGenerator(), SqlGenerator)


def test_count_with_value_and_relative_date(view):
    intent = read("How many deals did we win last quarter?", view).intent
    assert (intent.kind, intent.table) == (IntentKind.COUNT, "public.opportunities")
    assert filters(intent) == {
        "stage": (FilterOp.EQUAL, ("Closed Won",)),
        "close_date": (FilterOp.IN_RANGE, ("2025-01-01", "2025-04-01")),
    }


@pytest.mark.parametrize(
    ("phrase", "window"),
    [
        ("this quarter", ("2025-04-01", "2025-07-01")),
        ("last month", ("2025-05-01", "2025-06-01")),
        ("next month", ("2025-07-01", "2025-08-01")),
        ("in 2024", ("2024-01-01", "2025-01-01")),
        ("in Q3 2024", ("2024-07-01", "2024-10-01")),
        ("in March 2025", ("2025-03-01", "2025-04-01")),
        ("in the last 30 days", ("2025-05-31", "2025-07-01")),
        ("this year", ("2025-01-01", "2026-01-01")),
        ("since 2024", ("2024-01-01", "2025-07-01")),
    ],
)
def test_date_expressions(view, phrase, window):
    intent = read(f"How many meetings happened {phrase}?", view).intent
    assert filters(intent)["occurred_at"] == (FilterOp.IN_RANGE, window)
    assert filters(intent)["kind"] == (FilterOp.EQUAL, ("Meeting",))


def test_open_and_closed_use_the_stage_values(view):
    assert filters(read("How many open opportunities are there?", view).intent)["stage"] == (
        FilterOp.NOT_IN,
        ("Closed Lost", "Closed Won"),
    )
    assert filters(read("List closed deals", view).intent)["stage"] == (
        FilterOp.IN,
        ("Closed Lost", "Closed Won"),
    )


def test_group_by_a_joined_table_and_a_time_grain(view):
    intent = read("What is the total amount of won deals by industry?", view).intent
    assert intent.kind is IntentKind.GROUP_BY
    assert intent.join_tables == ("public.companies",)
    assert [g.column for g in intent.group_by] == ["companies.industry"]
    assert (intent.aggregate, intent.aggregate_column) == (Aggregate.SUM, "amount")
    monthly = read("How many opportunities were created per month?", view).intent
    assert [(g.column, g.grain) for g in monthly.group_by] == [("created_at", TimeGrain.MONTH)]


def test_top_n_and_numbers(view):
    top = read("What are the top 5 opportunities by amount?", view).intent
    assert (top.kind, top.limit) == (IntentKind.TOP_N, 5)
    assert top.order_by[0].column == "amount" and top.order_by[0].descending
    over = read("Which opportunities are worth more than $200k?", view).intent
    assert filters(over)["amount"] == (FilterOp.GREATER, (200000,))
    between = read("List deals with a score between 80 and 90", view).intent
    assert filters(between)["score"] == (FilterOp.IN_RANGE, (80, 90))


def test_names_the_schema_does_not_know_become_contains_filters(view):
    intent = read("List the contacts at Cobalt Academy", view).intent
    assert intent.join_tables == ("public.companies",)
    assert filters(intent)["companies.name"] == (FilterOp.CONTAINS, ("Cobalt Academy",))
    assert intent.columns == ("first_name", "last_name")


def test_booleans_and_null_states_from_comments(view):
    assert filters(read("How many active sales reps are there?", view).intent) == {
        "active": (FilterOp.EQUAL, (True,))
    }
    assert filters(read("Which products are discontinued?", view).intent) == {
        "active": (FilterOp.EQUAL, (False,))
    }
    assert filters(read("How many companies have been archived?", view).intent) == {
        "deleted_at": (FilterOp.IS_NOT_NULL, ())
    }


def test_ratio_questions_compile_to_a_percentage(view, catalog):
    generator = RuleBasedGenerator()
    reading = generator.read("What is the win rate in EMEA?", view)
    assert reading.ratio
    assert [f.column for f in reading.numerator] == ["stage"]
    proposal = generator._proposal(reading, catalog, ())
    assert proposal.sql and "FILTER(WHERE opportunities.stage = 'Closed Won')" in proposal.sql
    assert "regions.name = 'EMEA'" in proposal.sql


def test_every_reading_compiles_and_passes_the_gate(view, catalog):
    gate = SqlGate()
    questions = [
        "How many companies are there per industry?",
        "Which 5 industries have the most companies?",
        "Who are the top 5 sales reps by won amount?",
        "What is the average deal amount per product?",
        "How many demos did each sales rep run in 2025?",
        "What is the largest deal amount?",
        "What is the industry of Cobalt Academy?",
    ]
    for question in questions:
        reading = read(question, view)
        compiled = compile_intent(reading.intent, catalog, row_cap=50)
        assert gate.check(compiled.sql, catalog).valid, question
        assert reading.interpretation


async def test_protocol_calls_report_deterministic_usage(view):
    generator = RuleBasedGenerator()
    question = "How many companies are there?"
    understanding = await generator.understand(question, view)
    assert understanding.answerable and understanding.intent is None  # the linker's SQL
    assert understanding.interpretation == "Counts companies."
    assert [(c.role, c.tier, c.model_name) for c in understanding.calls] == [
        (GeneratorRole.UNDERSTAND, ModelTier.DETERMINISTIC, "deterministic")
    ]
    choice = await generator.identify_tables(question, understanding, view)
    assert choice.tables == ("public.companies",)
    proposal = await generator.generate(question, understanding, view)
    assert proposal.sql == "SELECT COUNT(*) AS m0 FROM public.companies AS t0"
    assert proposal.intent is None and proposal.explanation == "Counts companies."


async def test_a_question_the_linker_refuses_falls_back_to_the_intent_rules(view):
    generator = RuleBasedGenerator()
    # "won" is a business word: no column or stored value says it, the rules know it
    question = "How many deals did we win last quarter?"
    proposal = await generator.generate(question, Understanding(interpretation=""), view)
    assert proposal.sql is None and proposal.intent is not None
    assert proposal.intent.table == "public.opportunities"


async def test_unanswerable_questions_are_said_so(view):
    understanding = await RuleBasedGenerator().understand("What is the weather in Paris?", view)
    assert not understanding.answerable
    assert understanding.reason


async def test_repair_drops_the_part_the_failure_names(view):
    generator = RuleBasedGenerator()
    # an intent from the rules (the linker answers this one with SQL, which has no parts)
    reading = generator.read_rules("How many Enterprise companies in EMEA?", view)
    understanding = Understanding(interpretation=reading.interpretation, intent=reading.intent)
    previous = Proposal(intent=understanding.intent)
    failure = Failure(1, AttemptOutcome.GENERATION_FAILED, "", message="intent.filters[1]: bad")
    repaired = await generator.repair("q", understanding, view, previous, failure)
    assert repaired.intent is not None and understanding.intent is not None
    assert len(repaired.intent.filters) == len(understanding.intent.filters) - 1
    unrepairable = Failure(1, AttemptOutcome.DATABASE_ERROR, "SELECT 1", sqlstate="42703")
    nothing = await generator.repair("q", understanding, view, previous, unrepairable)
    assert nothing.intent is None and nothing.sql is None and nothing.explanation


@pytest.mark.parametrize(
    "question",
    [
        "What are our top 5 accounts by open pipeline?",
        "Which 5 companies have the most open pipeline?",
        "top 5 customers by open pipeline",
    ],
)
def test_accounts_ranked_by_summed_open_pipeline(view, catalog, question):
    intent = read(question, view).intent
    assert (intent.kind, intent.table) == (IntentKind.GROUP_BY, "public.opportunities")
    assert intent.aggregate is Aggregate.SUM and intent.limit == 5
    assert [g.column for g in intent.group_by] == ["companies.name", "companies.company_id"]
    assert filters(intent)["opportunities.stage"] == (
        FilterOp.NOT_IN,
        ("Closed Lost", "Closed Won"),
    )
    sql = compile_intent(intent, catalog, row_cap=50).sql
    assert "SUM(opportunities.amount)" in sql and "DESC" in sql


def test_the_company_with_the_most_open_deals_counts_only_open_ones(view):
    intent = read("Which company has the most open deals?", view).intent
    assert intent.aggregate is Aggregate.COUNT and intent.limit == 1
    assert "companies.company_id" in [g.column for g in intent.group_by]
    assert filters(intent)["opportunities.stage"][0] is FilterOp.NOT_IN


def test_account_executives_are_still_a_title_not_the_accounts_table(view):
    intent = read("How many account executives are there?", view).intent
    assert intent.table == "public.owners"
    assert filters(intent)["title"] == (FilterOp.EQUAL, ("Account Executive",))
