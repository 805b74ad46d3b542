"""Questions the router declines before any plan: a request to change data on every mode
(the read-only answer, route SQL, never a document passage), and, with no model, a
question in a language the rules do not read — which goes to the model when one is
configured."""

from __future__ import annotations

from typing import Any

import pytest

from services.common.llm import FollowUpKind, Plan, PlanStep, PriorTurn, ToolName
from services.router import Mode, Outcome
from services.router._types import DeltaEvent, Hit, PlanEvent, Route
from tests.unit.router.fix_router import FakeSearch, FakeSql, ScriptedPlanner, ask, make_router

DELETE = "Delete all cancelled orders"


@pytest.mark.parametrize("mode", list(Mode))
async def test_a_request_to_change_data_gets_the_read_only_answer_on_every_mode(mode: Mode):
    search, sql = FakeSearch(), FakeSql()
    events: list[object] = []
    answer = await make_router(search, sql).ask(
        ask(DELETE, mode), request_id="r", emit=events.append
    )
    assert answer.outcome is Outcome.REFUSED and answer.refusal_reason == "SQL_READ_ONLY"
    assert answer.route is Route.SQL
    assert answer.text.startswith("Tandem never changes your data")
    assert '"How many cancelled orders are there?"' in answer.text
    # nothing searched or queried: no passage, no row can answer it
    assert not search.calls and not sql.calls and not answer.citations
    assert answer.tool_calls == 0 and not answer.trajectory
    # streamed as the answer text, with no plan
    assert [type(e) for e in events] == [DeltaEvent]
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == answer.text


@pytest.mark.parametrize(
    "question", ["How many orders were deleted?", "Which products were updated last week?"]
)
async def test_a_question_about_changes_is_planned_as_usual(question: str):
    sql = FakeSql()
    answer = await make_router(FakeSearch(), sql).ask(ask(question), request_id="r")
    assert answer.outcome is not Outcome.REFUSED and not answer.refusal_reason
    assert sql.calls or answer.trajectory


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Welches Produkt hat die größte Gesamtmenge?", "German (de)"),
        ("Quel produit a la plus grande quantité totale ?", "French (fr)"),
        ("合計数量が最も多い製品はどれですか", "Japanese (ja)"),
    ],
)
@pytest.mark.parametrize("mode", [Mode.AUTO, Mode.SQL])
async def test_offline_another_language_is_refused_naming_it(question: str, named: str, mode):
    search, sql = FakeSearch(), FakeSql()
    answer = await make_router(search, sql).ask(ask(question, mode), request_id="r")
    assert answer.outcome is Outcome.REFUSED
    assert answer.refusal_reason == "LANGUAGE_UNSUPPORTED"
    assert named in answer.text and "reads English" in answer.text
    assert not search.calls and not sql.calls and not answer.degradations


@pytest.mark.parametrize("mode", [Mode.RETRIEVE, Mode.AGENTIC])
async def test_offline_a_search_in_another_language_still_searches(mode: Mode):
    """RETRIEVE and AGENTIC search the documents as asked, once: they may be written in
    that language, and a German passage that answers is the answer."""
    german = Hit(
        "c9", "d9", "Bestellungen", "", "", "Es gibt 42 offene Bestellungen im Lager.", 0.9
    )
    search = FakeSearch(hits=(german,))
    answer = await make_router(search).ask(
        ask("Wie viele offene Bestellungen gibt es?", mode), request_id="r"
    )
    assert len(search.calls) == 1 and answer.outcome is Outcome.ANSWERED
    assert "42 offene Bestellungen" in answer.text


@pytest.mark.parametrize("mode", [Mode.RETRIEVE, Mode.AGENTIC])
async def test_offline_a_search_in_another_language_that_finds_nothing_names_it(mode: Mode):
    """Nothing in the question's words: one line naming the language, not a failed step."""
    search = FakeSearch()
    answer = await make_router(search).ask(
        ask("Wie viele Bestellungen gibt es?", mode), request_id="r"
    )
    assert len(search.calls) == 1
    assert answer.outcome is Outcome.REFUSED and answer.refusal_reason == "LANGUAGE_UNSUPPORTED"
    assert "German (de)" in answer.text and not answer.degradations


class _Model(ScriptedPlanner):
    """A configured model (any name but the rules'), planning from a script."""

    @property
    def name(self) -> str:
        return "scripted-model"


async def test_with_a_model_another_language_goes_to_the_model():
    model = _Model([Plan((PlanStep("s1", ToolName.SQL_QUESTION, "Wie viele Bestellungen?"),))])
    sql = FakeSql()
    answer = await make_router(FakeSearch(), sql, llm=model).ask(
        ask("Wie viele Bestellungen gibt es?"), request_id="r"
    )
    assert model.plan_requests and sql.calls
    assert answer.outcome is Outcome.ANSWERED and not answer.refusal_reason


async def test_with_a_model_a_request_to_change_data_is_still_declined():
    model = _Model([Plan((PlanStep("s1", ToolName.SEMANTIC_SEARCH, DELETE),))])
    search = FakeSearch()
    events: list[Any] = []
    answer = await make_router(search, llm=model).ask(
        ask(DELETE), request_id="r", emit=events.append
    )
    assert answer.refusal_reason == "SQL_READ_ONLY" and not model.plan_requests
    assert not search.calls and not any(isinstance(e, PlanEvent) for e in events)


async def test_a_request_to_change_what_an_earlier_answer_listed_needs_no_resolving():
    """ "Delete them" after a list: declined whatever "them" points at, never reported
    as a reference to nothing."""
    router = make_router()
    history = (PriorTurn("Which orders were cancelled?", "Which orders were cancelled?"),)
    resolved = await router.follow_ups.resolve("Delete them", history)
    assert resolved.resolution.kind is FollowUpKind.STANDALONE
    assert resolved.resolution.question == "Delete them"
