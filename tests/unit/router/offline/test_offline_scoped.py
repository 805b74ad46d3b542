"""The set-then-documents plan: "which of <a set the warehouse lists> mention <topic> in
<their documents>" and "for <the top entity>, summarise its <documents>" become SQL for the
set, then a search per member kept to that member's documents."""

from __future__ import annotations

import pytest

from services.common.llm import (
    MemberEvidence,
    MentionCheck,
    Passage,
    PlanRequest,
    QuestionClass,
    RouteRequest,
    ToolName,
)
from services.router.offline import DeterministicProvider
from services.router.offline._extractive import mention_sentences, topic_pattern
from services.router.offline._rules import classify, scoped_question


def test_a_plural_set_searches_each_member_without_the_first_ones_name():
    scoped = scoped_question(
        "For each of our top 3 accounts by open pipeline, summarise their call notes"
    )
    assert scoped is not None
    assert scoped.set_question == "What are our top 3 accounts by open pipeline?"
    assert scoped.search == "summarise their call notes" and scoped.categories == ("call_note",)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Which of our top 5 accounts by open pipeline mention a security review in "
            "their call notes?",
            (
                "What are our top 5 accounts by open pipeline?",
                "security review",
                "company",
                ("call_note",),
                "a security review",
            ),
        ),
        (
            "which of the 10 largest deals discuss pricing concerns in their call notes",
            (
                "What are the 10 largest deals?",
                "pricing concerns",
                "opportunity",
                ("call_note",),
                "pricing concerns",
            ),
        ),
        (
            "Do any of our top 3 customers by annual revenue talk about data residency in "
            "their account briefs?",
            (
                "What are our top 3 customers by annual revenue?",
                "data residency",
                "company",
                ("account_brief",),
                "data residency",
            ),
        ),
        (
            "Among the 5 companies with the most open deals, which ones mention SSO?",
            ("What are the 5 companies with the most open deals?", "SSO", "company", (), "SSO"),
        ),
        (
            "Which of our top 5 accounts have call notes that mention a security review?",
            (
                "What are our top 5 accounts?",
                "security review",
                "company",
                ("call_note",),
                "a security review",
            ),
        ),
        (
            "For the company with the most open deals, summarise its last call notes",
            (
                "Which company has the most open deals?",
                "summarise its last call notes for {{s}}",
                "company",
                ("call_note",),
                "",
            ),
        ),
    ],
)
def test_scoped_readings(question, expected):
    scoped = scoped_question(question)
    assert scoped is not None
    got = (scoped.set_question, scoped.search, scoped.entity, scoped.categories, scoped.topic)
    assert got == expected
    assert classify(question) is QuestionClass.COMPOUND


@pytest.mark.parametrize(
    "question",
    [
        # the set is documents, not something the warehouse lists
        "Which of our policies mention discounts?",
        "Which of the account briefs mention healthcare?",
        "Which of these documents mention a security review?",
        # no mention of documents at all, or no set
        "Which of our top 5 accounts by open pipeline are in healthcare?",
        "What are the top 5 accounts by open pipeline?",
        "Which accounts look like a good fit for healthcare?",
        "What do call notes say about security reviews?",
        # a task that reads no documents
        "For the company with the most open deals, how many contacts do we have?",
        # a set without an entity, or a reading cue inside the set
        "Which of the top 5 stages mention pricing?",
        "Which of the accounts that look like a fit mention SSO in their call notes?",
        # compound questions keep their own decomposition
        "How many open opportunities are there, and what do call notes say about security reviews?",
    ],
)
def test_not_scoped(question):
    assert scoped_question(question) is None


async def test_the_headline_plan_is_sql_then_a_scoped_search():
    plan = (
        await DeterministicProvider().plan(
            PlanRequest(
                "Which of our top 5 accounts by open pipeline mention a security review in "
                "their call notes?"
            )
        )
    ).output
    s1, s2 = plan.steps
    assert (s1.id, s1.tool, s1.depends_on) == ("s1", ToolName.SQL_QUESTION, ())
    assert s1.query == "What are our top 5 accounts by open pipeline?"
    assert (s2.tool, s2.query, s2.depends_on) == (
        ToolName.SEMANTIC_SEARCH,
        "security review",
        ("s1",),
    )
    assert s2.scope is not None
    assert (s2.scope.source, s2.scope.field, s2.scope.label_field) == (
        "s1",
        "company_id",
        "company",
    )
    assert s2.scope.categories == ("call_note",) and s2.scope.check_mention
    route = (await DeterministicProvider().route(RouteRequest(plan.steps[0].query))).output
    assert route.question_class is QuestionClass.AGGREGATION


async def test_the_issue_example_binds_the_top_entity_into_its_notes_search():
    plan = (
        await DeterministicProvider().plan(
            PlanRequest("For the company with the most open deals, summarise its last call notes")
        )
    ).output
    s1, s2 = plan.steps
    assert s1.tool is ToolName.SQL_QUESTION and s1.query == "Which company has the most open deals?"
    assert s2.query == "summarise its last call notes for {{s1}}"
    assert s2.scope is not None and not s2.scope.check_mention


async def test_without_search_or_with_one_step_the_scoped_plan_is_not_used():
    question = "Which of our top 5 accounts mention SSO in their call notes?"
    only_sql = (
        await DeterministicProvider().plan(PlanRequest(question, tools=(ToolName.SQL_QUESTION,)))
    ).output
    assert all(s.scope is None for s in only_sql.steps)
    one = (await DeterministicProvider().plan(PlanRequest(question, max_steps=1))).output
    assert len(one.steps) == 1 and one.steps[0].scope is None


def test_topic_pattern_matches_word_forms_in_order_only():
    pattern = topic_pattern("a security review")
    assert pattern.search("They opened a Security Review today.")
    assert pattern.search("security-reviews are pending")
    assert not pattern.search("a review of security questionnaires")
    assert not pattern.search("security questionnaire, then a review")


def test_mention_sentences_split_the_set_three_ways():
    check = MentionCheck(
        "a security review",
        "call notes",
        (
            MemberEvidence("Acme", "1", ("2",)),
            MemberEvidence("Globex", "1", ("3",)),
            MemberEvidence("Initech", "1", ()),
        ),
    )
    passages = (
        Passage("2", "Acme opened a security review last week.", "Call notes: Acme"),
        Passage("3", "Globex asked about pricing.", "Call notes: Globex"),
    )
    sentences = mention_sentences(check, passages)
    texts = [s.text for s in sentences]
    assert texts[0] == "Of these 3, Acme mentions a security review in their call notes."
    assert sentences[0].citations == ("2",)
    assert "Globex does not mention a security review" in texts[1]
    assert texts[2] == "No call notes were found for Initech."
    assert sentences[1].citations == sentences[2].citations == ("1",)
    assert texts[3] == "Acme opened a security review last week."


def test_mention_sentences_when_nobody_mentions_it():
    check = MentionCheck("SSO", "call notes", (MemberEvidence("Globex", "1", ("3",)),))
    (sentence,) = mention_sentences(check, (Passage("3", "Pricing only.", ""),))
    assert sentence.text == "None of these 1 mention SSO in their call notes."
    assert sentence.citations == ("1",)
