"""A dependent plan over real engines: the demo warehouse lists a set (SQL), then each
member's own call notes are searched (retrieval, filtered on the member's company id), and
the answer names who does and who does not mention the topic, citing both engines."""

from __future__ import annotations

import re
from typing import Any

import pytest

from services.demo import (
    CALL_NOTE,
    COMPOUND_QUESTION,
    compound_answer,
    generate_documents,
    to_document_input,
)
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import router_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant
from tests.integration.router.stack import Engines, RouterStack

pytestmark = pytest.mark.integration

TOP = 5


@pytest.fixture
async def demo_tenant(pg_url: str, engines: Engines) -> str:
    """The briefs and call notes of the top eight accounts (three of them decoys)."""
    corpus = generate_documents()
    truth = compound_answer(corpus, n=8)
    names = {name for name, _ in truth.top}
    chosen = [d for d in corpus.documents if d.metadata.get("company") in names]
    tenant = new_tenant(pg_url, "router-scoped")
    _, summary = await ingest(
        engines.retrieval_stub, tenant, [to_document_input(d) for d in chosen]
    )
    assert summary.documents_failed == 0
    return tenant


def _window(step: pb.TrajectoryStep) -> tuple[float, float]:
    start = step.start_time.ToNanoseconds() / 1e9
    return start, start + step.duration.ToNanoseconds() / 1e9


def _cell(value: Any) -> object:
    kind = value.WhichOneof("kind")
    return getattr(value, kind) if kind else None


def _names_in(sentence: str, names: set[str]) -> set[str]:
    return {n for n in names if n in sentence}


async def test_the_set_from_sql_scopes_a_search_per_member_and_the_answer_names_them(
    router: RouterStack, engines: Engines, demo_tenant: str
) -> None:
    truth = compound_answer(generate_documents(), n=TOP)
    answer = (
        await router.stub.Ask(
            pb.AskRequest(
                tenant_id=demo_tenant,
                question=COMPOUND_QUESTION,
                options=pb.AskOptions(include_trajectory=True),
            ),
            timeout=60,
        )
    ).answer

    assert answer.route == pb.ROUTE_COMPOUND
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED, answer.text
    # The plan: SQL lists the set, the search depends on it and runs after it.
    s1, s2 = sorted(answer.plan.steps, key=lambda s: s.wave)
    assert s1.tool == pb.TOOL_SQL_QUESTION and s2.tool == pb.TOOL_SEMANTIC_SEARCH
    assert list(s2.depends_on_step_ids) == [s1.step_id] and s2.wave > s1.wave
    steps = {s.step_id: s for s in answer.trajectory}
    assert all(s.status == pb.STEP_STATUS_SUCCEEDED for s in steps.values())
    _, sql_end = _window(steps[s1.step_id])
    search_start, _ = _window(steps[s2.step_id])
    assert search_start >= sql_end
    (asked,) = engines.sql_log.of("AskQuestion")
    searches = engines.retrieval_log.of("Search")
    assert len(searches) == TOP
    assert all(asked["end"] <= s["start"] for s in searches)

    # The SQL half is the true top five, largest first, with their ids.
    (sql,) = answer.sql_results
    columns = [c.name for c in sql.result.columns]
    rows = [[_cell(v) for v in r.values] for r in sql.result.rows]
    named = [str(r[columns.index("name")]) for r in rows]
    assert named == [name for name, _ in truth.top]
    ids = {int(str(r[columns.index("company_id")])) for r in rows}

    # Each search is kept to one member's call notes, by that member's company id.
    filtered = set()
    for call in searches:
        request = call["request"]
        assert list(request.filter.categories) == [CALL_NOTE]
        filtered.add(int(request.filter.metadata["company_id"]))
    assert filtered == ids

    # Citations: the SQL fingerprint and call-note chunks of the members only.
    kinds = {c.kind for c in answer.citations}
    assert kinds == {cpb.CITATION_KIND_PASSAGE, cpb.CITATION_KIND_SQL_RESULT}
    results = [c for c in answer.citations if c.kind == cpb.CITATION_KIND_SQL_RESULT]
    assert results[0].sql_fingerprint == sql.result.fingerprint
    passages = [c for c in answer.citations if c.kind == cpb.CITATION_KIND_PASSAGE]
    assert all(c.chunk_id and c.document_id.startswith("demo-calls-") for c in passages)
    assert {int(c.document_id.rsplit("-", 1)[1]) for c in passages} <= ids

    # Exactly the right members on each side.
    everyone = set(named)
    sentences = re.split(r"(?<=[.!?])(?:\s*\[\d+\])*\s+", answer.text)
    (says,) = [s for s in sentences if s.startswith(f"Of these {TOP},")]
    (silent,) = [s for s in sentences if " not mention " in s]
    assert _names_in(says, everyone) == set(truth.mentioning)
    assert _names_in(silent, everyone) == set(truth.not_mentioning)
    assert not answer.guardrail_report.unsupported_sentences


async def test_for_the_top_entity_its_own_notes_are_summarised(
    router: RouterStack, engines: Engines, demo_tenant: str
) -> None:
    answer = (
        await router.stub.Ask(
            pb.AskRequest(
                tenant_id=demo_tenant,
                question="For the company with the most open pipeline, summarise its call notes",
                options=pb.AskOptions(include_trajectory=True),
            ),
            timeout=60,
        )
    ).answer
    truth = compound_answer(generate_documents(), n=1)
    ((top_name, _),) = truth.top
    assert answer.route == pb.ROUTE_COMPOUND, answer.text
    (search,) = engines.retrieval_log.of("Search")
    company = int(search["request"].filter.metadata["company_id"])
    passages = [c for c in answer.citations if c.kind == cpb.CITATION_KIND_PASSAGE]
    assert passages and {c.document_id for c in passages} == {f"demo-calls-{company:04d}"}
    assert top_name in answer.text
