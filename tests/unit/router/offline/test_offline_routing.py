"""Deterministic route, plan and replan: table-driven over realistic question variants."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from services.common.llm import (
    Plan,
    PlanRequest,
    PlanStep,
    QuestionClass,
    ReplanRequest,
    RouteAction,
    RouteRequest,
    StepOutcome,
    Tier,
    ToolName,
)
from services.router.offline import DeterministicProvider
from tests.unit.llm.fix_crm import CRM

AGG = QuestionClass.AGGREGATION
SEM = QuestionClass.SEMANTIC
COMP = QuestionClass.COMPOUND
CONV = QuestionClass.CONVERSATIONAL

# (question, expected class); every non-conversational question retrieves.
ROUTE_CASES: list[tuple[str, QuestionClass]] = [
    ("how many deals closed last quarter?", AGG),
    ("HOW MANY DEALS CLOSED LAST QUARTER", AGG),
    ("How many opportunities did we close in the previous quarter?", AGG),
    ("number of deals closed last qtr", AGG),
    ("top ten opportunities by score", AGG),
    ("Top 10 deals ranked by score please", AGG),
    ("average deal amount by industry", AGG),
    ("whats the avg deal size per region", AGG),
    ("total pipeline value in EMEA", AGG),
    ("deals over $50k closing this quarter", AGG),
    ("which company has the most employees", AGG),
    ("list all products sorted by price", AGG),
    # a grouping word ending the clause, whatever the word: no list of the demo's columns
    ("shipments by warehouse", AGG),
    ("Show revenue by channel, please", AGG),
    ("how many oportunites are in negotation", AGG),
    ("Which accounts look like a good fit for healthcare?", SEM),
    ("What did Globex say about pricing in the last call?", SEM),
    ("Summarize the security policy", SEM),
    ("summarise our refund policy", SEM),
    ("why did we lose the Umbrella deal", SEM),
    ("tell me about Initech", SEM),
    ("what are the key features of Insight Analytics", SEM),
    ("Show me the most important risks for Acme", SEM),
    ("explain how the discount approval process works", SEM),
    ("which customers are similar to Acme", SEM),
    ("Compare Acme and Globex", COMP),
    ("compare the number of open deals for Acme and Globex", COMP),
    ("Acme vs Globex on pricing concerns", COMP),
    ("List the top 5 deals and describe the main objections in their call notes", COMP),
    ("How many contacts do we have at Initech? What were their main concerns?", COMP),
    (
        "Which healthcare companies have open deals, and for the one with the most "
        "employees, summarize the latest call notes",
        COMP,
    ),
    ("what's the difference between Shield Security and Core Platform", COMP),
    ("hi there!", CONV),
    ("Thanks!", CONV),
    ("what can you do?", CONV),
    ("Hello", CONV),
]


@pytest.mark.parametrize(("question", "expected"), ROUTE_CASES, ids=[q for q, _ in ROUTE_CASES])
async def test_route(
    deterministic: DeterministicProvider, question: str, expected: QuestionClass
) -> None:
    result = await deterministic.route(RouteRequest(question))
    decision = result.output
    assert decision.question_class is expected
    if expected is CONV:
        assert decision.action is RouteAction.RESPOND and decision.answer
    else:
        assert decision.action is RouteAction.RETRIEVE and decision.search_query
    assert result.usage.tier is Tier.FAST and result.usage.cost_usd == 0.0


@pytest.mark.parametrize(
    ("question", "query"),
    [
        (
            "Can you please tell me what Globex said about pricing?",
            "what Globex said about pricing?",
        ),
        ("hey, show me the refund policy", "the refund policy"),
        ("I want to know which accounts churned", "which accounts churned"),
    ],
)
async def test_route_search_query_drops_lead_ins(
    deterministic: DeterministicProvider, question: str, query: str
) -> None:
    result = await deterministic.route(RouteRequest(question))
    assert result.output.search_query == query


@dataclass(frozen=True)
class StepSpec:
    tool: ToolName
    query: str
    depends_on: tuple[str, ...] = ()


PLAN_CASES: list[tuple[str, list[StepSpec]]] = [
    (
        "how many deals closed last quarter?",
        [StepSpec(ToolName.SQL_QUESTION, "how many deals closed last quarter?")],
    ),
    (
        "Which accounts look like a good fit for healthcare?",
        [StepSpec(ToolName.SEMANTIC_SEARCH, "Which accounts look like a good fit for healthcare?")],
    ),
    (
        "Compare Acme and Globex",
        [
            StepSpec(ToolName.SEMANTIC_SEARCH, "Tell me about Acme"),
            StepSpec(ToolName.SEMANTIC_SEARCH, "Tell me about Globex"),
        ],
    ),
    (
        "Compare the number of open deals for Acme and Globex",
        [
            StepSpec(ToolName.SQL_QUESTION, "the number of open deals for Acme"),
            StepSpec(ToolName.SQL_QUESTION, "the number of open deals for Globex"),
        ],
    ),
    (
        "acme versus globex on pricing concerns",
        [
            StepSpec(ToolName.SEMANTIC_SEARCH, "pricing concerns for acme"),
            StepSpec(ToolName.SEMANTIC_SEARCH, "pricing concerns for globex"),
        ],
    ),
    (
        "List the top 5 deals and describe the main objections in their call notes",
        [
            StepSpec(ToolName.SQL_QUESTION, "List the top 5 deals"),
            StepSpec(
                ToolName.SEMANTIC_SEARCH,
                "describe the main objections in their call notes for {{s1}}",
                ("s1",),
            ),
        ],
    ),
    (
        "Show deals by stage, and also summarize the renewal policy",
        [
            StepSpec(ToolName.SQL_QUESTION, "Show deals by stage"),
            StepSpec(ToolName.SEMANTIC_SEARCH, "summarize the renewal policy"),
        ],
    ),
    (
        "How many contacts do we have at Initech? What were their main concerns?",
        [
            StepSpec(
                ToolName.SQL_QUESTION,
                "How many contacts do we have at Initech?",
            ),
            StepSpec(ToolName.SEMANTIC_SEARCH, "What were their main concerns for {{s1}}", ("s1",)),
        ],
    ),
    (
        "Which healthcare companies have open deals, and for the one with the most "
        "employees, summarize the latest call notes",
        [
            StepSpec(
                ToolName.SQL_QUESTION,
                "Which healthcare companies have open deals with the most employees",
            ),
            StepSpec(
                ToolName.SEMANTIC_SEARCH, "summarize the latest call notes for {{s1}}", ("s1",)
            ),
        ],
    ),
    (
        "list the top deals, and for the top one, what did the buyer say about price?",
        [
            StepSpec(ToolName.SQL_QUESTION, "list the top deals"),
            StepSpec(
                ToolName.SEMANTIC_SEARCH,
                "what did the buyer say about price? for {{s1}}",
                ("s1",),
            ),
        ],
    ),
]


@pytest.mark.parametrize(("question", "steps"), PLAN_CASES, ids=[q for q, _ in PLAN_CASES])
async def test_plan(
    deterministic: DeterministicProvider, question: str, steps: list[StepSpec]
) -> None:
    # A schema changes nothing: SQL parts go to the SQL service as questions, which links
    # them itself (the planner builds no intents).
    for request in (PlanRequest(question), PlanRequest(question, schema=CRM)):
        result = await deterministic.plan(request)
        got = [StepSpec(s.tool, s.query, s.depends_on) for s in result.output.steps]
        assert got == steps
        assert all(s.intent is None for s in result.output.steps)
        assert [s.id for s in result.output.steps] == [f"s{i}" for i in range(1, len(steps) + 1)]
        assert result.usage.tier is Tier.STRONG


async def test_plan_with_only_search_uses_search(deterministic: DeterministicProvider) -> None:
    only_search = await deterministic.plan(
        PlanRequest("how many deals closed?", tools=(ToolName.SEMANTIC_SEARCH,))
    )
    assert [s.tool for s in only_search.output.steps] == [ToolName.SEMANTIC_SEARCH]


async def test_plan_for_small_talk_is_empty(deterministic: DeterministicProvider) -> None:
    result = await deterministic.plan(PlanRequest("thanks!"))
    assert result.output.steps == ()


PLAN = Plan(
    (
        PlanStep("s1", ToolName.SQL_INTENT, "top 5 deals"),
        PlanStep("s2", ToolName.SEMANTIC_SEARCH, "pricing policy"),
        PlanStep("s3", ToolName.SEMANTIC_SEARCH, "call notes for {{s1}}", ("s1",)),
    )
)


@pytest.mark.parametrize(
    ("failed", "done", "expected"),
    [
        (
            "s1",
            (),
            [
                ("s1r1", ToolName.SQL_QUESTION, "top 5 deals", ()),
                ("s2", ToolName.SEMANTIC_SEARCH, "pricing policy", ()),
                ("s3", ToolName.SEMANTIC_SEARCH, "call notes for {{s1r1}}", ("s1r1",)),
            ],
        ),
        (
            "s2",
            ("s1",),
            [
                ("s2r1", ToolName.SQL_QUESTION, "pricing policy", ()),
                ("s3", ToolName.SEMANTIC_SEARCH, "call notes for {{s1}}", ("s1",)),
            ],
        ),
        (
            "s3",
            ("s1", "s2"),
            [("s3r1", ToolName.SEMANTIC_SEARCH, "call notes meeting memo writeup {{s1}}", ("s1",))],
        ),
    ],
    ids=["intent-to-sql-question", "own-search-to-the-records", "dependent-search-rewritten"],
)
async def test_replan_keeps_completed_work(
    deterministic: DeterministicProvider,
    failed: str,
    done: tuple[str, ...],
    expected: list[tuple[str, ToolName, str, tuple[str, ...]]],
) -> None:
    outcomes = (
        *(StepOutcome(d, True) for d in done),
        StepOutcome(failed, False, "gate rejected"),
    )
    result = await deterministic.replan(ReplanRequest("q", PLAN, outcomes, failed))
    got = [(s.id, s.tool, s.query, s.depends_on) for s in result.output.steps]
    assert got == expected
    assert not {s.id for s in result.output.steps} & set(done)


async def test_a_search_the_records_could_not_answer_either_is_retried_as_keywords(
    deterministic: DeterministicProvider,
) -> None:
    """Documents, then the records, then the documents again by keywords; then no more.
    Each request carries the current steps and every finished one's outcome, as the
    engine sends them."""
    first = StepOutcome("s1", False, "empty")
    records = StepOutcome("s1r1", False, "unanswerable")
    current = Plan((PlanStep("s1r1", ToolName.SQL_QUESTION, "pricing policy"),))
    result = await deterministic.replan(ReplanRequest("q", current, (first, records), "s1r1"))
    got = [(s.id, s.tool, s.query) for s in result.output.steps]
    assert got == [("s1r2", ToolName.SEMANTIC_SEARCH, "pricing policy cost guideline rule")]
    keywords = StepOutcome("s1r2", False, "empty")
    result = await deterministic.replan(
        ReplanRequest("q", result.output, (first, records, keywords), "s1r2")
    )
    assert result.output.steps == ()


async def test_replan_gives_up_after_a_rewritten_search_fails(
    deterministic: DeterministicProvider,
) -> None:
    plan = Plan(
        (
            PlanStep("s1", ToolName.SEMANTIC_SEARCH, "pricing"),
            PlanStep("s1r1", ToolName.SEMANTIC_SEARCH, "pricing cost"),
            PlanStep("s2", ToolName.SEMANTIC_SEARCH, "notes for {{s1r1}}", ("s1r1",)),
        )
    )
    outcomes = (StepOutcome("s1", False, "empty"), StepOutcome("s1r1", False, "empty"))
    result = await deterministic.replan(ReplanRequest("q", plan, outcomes, "s1r1"))
    assert result.output.steps == ()
    assert "No alternative" in result.output.rationale
