"""Scoped steps: a set from SQL, one search per member kept to its documents, and an
answer that names who does and who does not mention the topic."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from services.common.llm import PlanStep, StepScope, ToolName
from services.router import (
    Hit,
    Outcome,
    Router,
    RouterSettings,
    SearchOutcome,
    SqlOutcome,
    ToolError,
)
from services.router._plan import PlanInvalid, rename, validate
from services.router._types import CitationKind
from services.router.offline import DeterministicProvider
from tests.unit.router.fix_router import ask

QUESTION = (
    "Which of our top 3 accounts by open pipeline mention a security review in their call notes?"
)
ROWS = (("Acme", 7, 900.0), ("Globex", 3, 800.0), ("Initech", 9, 700.0))


def _note(company_id: int, text: str) -> Hit:
    return Hit(
        f"c{company_id}", f"calls-{company_id}", f"Call notes {company_id}", "", "", text, 0.5
    )


NOTES = {
    7: _note(7, "Acme's security team opened a formal security review of our proposal."),
    3: _note(3, "Globex asked about pricing for the second year and onboarding time."),
    9: _note(9, "Initech wants the Security Reviews finished before the pilot starts."),
}


@dataclass
class RankedSql:
    """Returns the ranked set, with or without the id column."""

    columns: tuple[str, ...] = ("name", "company_id", "sum_amount")
    rows: tuple[tuple[Any, ...], ...] = ROWS
    calls: list[str] = field(default_factory=list)

    async def ask(self, tenant_id: str, database: str, question: str, **_: Any) -> SqlOutcome:
        self.calls.append(question)
        return SqlOutcome(self.columns, self.rows, "fp-top", "top accounts")

    async def check_database(self, tenant_id: str, database: str) -> None:
        return None


@dataclass
class PerCompanySearch:
    """Hits only from the documents the metadata filter allows."""

    notes: dict[int, Hit] = field(default_factory=lambda: dict(NOTES))
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def search(self, tenant_id: str, query: str, **kwargs: Any) -> SearchOutcome:
        self.calls.append({"query": query, **kwargs})
        metadata = kwargs.get("metadata") or {}
        if "company_id" in metadata:
            hit = self.notes.get(int(metadata["company_id"]))
        else:
            names = {"Acme": 7, "Globex": 3, "Initech": 9}
            hit = self.notes.get(names.get(str(metadata.get("company")), -1))
        return SearchOutcome((hit,) if hit else ())


def make_router(search: PerCompanySearch, sql: RankedSql) -> Router:
    return Router(RouterSettings(), search=search, sql=sql, llm=DeterministicProvider())


def _sentence(text: str, start: str) -> str:
    (found,) = [s for s in re.split(r"(?<=[.!?])(?:\s*\[\d+\])*\s+", text) if s.startswith(start)]
    return found


async def test_each_member_is_searched_on_its_own_documents_after_the_set():
    sql, search = RankedSql(), PerCompanySearch()
    answer = await make_router(search, sql).ask(ask(QUESTION), request_id="r")

    assert answer.outcome is Outcome.ANSWERED and answer.route.value == "compound"
    assert sql.calls == ["What are our top 3 accounts by open pipeline?"]
    assert [c["metadata"] for c in search.calls] == [
        {"company_id": 7},
        {"company_id": 3},
        {"company_id": 9},
    ]
    assert all(c["categories"] == ("call_note",) for c in search.calls)
    assert all(c["query"] == "security review" for c in search.calls)
    s1, s2 = answer.trajectory
    assert s2.step.depends_on == (s1.step_id,) and s2.wave > s1.wave
    assert "scope=company_id" in s2.argument_summary and "entities=3" in s2.argument_summary
    assert answer.tool_calls == 4

    says = _sentence(answer.text, "Of these 3,")
    assert "Acme" in says and "Initech" in says and "Globex" not in says
    assert "Globex does not mention a security review" in answer.text
    kinds = {c.kind for c in answer.citations}
    assert kinds == {CitationKind.PASSAGE, CitationKind.SQL_RESULT}
    assert {c.document_id for c in answer.citations if c.kind is CitationKind.PASSAGE} == {
        "calls-7",
        "calls-9",
    }
    assert not answer.guardrails.unsupported_sentences


async def test_rows_without_the_id_column_scope_by_name():
    sql = RankedSql(columns=("name", "sum_amount"), rows=tuple((r[0], r[2]) for r in ROWS))
    search = PerCompanySearch()
    answer = await make_router(search, sql).ask(ask(QUESTION), request_id="r")
    assert [c["metadata"] for c in search.calls] == [
        {"company": "Acme"},
        {"company": "Globex"},
        {"company": "Initech"},
    ]
    assert "Acme and Initech mention a security review" in answer.text


async def test_a_member_without_documents_is_reported_as_unread_not_as_silent():
    search = PerCompanySearch(notes={7: NOTES[7], 9: NOTES[9]})
    answer = await make_router(search, RankedSql()).ask(ask(QUESTION), request_id="r")
    assert "No call notes were found for Globex." in answer.text
    assert "does not mention" not in answer.text


async def test_the_tool_call_cap_limits_the_members_searched_and_says_so():
    search = PerCompanySearch()
    answer = await make_router(search, RankedSql()).ask(
        ask(QUESTION, max_tool_calls=3), request_id="r"
    )
    assert len(search.calls) == 2 and answer.tool_calls == 3
    assert answer.outcome is Outcome.PARTIAL
    assert "TOOL_CALL_LIMIT_REACHED" in {d.reason for d in answer.degradations}


SCOPE = StepScope("s1", "company_id", "company", ("call_note",), "call notes", True, "x")


def test_validation_checks_the_scope():
    sql = PlanStep("s1", ToolName.SQL_QUESTION, "top accounts")
    ok = PlanStep("s2", ToolName.SEMANTIC_SEARCH, "x", ("s1",), scope=SCOPE)
    validate([sql, ok], completed={}, max_steps=6, tools=list(ToolName))
    bad = [
        PlanStep("s2", ToolName.SEMANTIC_SEARCH, "x", (), scope=SCOPE),
        PlanStep("s2", ToolName.SQL_QUESTION, "x", ("s1",), scope=SCOPE),
        PlanStep(
            "s2",
            ToolName.SEMANTIC_SEARCH,
            "x",
            ("s1",),
            scope=StepScope("s1", "company id; drop", ""),
        ),
    ]
    for step in bad:
        with pytest.raises(PlanInvalid):
            validate([sql, step], completed={}, max_steps=6, tools=list(ToolName))


def test_renaming_a_source_step_follows_into_the_scope():
    step = PlanStep("s2", ToolName.SEMANTIC_SEARCH, "x", ("s1",), scope=SCOPE)
    renamed = rename(step, {"s1": "s1-r2"})
    assert renamed.depends_on == ("s1-r2",)
    assert renamed.scope is not None and renamed.scope.source == "s1-r2"


@dataclass
class FailingForGlobex(PerCompanySearch):
    async def search(self, tenant_id: str, query: str, **kwargs: Any) -> SearchOutcome:
        if (kwargs.get("metadata") or {}).get("company_id") == 3:
            self.calls.append({"query": query, **kwargs})
            raise ToolError(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE", "retrieval")
        return await super().search(tenant_id, query, **kwargs)


async def test_one_failing_member_search_fails_the_step_visibly_not_the_request():
    search = FailingForGlobex()
    answer = await make_router(search, RankedSql()).ask(ask(QUESTION), request_id="r")
    assert answer.outcome is Outcome.PARTIAL
    assert "RETRIEVAL_UNAVAILABLE" in {d.reason for d in answer.degradations}
    assert "Partial answer" in answer.disclaimer
