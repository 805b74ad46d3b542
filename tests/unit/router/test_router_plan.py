"""Plan validation, wave assignment and binding earlier results into later steps."""

from __future__ import annotations

import pytest

from services.common.llm import PlanStep, ToolName
from services.router import PlanInvalid, Status, assign_waves, bind, validate
from services.router._plan import TOOLS, answered_route
from services.router._types import Hit, Route, SqlOutcome, StepRun

SEARCH = ToolName.SEMANTIC_SEARCH
SQL = ToolName.SQL_QUESTION


def _validate(*steps: PlanStep, completed: dict[str, StepRun] | None = None) -> None:
    validate(steps, completed=completed or {}, max_steps=4, tools=TOOLS)


def test_a_valid_plan_with_a_dependency_passes():
    steps = (
        PlanStep("s1", SQL, "which company has the most open deals"),
        PlanStep("s2", SEARCH, "last call notes for {{s1}}", ("s1",)),
    )
    _validate(*steps)  # raises PlanInvalid otherwise
    assert assign_waves(list(steps)) == {"s1": 0, "s2": 1}


@pytest.mark.parametrize(
    ("steps", "rule"),
    [
        ((), "empty"),
        (tuple(PlanStep(f"s{i}", SEARCH, "q") for i in range(5)), "cap"),
        ((PlanStep("s1", SEARCH, "q"), PlanStep("s1", SQL, "q")), "duplicate"),
        ((PlanStep("s1", SEARCH, "q", ("s2",)), PlanStep("s2", SEARCH, "q", ("s1",))), "later"),
        ((PlanStep("s1", SEARCH, "q", ("s9",)),), "unknown"),
        # The router never runs structured intents: the SQL service links questions.
        ((PlanStep("s1", ToolName.SQL_INTENT, "count"),), "not allowed"),
        ((PlanStep("s1", SEARCH, "   "),), "empty query"),
        ((PlanStep("s1", SQL, "q"), PlanStep("s2", SEARCH, "notes {{s1}}")), "binds"),
        ((PlanStep("bad id!", SEARCH, "q"),), "malformed"),
    ],
)
def test_invalid_plans_are_rejected_naming_the_rule(steps, rule):
    with pytest.raises(PlanInvalid, match=rule):
        _validate(*steps)


def test_a_tool_not_offered_is_rejected():
    with pytest.raises(PlanInvalid, match="not allowed"):
        validate([PlanStep("s1", SQL, "q")], completed={}, max_steps=4, tools=(SEARCH,))


def test_replanned_steps_may_depend_on_completed_ones():
    done = StepRun(PlanStep("s1", SQL, "q"), revision=0, wave=0, status=Status.SUCCEEDED)
    step = PlanStep("s3", SEARCH, "notes for {{s1}}", ("s1",))
    _validate(step, completed={"s1": done})  # raises PlanInvalid otherwise
    # The completed run is what makes it valid: without it, s1 is unknown.
    with pytest.raises(PlanInvalid, match="unknown"):
        _validate(step)


def test_waves_put_independent_steps_together_and_dependents_after():
    steps = [
        PlanStep("s1", SQL, "a"),
        PlanStep("s2", SEARCH, "b"),
        PlanStep("s3", SEARCH, "c {{s1}}", ("s1",)),
        PlanStep("s4", SEARCH, "d {{s3}}", ("s3", "s2")),
    ]
    assert assign_waves(steps) == {"s1": 0, "s2": 0, "s3": 1, "s4": 2}
    assert assign_waves(steps[:1], offset=2) == {"s1": 2}


def test_bind_uses_the_top_sql_label_or_the_top_hit_title():
    sql_run = StepRun(PlanStep("s1", SQL, "q"), 0, 0, status=Status.SUCCEEDED)
    sql_run.sql = SqlOutcome(("name", "open_deals"), (("Globex", 7), ("Acme", 3)), "fp", "d")
    hit_run = StepRun(PlanStep("s2", SEARCH, "q"), 0, 0, status=Status.SUCCEEDED)
    hit_run.hits = (Hit("c", "d", "Meridian brief", "", "", "text", 1.0),)
    step = PlanStep("s3", SEARCH, "call notes for {{s1}} and {{ s2 }}", ("s1", "s2"))
    bound = bind(step, {"s1": sql_run, "s2": hit_run})
    assert bound.query == "call notes for Globex and Meridian brief"


def _runs(sql_rows: bool, sql_status: Status, hits: bool) -> list[StepRun]:
    sql_run = StepRun(PlanStep("s1", SQL, "q"), 0, 0, status=sql_status)
    if sql_rows:
        sql_run.sql = SqlOutcome(("version",), (("12",),), "fp", "d")
    search = StepRun(PlanStep("s1r1", SEARCH, "q"), 1, 0, status=Status.SUCCEEDED)
    search.hits = (Hit("c", "d", "releases", "", "slide 2", "| 4 | 12 | bookworm |", 1.0),) * hits
    return [sql_run, search]


def test_an_auto_answer_found_in_the_documents_reports_the_documents_route():
    # the SQL side could not link the question (failed or empty); the slides answered
    for status in (Status.FAILED, Status.EMPTY):
        assert answered_route(Route.SQL, _runs(False, status, hits=True)) is Route.AGENTIC
    # rows from SQL, or no passages in their stead: the SQL route stands
    assert answered_route(Route.SQL, _runs(True, Status.SUCCEEDED, hits=True)) is Route.SQL
    assert answered_route(Route.SQL, _runs(False, Status.FAILED, hits=False)) is Route.SQL
    # other routes are what they were planned as
    assert answered_route(Route.COMPOUND, _runs(False, Status.FAILED, True)) is Route.COMPOUND
