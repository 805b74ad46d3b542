"""The offline generator on the demo warehouse's shape: the schema linker alone, reading
the schema's own documentation (comment synonyms and states), stored values, the value
index and the demo's glossary file, with no word list of its own."""

from __future__ import annotations

import contextvars
from dataclasses import replace
from datetime import date

import pytest

from services.sql import (
    AttemptOutcome,
    Catalog,
    Failure,
    GeneratorRole,
    ModelTier,
    OfflineGenerator,
    Proposal,
    SchemaView,
    SqlEngine,
    SqlGate,
    SqlGenerator,
    Understanding,
    demo_glossary,
)
from services.sql.linker import Linked, QuestionLinker

TODAY = date(2025, 6, 30)


def with_names(catalog: Catalog) -> Catalog:
    """The catalog as the value index would see it: company and rep names stored."""
    tables = []
    for table in catalog.tables:
        names = {
            ("companies", "name"): ("Cobalt Academy", "Kingsley Logistics"),
            ("owners", "full_name"): ("Nadia Chen", "Omar Haddad"),
            ("activities", "subject"): ("Call with Cobalt Academy", "Demo for Kingsley"),
        }
        columns = [
            replace(c, known_values=names.get((table.name, c.name), ())) for c in table.columns
        ]
        tables.append(replace(table, columns=tuple(columns)))
    return replace(catalog, tables=tuple(tables))


@pytest.fixture
def view(catalog) -> SchemaView:
    named = with_names(catalog)
    return SchemaView("warehouse", named, named.tables, "", TODAY, glossary=demo_glossary())


def sql(question: str, view: SchemaView) -> str:
    reading = OfflineGenerator().read(question, view)
    assert reading.sql, reading.reason
    return reading.sql


def test_is_a_sql_generator():
    assert isinstance(OfflineGenerator(), SqlGenerator)


def test_tables_and_columns_by_the_names_their_comments_give(view):
    # "Sales opportunities (deals)", "Deal amount (value, revenue, pipeline)"
    assert sql("What is the average deal amount?", view) == (
        "SELECT AVG(t0.amount) AS avg_amount FROM public.opportunities AS t0"
    )
    statement = sql("How many demos did each sales rep run in 2025?", view)
    assert "JOIN public.owners" in statement and "GROUP BY" in statement


def test_a_word_of_a_stored_value_and_the_date_it_implies(view):
    # 'Closed Won' holds "won" ("win" read as its verb); the closing date, not creation
    statement = sql("How many deals did we win last quarter?", view)
    assert "t0.stage = 'Closed Won'" in statement
    assert "t0.close_date >= '2025-01-01' AND t0.close_date < '2025-04-01'" in statement


def test_a_verb_that_is_part_of_a_longer_name_is_the_state(view):
    statement = sql("How many deals were lost for each lost reason?", view)
    assert "WHERE (t0.stage = 'Closed Lost') GROUP BY t0.lost_reason" in statement


def test_conditions_from_the_glossary_file(view):
    statement = sql("Which company has the most open deals?", view)
    assert "NOT t0.stage IN ('Closed Won', 'Closed Lost')" in statement
    assert statement.endswith("LIMIT 1")
    rate = OfflineGenerator().read("What is the win rate in EMEA?", view)
    assert rate.applied == ("win rate",)
    assert "FILTER(WHERE t0.stage = 'Closed Won')" in rate.sql
    # the term's words are the term: no 'Closed Won' filter of its own
    assert "WHERE (t0.stage" not in rate.sql and "'EMEA'" in rate.sql


def test_a_state_nothing_defines_is_refused_not_dropped(view):
    reading = OfflineGenerator().read("What is the average score of hot opportunities?", view)
    assert not reading.sql and "hot" in reading.reason
    # without the glossary, "open" is still documented: closed_at is "NULL while open"
    bare = replace(view, glossary=())
    assert "WHERE (t0.closed_at IS NULL)" in sql(
        "What is the average score of open opportunities?", bare
    )


def test_states_the_comments_define(view):
    # "False when the product is discontinued"; "When the account was archived ..."
    assert "WHERE (NOT t0.active)" in sql("Which products are discontinued?", view)
    assert "WHERE (t0.deleted_at IS NOT NULL)" in sql(
        "How many companies have been archived?", view
    )
    assert "WHERE (t0.deleted_at IS NULL)" in sql(
        "How many companies have not been archived?", view
    )


def test_proper_names_from_the_value_index(view):
    statement = sql("List the contacts at Cobalt Academy", view)
    # the contacts whose company is that one (one company each: written as having it)
    assert "EXISTS(SELECT 1 FROM public.companies" in statement
    assert "sj1.name = 'Cobalt Academy'" in statement
    owner = sql("Who is the account owner of Kingsley Logistics?", view)
    # a reference shows the row it points to by name, not its key (each owner once: the
    # owners are listed through the companies that refer to them), and not by the job
    # title many owners share (s67: one definition of what names a row)
    assert owner.startswith("SELECT t0.full_name AS full_name FROM public.owners AS t0 WHERE")
    assert "EXISTS(SELECT 1 FROM public.companies" in owner and "title" not in owner
    assert "= 'Nadia Chen'" in sql("How many deals are owned by Nadia Chen?", view)
    # an unknown name is refused by name, never guessed
    unknown = OfflineGenerator().read("List the contacts at Zephyr Mills", view)
    assert not unknown.sql and "Zephyr" in unknown.reason


def test_child_numbers_are_summed_per_listed_row(view):
    statement = sql("Who are the top 5 sales reps by won amount?", view)
    assert "SUM(t0.amount) AS sum_amount" in statement and "GROUP BY" in statement
    assert statement.endswith("LIMIT 5")


def test_recency_orders_by_the_rows_own_date(view):
    statement = sql("What are the 5 most recent activities?", view)
    # no name-like column: the short varied text the value index holds names the rows
    assert "t0.subject AS subject" in statement and "notes" not in statement
    assert "t0.occurred_at AS occurred_at" in statement
    assert "ORDER BY occurred_at DESC" in statement and statement.endswith("LIMIT 5")


def test_every_reading_passes_the_gate(view):
    gate = SqlGate()
    questions = [
        "How many companies are there per industry?",
        "Which 5 industries have the most companies?",
        "What is the average deal amount per product?",
        "How many demos did each sales rep run in 2025?",
        "What is the industry of Cobalt Academy?",
        "What percentage of deals were lost?",
        "Count the contacts who are CTOs",
    ]
    for question in questions:
        assert gate.check(sql(question, view), view.catalog).valid, question


async def test_protocol_calls_report_deterministic_usage(view):
    generator = OfflineGenerator()
    question = "How many companies are there?"
    understanding = await generator.understand(question, view)
    assert understanding.answerable and understanding.intent is None
    assert understanding.interpretation == "Counts companies."
    assert [(c.role, c.tier, c.model_name) for c in understanding.calls] == [
        (GeneratorRole.UNDERSTAND, ModelTier.DETERMINISTIC, "deterministic")
    ]
    choice = await generator.identify_tables(question, understanding, view)
    assert choice.tables == ("public.companies",)
    proposal = await generator.generate(question, understanding, view)
    assert proposal.sql == "SELECT COUNT(*) AS count FROM public.companies AS t0"
    assert proposal.explanation == "Counts companies."


async def test_unanswerable_questions_are_said_so(view):
    understanding = await OfflineGenerator().understand("What is the weather in Paris?", view)
    assert not understanding.answerable
    assert "weather" in understanding.reason


async def test_repair_gives_up_with_a_reason(view):
    generator = OfflineGenerator()
    previous = Proposal(sql="SELECT 1")
    failure = Failure(1, AttemptOutcome.DATABASE_ERROR, "SELECT 1", sqlstate="42703")
    repaired = await generator.repair(
        "q", Understanding(interpretation=""), view, previous, failure
    )
    assert repaired.sql is None and repaired.intent is None and repaired.explanation


async def test_one_question_is_read_once_for_all_three_roles(view, monkeypatch):
    links: list[str] = []
    real = QuestionLinker.link

    def counting(self: QuestionLinker) -> Linked:
        links.append(self.context.original)
        return real(self)

    monkeypatch.setattr(QuestionLinker, "link", counting)
    generator = OfflineGenerator()
    question = "How many open opportunities are there?"
    understanding = await generator.understand(question, view)
    await generator.identify_tables(question, understanding, view)
    proposal = await generator.generate(question, understanding, view)
    assert proposal.sql and links == [question]
    # what a reading depends on is part of the key: other instructions, another reading
    other = replace(view, instructions="open means stage = 'Prospecting'")
    await generator.generate(question, understanding, other)
    assert links == [question, question]
    # and the memory is bounded
    for i in range(200):
        generator.read(f"How many companies are there in {2000 + i}?", view)
    assert len(generator._readings) <= 64


def test_a_word_of_a_named_product_is_not_a_value_of_its_own(view):
    # "Security" is also a product category; inside "Security Suite" it is the name's
    assert sql("How many open Security Suite opportunities are there?", view) == (
        "SELECT COUNT(*) AS count FROM public.opportunities AS t0 JOIN public.products AS t1"
        " ON t1.product_id = t0.product_id WHERE (t1.name = 'Security Suite')"
        " AND (NOT t0.stage IN ('Closed Won', 'Closed Lost'))"
    )


def test_a_question_is_remembered_for_its_tenant_only(view):
    """Issue 46: a question another tenant's request read must not be answered faster
    (the reading is the costly part of an offline answer)."""
    generator = OfflineGenerator()
    read = generator._read
    calls: list[str] = []

    def counting(question, schema, meanings=()):
        calls.append(question)
        return read(question, schema, meanings)

    generator._read = counting  # type: ignore[method-assign]

    def as_tenant(tenant: str) -> None:
        SqlEngine.check_tenant(tenant)
        assert generator.read("How many companies are there?", view).sql

    for tenant in ("victim", "victim", "attacker", "attacker"):
        contextvars.copy_context().run(as_tenant, tenant)
    assert len(calls) == 2
