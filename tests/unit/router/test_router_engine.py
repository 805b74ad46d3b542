"""The router's logic over plain fakes of the engines: modes, waves, replans, limits."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc
import pytest

from services.common import PermissionDenied, deadline_scope
from services.common.llm import Plan, PlanStep, ToolName
from services.router import (
    GuardrailSettings,
    Hit,
    Mode,
    Outcome,
    SearchOutcome,
    Status,
    ToolError,
)
from services.router._types import CitationKind, DeltaEvent, PlanEvent, StepStartedEvent
from tests.unit.router.fix_router import (
    INJECTED,
    FakeSearch,
    FakeSql,
    ScriptedPlanner,
    ask,
    make_router,
    statuses,
)

DOCS_IRRELEVANT = (Hit("x1", "dx", "Parking", "", "", "Parking is free on weekends.", 0.1),)
COMPOUND = "How many opportunities are there, and summarize the onboarding call notes?"


async def test_compound_question_runs_both_engines_in_parallel_and_cites_both():
    search, sql = FakeSearch(delay_s=0.05), FakeSql(delay_s=0.05)
    router = make_router(search, sql)
    answer = await router.ask(ask(COMPOUND), request_id="r1")
    assert answer.outcome is Outcome.ANSWERED
    assert answer.route.value == "compound"
    assert {r.tool for r in answer.trajectory} == {ToolName.SQL_QUESTION, ToolName.SEMANTIC_SEARCH}
    (_, s_start, s_end), (_, q_start, q_end) = search.calls[0], sql.calls[0]
    assert s_start < q_end and q_start < s_end  # overlapping: the same wave
    kinds = {c.kind for c in answer.citations}
    assert kinds == {CitationKind.PASSAGE, CitationKind.SQL_RESULT}
    assert any(c.sql_fingerprint == "fp-123" for c in answer.citations)
    for citation in answer.citations:
        start, end = citation.answer_span
        assert f"[{citation.passage_id}]" in answer.text[start:end]


async def test_countable_goes_to_sql_and_fuzzy_to_retrieval():
    search, sql = FakeSearch(), FakeSql()
    router = make_router(search, sql)
    counted = await router.ask(ask("How many opportunities are open?"), request_id="r")
    assert counted.route.value == "sql" and counted.question_class.value == "countable"
    assert sql.calls and not search.calls
    fuzzy = await router.ask(
        ask("Which accounts look like a good fit for healthcare?"), request_id="r"
    )
    assert fuzzy.route.value == "agentic" and fuzzy.question_class.value == "semantic"
    assert search.calls


async def test_retrieve_mode_uses_no_model_and_one_search():
    search = FakeSearch()
    answer = await make_router(search).ask(
        ask("healthcare clinics analytics", Mode.RETRIEVE), request_id="r"
    )
    assert len(search.calls) == 1
    assert answer.usage == ()
    assert answer.tool_calls == 1
    assert answer.citations


async def test_agentic_loop_rewrites_at_most_twice_then_says_not_found():
    search = FakeSearch(hits=DOCS_IRRELEVANT)
    answer = await make_router(search).ask(
        ask("What is the refund policy for wombats?", Mode.AGENTIC), request_id="r"
    )
    (run,) = answer.trajectory
    assert run.rewrites == 2 and run.attempts == 3 and len(search.calls) == 3
    assert answer.outcome is Outcome.NOT_FOUND
    assert "does not contain" in answer.text


async def test_failed_step_is_replanned_and_completed_step_never_rerun():
    plan = Plan(
        (
            PlanStep("s1", ToolName.SEMANTIC_SEARCH, "healthcare analytics clinics"),
            PlanStep("s2", ToolName.SQL_QUESTION, "broken count"),
        )
    )
    replan = Plan(
        (
            PlanStep("s1", ToolName.SEMANTIC_SEARCH, "healthcare analytics clinics"),
            PlanStep("s3", ToolName.SQL_QUESTION, "how many opportunities"),
        )
    )
    planner = ScriptedPlanner([plan], [replan])
    sql = FakeSql(
        fail_for=lambda q: (
            ToolError(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_INTENT", "sql")
            if "broken" in q
            else None
        )
    )
    search = FakeSearch()
    answer = await make_router(search, sql, planner).ask(ask("anything"), request_id="r")
    assert answer.replans == 1
    assert len(search.calls) == 1
    assert statuses(answer) == {"s1": "succeeded", "s2": "failed", "s3": "succeeded"}
    assert answer.outcome is Outcome.ANSWERED
    (request,) = planner.replan_requests
    assert request.failed_step_id == "s2"
    assert {o.step_id: o.succeeded for o in request.outcomes} == {"s1": True, "s2": False}
    assert answer.plan.revision == 1


async def test_two_failed_replans_give_a_partial_answer_with_disclaimer():
    def broken(step_id: str) -> Plan:
        return Plan((PlanStep(step_id, ToolName.SQL_QUESTION, f"broken {step_id}"),))

    plan = Plan(
        (
            PlanStep("s1", ToolName.SEMANTIC_SEARCH, "healthcare analytics clinics"),
            PlanStep("s2", ToolName.SQL_QUESTION, "broken s2"),
        )
    )
    planner = ScriptedPlanner([plan], [broken("s3"), broken("s4")])
    sql = FakeSql(fail_for=lambda q: ToolError(grpc.StatusCode.INTERNAL, "INTERNAL", "sql"))
    answer = await make_router(FakeSearch(), sql, planner).ask(ask("anything"), request_id="r")
    assert answer.replans == 2
    assert answer.outcome is Outcome.PARTIAL
    assert "s4" in answer.disclaimer and "replan" in answer.disclaimer
    assert 0 < answer.confidence <= 0.5
    assert {d.reason for d in answer.degradations} >= {"REPLAN_LIMIT_REACHED", "STEP_FAILED"}


async def test_invalid_plans_are_rejected_and_replaced():
    cyclic = Plan(
        (
            PlanStep("s1", ToolName.SEMANTIC_SEARCH, "a {{s2}}", ("s2",)),
            PlanStep("s2", ToolName.SEMANTIC_SEARCH, "b {{s1}}", ("s1",)),
        )
    )
    dangling = Plan((PlanStep("s1", ToolName.SEMANTIC_SEARCH, "a", ("s9",)),))
    search = FakeSearch()
    planner = ScriptedPlanner([cyclic, dangling])
    answer = await make_router(search, llm=planner).ask(
        ask("healthcare analytics clinics"), request_id="r"
    )
    # Both proposals rejected: the rule-based planner's plan ran instead.
    assert search.calls and answer.outcome is Outcome.ANSWERED


async def test_sql_steps_go_to_the_sql_service_as_questions():
    # One SQL engine: planners are offered no structured-intent tool, and a proposed
    # intent step is refused, so the SQL service links every SQL question itself.
    intent_plan = Plan((PlanStep("s1", ToolName.SQL_INTENT, "How many opportunities are open?"),))
    search, sql = FakeSearch(), FakeSql()
    planner = ScriptedPlanner([intent_plan, intent_plan])
    answer = await make_router(search, sql, llm=planner).ask(
        ask("How many opportunities are open?"), request_id="r"
    )
    offered = {tool for request in planner.plan_requests for tool in request.tools}
    assert offered == {ToolName.SEMANTIC_SEARCH, ToolName.SQL_QUESTION}
    assert [question for question, *_ in sql.calls] == ["How many opportunities are open?"]
    assert [r.tool for r in answer.trajectory] == [ToolName.SQL_QUESTION]
    assert answer.outcome is Outcome.ANSWERED


async def test_tool_call_cap_is_hard():
    search = FakeSearch(hits=DOCS_IRRELEVANT)
    answer = await make_router(search).ask(
        ask("What is the refund policy for wombats?", Mode.AGENTIC, max_tool_calls=2),
        request_id="r",
    )
    assert len(search.calls) == 2 and answer.tool_calls == 2
    assert any(d.reason == "TOOL_CALL_LIMIT_REACHED" for d in answer.degradations)


async def test_deadline_mid_plan_returns_finished_work_as_partial():
    search = FakeSearch(delay_s=5.0)
    sql = FakeSql()
    router = make_router(search, sql)
    with deadline_scope(0.6):
        answer = await router.ask(ask(COMPOUND), request_id="r")
    assert answer.outcome is Outcome.PARTIAL
    got = statuses(answer)
    assert Status.SUCCEEDED.value in got.values()
    assert any(v in ("cancelled", "timed_out") for v in got.values())
    assert any(c.kind is CitationKind.SQL_RESULT for c in answer.citations)
    assert any(d.reason == "DEADLINE_EXCEEDED" for d in answer.degradations)
    assert router.active_steps == 0


async def test_cancellation_stops_outstanding_steps():
    search = FakeSearch(delay_s=5.0)
    router = make_router(search)
    started = asyncio.Event()

    def emit(event: object) -> None:
        if isinstance(event, StepStartedEvent):
            started.set()

    task = asyncio.create_task(
        router.ask(ask("healthcare fit", Mode.AGENTIC), request_id="r", emit=emit)
    )
    await asyncio.wait_for(started.wait(), 2)
    assert router.active_steps == 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert router.active_steps == 0
    assert not search.calls  # the slow search never completed


async def test_injected_passage_is_quarantined_and_its_link_never_appears():
    search = FakeSearch(hits=(INJECTED, *FakeSearch().hits))
    answer = await make_router(search).ask(
        ask("healthcare clinics analytics", Mode.RETRIEVE), request_id="r"
    )
    report = answer.guardrails
    assert report.passages_quarantined == 1
    assert any(f.chunk_id == "c9" and f.quarantined for f in report.injection_findings)
    assert "evil.example.com" not in answer.text
    assert all(c.chunk_id != "c9" for c in answer.citations)


async def test_stream_events_come_in_order():
    events: list[object] = []
    await make_router().ask(ask(COMPOUND), request_id="r", emit=events.append)
    assert isinstance(events[0], PlanEvent)
    assert any(isinstance(e, DeltaEvent) for e in events)
    text = "".join(e.text for e in events if isinstance(e, DeltaEvent))
    assert text.strip()


async def test_a_retry_reusing_a_failed_id_gets_a_fresh_one():
    plan = Plan(
        (
            PlanStep("s1", ToolName.SQL_QUESTION, "broken count"),
            PlanStep("s2", ToolName.SEMANTIC_SEARCH, "notes for {{s1}}", ("s1",)),
        )
    )
    retry = Plan(
        (
            PlanStep("s1", ToolName.SQL_QUESTION, "how many opportunities"),
            PlanStep("s2", ToolName.SEMANTIC_SEARCH, "notes for {{s1}}", ("s1",)),
        )
    )
    sql = FakeSql(
        rows=(("Globex", 3),),
        fail_for=lambda q: (
            ToolError(grpc.StatusCode.INTERNAL, "INTERNAL", "sql") if "broken" in q else None
        ),
    )
    search = FakeSearch()
    planner = ScriptedPlanner([plan], [retry])
    answer = await make_router(search, sql, planner).ask(ask("anything"), request_id="r")
    assert statuses(answer) == {"s1": "failed", "s1-r1": "succeeded", "s2": "succeeded"}
    assert search.calls[0][0] == "notes for Globex"
    s2 = next(r for r in answer.trajectory if r.step_id == "s2")
    assert s2.step.depends_on == ("s1-r1",)


async def test_guardrail_layers_switch_off_for_measurement():
    search = FakeSearch(hits=(INJECTED, *FakeSearch().hits))
    router = make_router(
        search,
        guardrails=GuardrailSettings(injection_scan=False, output_check=False),
    )
    answer = await router.ask(ask("healthcare clinics analytics", Mode.RETRIEVE), request_id="r")
    report = answer.guardrails
    assert report.enabled_layers == ["FENCING", "RULE_RESTATEMENT", "CITATION_CHECK"]
    assert report.passages_scanned == 0 and report.passages_quarantined == 0


async def test_a_step_with_only_hostile_hits_still_reports_them():
    search = FakeSearch(hits=(INJECTED,))
    answer = await make_router(search).ask(
        ask("healthcare clinics analytics", Mode.AGENTIC), request_id="r"
    )
    assert answer.outcome is Outcome.NOT_FOUND
    assert answer.guardrails.passages_quarantined == 1
    assert [f.chunk_id for f in answer.guardrails.injection_findings if f.quarantined] == [
        "c9",
        "c9",
    ]


def _not_allowed(_question: str) -> Exception:
    return ToolError(grpc.StatusCode.PERMISSION_DENIED, "DATABASE_NOT_ALLOWED", "sql")


async def test_auto_without_a_database_answers_from_documents_and_says_why():
    # Every tenant but the demo one has no SQL database: a countable-sounding question
    # must not fail the whole Ask (it once returned PERMISSION_DENIED).
    router = make_router(FakeSearch(), FakeSql(fail_for=_not_allowed))
    answer = await router.ask(
        ask("How many clinics does Acme Health run for healthcare analytics?"), request_id="r"
    )
    assert answer.outcome is Outcome.ANSWERED
    assert {d.reason for d in answer.degradations} == {"NO_DATABASE"}
    assert [d.component for d in answer.degradations] == ["sql"]
    assert any(c.kind is CitationKind.PASSAGE for c in answer.citations)
    assert 0 < answer.confidence <= 0.5  # degraded: never reads as certain
    tools = [r.tool for r in answer.trajectory]
    assert tools == [ToolName.SQL_QUESTION, ToolName.SEMANTIC_SEARCH]


async def test_a_named_database_the_tenant_may_not_query_is_still_refused():
    router = make_router(FakeSearch(), FakeSql(fail_for=_not_allowed))
    with pytest.raises(PermissionDenied):
        await router.ask(
            ask("How many clinics does Acme run?", database="warehouse"),
            request_id="r",
            checked=True,
        )


async def test_a_failed_step_whose_replacement_answered_is_no_degradation():
    # A step that finds nothing is replaced by one that does: the answer is whole, so no
    # STEP_FAILED note rides on it (it once did, on correct answers).
    class NothingFor(FakeSearch):
        async def search(self, tenant_id: str, query: str, **kw: Any) -> SearchOutcome:
            outcome = await super().search(tenant_id, query, **kw)
            return SearchOutcome(()) if "nothing" in query else outcome

    plan = Plan((PlanStep("s1", ToolName.SEMANTIC_SEARCH, "nothing here"),))
    replacement = Plan((PlanStep("s2", ToolName.SEMANTIC_SEARCH, "onboarding call notes Globex"),))
    planner = ScriptedPlanner([plan], [replacement])
    router = make_router(NothingFor(), FakeSql(), planner, max_rewrites=0)
    answer = await router.ask(ask("onboarding call notes Globex"), request_id="r")
    assert answer.outcome is Outcome.ANSWERED
    assert statuses(answer) == {"s1": "empty", "s2": "succeeded"}
    assert answer.degradations == ()


async def test_a_failed_step_left_unreplaced_still_degrades_the_answer():
    plan = Plan((PlanStep("s1", ToolName.SEMANTIC_SEARCH, "onboarding call notes Globex"),
                 PlanStep("s2", ToolName.SQL_QUESTION, "broken")))  # fmt: skip
    sql = FakeSql(fail_for=lambda q: ToolError(grpc.StatusCode.INTERNAL, "INTERNAL", "sql"))
    answer = await make_router(FakeSearch(), sql, ScriptedPlanner([plan]), max_replans=0).ask(
        ask("onboarding call notes Globex"), request_id="r"
    )
    assert answer.outcome is Outcome.PARTIAL
    assert "STEP_FAILED" in {d.reason for d in answer.degradations}


async def test_with_the_database_down_an_answer_from_documents_never_reads_as_certain():
    # It once came back "answered, confidence 1.00" from unrelated sentences.
    down = FakeSql(fail_for=lambda q: ToolError(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE", "sql"))
    answer = await make_router(FakeSearch(), down).ask(
        ask("How many clinics does Acme Health run?"), request_id="r"
    )
    assert "SQL_UNAVAILABLE" in {d.reason for d in answer.degradations}
    assert answer.confidence <= 0.5


async def test_a_count_question_is_not_answered_with_a_number_of_something_else():
    # "how many employees" over a passage that counts clinics: refused, not a wrong number.
    down = FakeSql(fail_for=lambda q: ToolError(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE", "sql"))
    answer = await make_router(FakeSearch(), down).ask(
        ask("How many employees does Acme Health have?"), request_id="r"
    )
    assert not any(c.kind is CitationKind.PASSAGE for c in answer.citations)
    assert answer.outcome is not Outcome.ANSWERED


async def test_a_question_the_documents_cannot_answer_is_asked_of_the_records():
    """ "Which teachers teach Math?" has no countable cue and goes to the documents
    first; when they hold nothing, the records answer it."""
    sql = FakeSql(rows=(("Ms Smith",),))
    answer = await make_router(FakeSearch(hits=()), sql, max_rewrites=0).ask(
        ask("Which teachers teach Math?"), request_id="r"
    )
    assert [r.tool for r in answer.trajectory] == [
        ToolName.SEMANTIC_SEARCH,
        ToolName.SQL_QUESTION,
    ]
    assert [q for q, _, _ in sql.calls] == ["Which teachers teach Math?"]
    assert answer.outcome is Outcome.ANSWERED
    assert any(c.kind is CitationKind.SQL_RESULT for c in answer.citations)


async def test_the_records_tried_for_a_tenant_without_a_database_change_nothing(caplog):
    """No database to try is not a failure the answer reports: not found, as before, and
    the keyword search still gets its replan; the end of the chain logs no rejection."""
    caplog.set_level(logging.INFO, logger="tandem")
    search = FakeSearch(hits=())
    answer = await make_router(search, FakeSql(fail_for=_not_allowed), max_rewrites=0).ask(
        ask("Which teachers teach Math?"), request_id="r"
    )
    assert answer.outcome is Outcome.NOT_FOUND
    assert "NO_DATABASE" not in {d.reason for d in answer.degradations}
    assert [r.tool for r in answer.trajectory] == [
        ToolName.SEMANTIC_SEARCH,
        ToolName.SQL_QUESTION,
        ToolName.SEMANTIC_SEARCH,
    ]
    assert len(search.calls) == 2  # the question, then its keywords
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(r.getMessage() == "replan: no alternative" for r in caplog.records)
