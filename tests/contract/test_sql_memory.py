"""SqlService's answer memory through its generated stubs on a real server, the demo
warehouse and a real memory store (embedded Postgres, row-level security): TeachSql,
ListConfirmedPairs, DeleteConfirmedPair, SubmitFeedback and AskQuestion's reuse — each
success and each documented error. Questions are embedded by the real embedding service
(the real model) on loopback; "down" is that service unreachable."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from services.common import GrpcServer, Principal
from services.common.llm import GeminiProvider, LlmSettings
from services.sql import SqlSettings, TargetConfig, ensure_warehouse
from services.sql._server import SqlDeps, build_deps, create_server, ready
from services.sql.ask._llm_adapter import LlmSqlGenerator
from services.sql.memory._answers import MemorySettings, open_memory
from services.sql.memory._store import GrpcQuestionEmbedder, MemoryStore
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings
from tests.fakes.gemini import FakeGemini, Reply

TEACH = "tandem.v1.SqlService/TeachSql"
LIST = "tandem.v1.SqlService/ListConfirmedPairs"
DELETE = "tandem.v1.SqlService/DeleteConfirmedPair"
FEEDBACK = "tandem.v1.SqlService/SubmitFeedback"
ASK = "tandem.v1.SqlService/AskQuestion"

pytestmark = pytest.mark.integration

GERMANY = "How many companies are in Germany?"
GERMANY_SQL = "SELECT count(*) AS companies FROM companies WHERE country = 'Germany'"


# Nothing listens here: the embedding service is down.
NO_EMBEDDING = "127.0.0.1:1"


@dataclass
class Running:
    server: GrpcServer
    stub: pb_grpc.SqlServiceAsyncStub
    deps: SqlDeps


async def _start(
    pg_url,
    telemetry_sink,
    channel_to,
    *,
    memory=True,
    embedding_addr=NO_EMBEDDING,
    generator=None,
    memory_settings=None,
) -> Running:
    warehouse = await ensure_warehouse(pg_url)
    settings = SqlSettings(reference_date=date(2025, 6, 30))
    store: MemoryStore | None = None
    if memory:
        store = await open_memory(pg_url, settings.data_dir, MemorySettings())
    deps = await build_deps(
        settings,
        telemetry_sink("sql").telemetry,
        configs=[TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({"*"}))],
        memory=(store, GrpcQuestionEmbedder(channel_to(embedding_addr)))
        if store is not None
        else None,
        memory_settings=memory_settings,
        generator=generator,
    )
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    await ready(server, servicer, deps)
    return Running(server, pb_grpc.SqlServiceStub(channel_to(server.address)), deps)


@pytest.fixture
async def running(pg_url, embedding, telemetry_sink, channel_to) -> AsyncIterator[Running]:
    run = await _start(pg_url, telemetry_sink, channel_to, embedding_addr=embedding.server.address)
    yield run
    await run.server.stop(0)
    await run.deps.close()


def _rows(result: pb.SqlResult) -> list[list[str]]:
    return [[str(v) for v in row.values] for row in result.rows]


def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


async def _error(call: Any) -> tuple[grpc.StatusCode, list[str], str, dict[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    status = await rpc_status.aio.from_call(call)
    fields: list[str] = []
    reason, metadata = "", {}
    for detail in status.details if status else []:
        bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
        if detail.Unpack(bad):
            fields = [v.field for v in bad.field_violations]
        elif detail.Unpack(info):
            reason, metadata = info.reason, dict(info.metadata)
    return err.value.code(), fields, reason, metadata


async def _teach(stub: Any, who: str, question: str = GERMANY, sql: str = GERMANY_SQL) -> Any:
    reply = await stub.TeachSql(pb.TeachSqlRequest(tenant_id=who, question=question, sql=sql))
    return reply.pair


# --- TeachSql ---------------------------------------------------------------------------


@pytest.mark.rpc(TEACH)
async def test_teach_stores_the_gated_pair(running):
    who = tenant()
    pair = await _teach(running.stub, who)
    assert uuid.UUID(pair.pair_id)
    assert pair.database == "warehouse"
    assert pair.question == GERMANY
    assert "'Germany'" in pair.sql
    assert pair.source == pb.CONFIRMED_PAIR_SOURCE_TAUGHT
    again = await _teach(running.stub, who)  # the same question replaces, not duplicates
    listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
    assert [p.pair_id for p in listed.pairs] == [again.pair_id]


@pytest.mark.rpc(TEACH)
@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (pb.TeachSqlRequest(tenant_id="acme", question="", sql="SELECT 1"), "question"),
        (pb.TeachSqlRequest(tenant_id="acme", question="q" * 2001, sql="SELECT 1"), "question"),
        (pb.TeachSqlRequest(tenant_id="acme", question="q", sql=""), "sql"),
        (pb.TeachSqlRequest(tenant_id="", question="q", sql="SELECT 1"), "tenant_id"),
        (pb.TeachSqlRequest(tenant_id="acme", database="nope", question="q", sql="SELECT 1"),
         "database"),
    ],
)  # fmt: skip
async def test_teach_invalid_arguments(running, request_, field):
    code, fields, _, _ = await _error(running.stub.TeachSql(request_))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert fields == [field]


@pytest.mark.rpc(TEACH)
async def test_teach_refuses_what_the_gate_refuses_naming_the_rule(running):
    who = tenant()
    call = running.stub.TeachSql(
        pb.TeachSqlRequest(tenant_id=who, question="wipe", sql="DELETE FROM companies")
    )
    code, fields, reason, metadata = await _error(call)
    assert (code, fields, reason) == (grpc.StatusCode.INVALID_ARGUMENT, ["sql"], "SQL_REJECTED")
    assert metadata["rule"] == "SQL_GATE_RULE_QUERY_ROOT"
    listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
    assert not listed.pairs


@pytest.mark.rpc(TEACH)
async def test_teach_without_the_embedding_service_is_unavailable(
    pg_url, telemetry_sink, channel_to
):
    run = await _start(pg_url, telemetry_sink, channel_to)  # no embedding service
    try:
        code, _, reason, _ = await _error(
            run.stub.TeachSql(pb.TeachSqlRequest(tenant_id="acme", question="q", sql="SELECT 1"))
        )
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "EMBEDDING_UNAVAILABLE")
        # Reads fail open: AskQuestion still answers through the normal pipeline.
        reply = await run.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=GERMANY)
        )
        assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
        assert not reply.HasField("confirmed_pair")
    finally:
        await run.server.stop(0)
        await run.deps.close()


@pytest.mark.rpc(TEACH)
@pytest.mark.rpc(LIST)
@pytest.mark.rpc(DELETE)
@pytest.mark.rpc(FEEDBACK)
async def test_every_memory_rpc_is_failed_precondition_when_the_memory_is_off(
    pg_url, telemetry_sink, channel_to
):
    run = await _start(pg_url, telemetry_sink, channel_to, memory=False)
    try:
        for call in (
            run.stub.TeachSql(pb.TeachSqlRequest(tenant_id="acme", question="q", sql="SELECT 1")),
            run.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id="acme")),
            run.stub.DeleteConfirmedPair(
                pb.DeleteConfirmedPairRequest(tenant_id="acme", pair_id=str(uuid.uuid4()))
            ),
            run.stub.SubmitFeedback(
                pb.SubmitFeedbackRequest(
                    tenant_id="acme", answer_id=str(uuid.uuid4()),
                    rating=pb.FEEDBACK_RATING_HELPFUL,
                )
            ),
        ):  # fmt: skip
            code, _, reason, _ = await _error(call)
            assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "MEMORY_DISABLED")
        reply = await run.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=GERMANY)
        )
        assert reply.answer_id == ""
    finally:
        await run.server.stop(0)
        await run.deps.close()


# --- ListConfirmedPairs -----------------------------------------------------------------


@pytest.mark.rpc(LIST)
async def test_list_pages_newest_first_and_only_the_tenants_pairs(running):
    who, other = tenant(), tenant()
    taught = [
        await _teach(running.stub, who, f"How many companies are in {country}?",
                     f"SELECT count(*) FROM companies WHERE country = '{country}'")
        for country in ("Germany", "France", "Spain")
    ]  # fmt: skip
    await _teach(running.stub, other)
    first = await running.stub.ListConfirmedPairs(
        pb.ListConfirmedPairsRequest(tenant_id=who, page_size=2)
    )
    assert first.next_page_token
    second = await running.stub.ListConfirmedPairs(
        pb.ListConfirmedPairsRequest(tenant_id=who, page_size=2, page_token=first.next_page_token)
    )
    assert not second.next_page_token
    listed = [p.pair_id for p in [*first.pairs, *second.pairs]]
    assert listed == [p.pair_id for p in reversed(taught)]
    scoped = await running.stub.ListConfirmedPairs(
        pb.ListConfirmedPairsRequest(tenant_id=who, database="warehouse")
    )
    assert len(scoped.pairs) == 3


@pytest.mark.rpc(LIST)
@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (pb.ListConfirmedPairsRequest(tenant_id="acme", page_size=-1), "page_size"),
        (pb.ListConfirmedPairsRequest(tenant_id="acme", page_size=1001), "page_size"),
        (pb.ListConfirmedPairsRequest(tenant_id="acme", page_token="not-a-token"), "page_token"),
        (pb.ListConfirmedPairsRequest(tenant_id="ACME"), "tenant_id"),
        (pb.ListConfirmedPairsRequest(tenant_id="acme", database="nope"), "database"),
    ],
)
async def test_list_invalid_arguments(running, request_, field):
    code, fields, _, _ = await _error(running.stub.ListConfirmedPairs(request_))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


# --- DeleteConfirmedPair ----------------------------------------------------------------


@pytest.mark.rpc(DELETE)
async def test_delete_removes_the_pair_and_ask_stops_reusing_it(running):
    who = tenant()
    pair = await _teach(running.stub, who)
    reply = await running.stub.DeleteConfirmedPair(
        pb.DeleteConfirmedPairRequest(tenant_id=who, pair_id=pair.pair_id)
    )
    assert reply.deleted
    ask = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=who, question="How many companies are in France?")
    )
    assert not ask.HasField("confirmed_pair")
    missing = await running.stub.DeleteConfirmedPair(
        pb.DeleteConfirmedPairRequest(tenant_id=who, pair_id=pair.pair_id, allow_missing=True)
    )
    assert not missing.deleted


@pytest.mark.rpc(DELETE)
async def test_delete_another_tenants_pair_is_not_found_and_keeps_it(running):
    owner, intruder = tenant(), tenant()
    pair = await _teach(running.stub, owner)
    code, _, reason, _ = await _error(
        running.stub.DeleteConfirmedPair(
            pb.DeleteConfirmedPairRequest(tenant_id=intruder, pair_id=pair.pair_id)
        )
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "CONFIRMED_PAIR_NOT_FOUND")
    listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=owner))
    assert [p.pair_id for p in listed.pairs] == [pair.pair_id]


@pytest.mark.rpc(DELETE)
@pytest.mark.parametrize("pair_id", ["", "not-a-uuid"])
async def test_delete_invalid_pair_id(running, pair_id):
    code, fields, _, _ = await _error(
        running.stub.DeleteConfirmedPair(
            pb.DeleteConfirmedPairRequest(tenant_id="acme", pair_id=pair_id)
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["pair_id"])


# --- AskQuestion with the memory --------------------------------------------------------


@pytest.mark.rpc(ASK)
async def test_ask_reuses_a_confirmed_pair_with_the_new_value_and_cites_it(running):
    who = tenant()
    pair = await _teach(running.stub, who)
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=who, question="How many companies are in France?")
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    assert reply.confirmed_pair.pair_id == pair.pair_id
    assert reply.confirmed_pair.mode == pb.CONFIRMED_PAIR_MODE_ADAPTED
    assert reply.confirmed_pair.substitutions == 1
    assert [(r.before, r.after) for r in reply.confirmed_pair.replaced] == [("Germany", "France")]
    assert "'France'" in reply.result.sql and "Germany" not in reply.result.sql
    [citation] = reply.citations
    assert citation.kind == cpb.CITATION_KIND_CONFIRMED_PAIR
    assert citation.confirmed_pair_id == pair.pair_id
    assert citation.sql_fingerprint == reply.result.fingerprint
    assert uuid.UUID(reply.answer_id)
    # Another tenant asking the same thing never sees the pair.
    stranger = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=tenant(), question="How many companies are in France?")
    )
    assert not stranger.HasField("confirmed_pair")
    # The reuse is counted with the answer, once, for the owner only.
    listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
    assert [(p.pair_id, p.use_count) for p in listed.pairs] == [(pair.pair_id, 1)]


@pytest.mark.rpc(ASK)
async def test_a_value_the_replaced_column_does_not_store_is_not_a_swap(running):
    who = tenant()
    await _teach(running.stub, who)
    # Same template, a value no company's country holds: the reuse would answer 0 with
    # confidence; the memory probes the column and lets the pipeline answer instead.
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=who, question="How many companies are in Atlantis?")
    )
    assert not reply.HasField("confirmed_pair")
    stored = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=who, question="How many companies are in Japan?")
    )
    assert stored.HasField("confirmed_pair") and "'Japan'" in stored.result.sql


@pytest.mark.rpc(ASK)
async def test_ask_with_no_matching_pair_runs_the_pipeline_unchanged(running):
    who = tenant()
    await _teach(running.stub, who)
    reply = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=who, question="How many contacts are there?")
    )
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    assert not reply.HasField("confirmed_pair") and not reply.citations
    assert "contacts" in reply.result.sql


@pytest.mark.rpc(ASK)
async def test_with_a_model_the_nearest_pairs_are_few_shot_examples_and_named(
    pg_url, embedding, telemetry_sink, channel_to
):
    with FakeGemini() as gemini:
        generator = LlmSqlGenerator(GeminiProvider(LlmSettings(
            api_key="k", base_url=gemini.base_url, timeout_s=5.0, max_retries=0)))  # fmt: skip
        # A reworded question below the paraphrase bar: not adapted offline, but near.
        run = await _start(pg_url, telemetry_sink, channel_to, generator=generator,
                           embedding_addr=embedding.server.address,
                           memory_settings=MemorySettings(paraphrase_similarity=0.99))  # fmt: skip
        try:
            who = tenant()
            running_stub = run.stub
            pair = await _teach(running_stub, who)
            gemini.script("understand_sql", Reply.json({"restatement": "Count companies."}))
            gemini.script("identify_tables", Reply.json({"tables": ["companies"]}))
            gemini.script("generate_sql", Reply.json({"sql": GERMANY_SQL}))
            reply = await running_stub.AskQuestion(
                pb.AskQuestionRequest(
                    tenant_id=who, question="How many companies located in Germany?"
                )
            )
            assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
            assert reply.confirmed_pair.pair_id == pair.pair_id
            assert reply.confirmed_pair.mode == pb.CONFIRMED_PAIR_MODE_FEW_SHOT
            (request,) = gemini.requests_for("generate_sql")
            assert "CONFIRMED EXAMPLES" in str(request.body) and GERMANY in str(request.body)
        finally:
            await run.server.stop(0)
            await run.deps.close()
            await generator.aclose()


# --- SubmitFeedback ---------------------------------------------------------------------


async def _ask(stub: Any, who: str, question: str = GERMANY) -> Any:
    return await stub.AskQuestion(pb.AskQuestionRequest(tenant_id=who, question=question))


@pytest.mark.rpc(FEEDBACK)
async def test_helpful_feedback_confirms_the_answer_for_reuse(running):
    who = tenant()
    answer = await _ask(running.stub, who)
    assert answer.outcome == pb.SQL_ASK_OUTCOME_ANSWERED and answer.answer_id
    reply = await running.stub.SubmitFeedback(
        pb.SubmitFeedbackRequest(
            tenant_id=who, answer_id=answer.answer_id, rating=pb.FEEDBACK_RATING_HELPFUL,
            note="exactly right",
        )
    )  # fmt: skip
    assert uuid.UUID(reply.feedback_id)
    assert reply.pair.source == pb.CONFIRMED_PAIR_SOURCE_HELPFUL
    assert reply.pair.question == GERMANY
    assert reply.pair.sql == answer.result.sql
    again = await _ask(running.stub, who, "How many companies are in Spain?")
    assert again.confirmed_pair.pair_id == reply.pair.pair_id


@pytest.mark.rpc(FEEDBACK)
async def test_wrong_feedback_with_a_correction_stores_the_corrected_statement(running):
    who = tenant()
    answer = await _ask(running.stub, who, "How many companies are there in Germany?")
    corrected = "SELECT count(DISTINCT company_id) FROM companies WHERE country = 'Germany'"
    reply = await running.stub.SubmitFeedback(
        pb.SubmitFeedbackRequest(
            tenant_id=who, answer_id=answer.answer_id, rating=pb.FEEDBACK_RATING_WRONG,
            corrected_sql=corrected,
        )
    )  # fmt: skip
    assert reply.pair.source == pb.CONFIRMED_PAIR_SOURCE_CORRECTED
    assert "DISTINCT" in reply.pair.sql
    plain = await running.stub.SubmitFeedback(
        pb.SubmitFeedbackRequest(
            tenant_id=who, answer_id=answer.answer_id, rating=pb.FEEDBACK_RATING_WRONG
        )
    )
    assert plain.feedback_id and not plain.HasField("pair")


@pytest.mark.rpc(FEEDBACK)
async def test_a_refused_correction_names_the_rule_and_stores_nothing(running):
    who = tenant()
    answer = await _ask(running.stub, who)
    code, fields, reason, metadata = await _error(
        running.stub.SubmitFeedback(
            pb.SubmitFeedbackRequest(
                tenant_id=who, answer_id=answer.answer_id, rating=pb.FEEDBACK_RATING_WRONG,
                corrected_sql="SELECT pg_sleep(10)",
            )
        )
    )  # fmt: skip
    assert (code, fields, reason) == (
        grpc.StatusCode.INVALID_ARGUMENT, ["corrected_sql"], "SQL_REJECTED"
    )  # fmt: skip
    assert metadata["rule"] == "SQL_GATE_RULE_FUNCTION_NOT_ALLOWED"
    listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
    assert not listed.pairs


@pytest.mark.rpc(FEEDBACK)
async def test_feedback_on_another_tenants_answer_is_not_found(running):
    owner, intruder = tenant(), tenant()
    answer = await _ask(running.stub, owner)
    for request in (
        pb.SubmitFeedbackRequest(tenant_id=intruder, answer_id=answer.answer_id,
                                 rating=pb.FEEDBACK_RATING_HELPFUL),
        # A correction on another tenant's answer stores nothing for either tenant.
        pb.SubmitFeedbackRequest(tenant_id=intruder, answer_id=answer.answer_id,
                                 rating=pb.FEEDBACK_RATING_WRONG, corrected_sql=GERMANY_SQL),
        pb.SubmitFeedbackRequest(tenant_id=owner, answer_id=str(uuid.uuid4()),
                                 rating=pb.FEEDBACK_RATING_HELPFUL),
    ):  # fmt: skip
        code, _, reason, _ = await _error(running.stub.SubmitFeedback(request))
        assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "ANSWER_NOT_FOUND")
    for who in (intruder, owner):
        listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
        assert not listed.pairs


@pytest.mark.rpc(FEEDBACK)
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"answer_id": ""}, "answer_id"),
        ({"answer_id": "nope"}, "answer_id"),
        ({"rating": 0}, "rating"),
        ({"rating": 7}, "rating"),
        ({"note": "n" * 501}, "note"),
        ({"corrected_sql": "SELECT 1"}, "corrected_sql"),  # with HELPFUL
        ({"corrected_sql": "x" * 20_001, "rating": 2}, "corrected_sql"),
    ],
)
async def test_feedback_invalid_arguments(running, changes, field):
    request = pb.SubmitFeedbackRequest(
        tenant_id="acme", answer_id=str(uuid.uuid4()), rating=pb.FEEDBACK_RATING_HELPFUL
    )
    for name, value in changes.items():
        setattr(request, name, value)
    code, fields, _, _ = await _error(running.stub.SubmitFeedback(request))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


# --- principals inside a tenant (issue 47) ----------------------------------------------
# Plaintext internal calls: the principal headers alone say whom the call is for (with
# mutual TLS the caller guard also checks them against the signed token).

ALICE = Principal.of("alice", ["sales"], {"region": "EMEA"}).headers()
BOB = Principal.of("bob", ["sales"], {"region": "US"}).headers()


@pytest.mark.rpc(TEACH)
@pytest.mark.rpc(LIST)
async def test_a_pair_says_who_taught_it_and_a_principal_lists_its_own_and_the_services(
    running,
):
    who = tenant()
    service = await _teach(running.stub, who, "How many companies are in France?",
                           "SELECT count(*) FROM companies WHERE country = 'France'")  # fmt: skip
    reply = await running.stub.TeachSql(
        pb.TeachSqlRequest(tenant_id=who, question=GERMANY, sql=GERMANY_SQL), metadata=ALICE
    )
    assert (service.taught_by, reply.pair.taught_by) == ("", "alice")

    async def listed(metadata: Any = None) -> set[str]:
        reply = await running.stub.ListConfirmedPairs(
            pb.ListConfirmedPairsRequest(tenant_id=who), metadata=metadata
        )
        return {p.pair_id for p in reply.pairs}

    assert await listed() == {service.pair_id, reply.pair.pair_id}
    assert await listed(ALICE) == {service.pair_id, reply.pair.pair_id}
    assert await listed(BOB) == {service.pair_id}  # alice's question is not bob's to read


@pytest.mark.rpc(TEACH)
@pytest.mark.rpc(LIST)
async def test_a_question_another_principal_taught_is_taught_as_a_fresh_one(running):
    """Teaching must not tell bob that alice taught the same question (a reason naming
    "someone else" did): his pair is stored beside hers, as any question he teaches
    first; each teacher replaces only their own, and each lists only their own."""
    who = tenant()

    async def teach(question: str, sql: str, metadata: Any = None) -> Any:
        reply = await running.stub.TeachSql(
            pb.TeachSqlRequest(tenant_id=who, question=question, sql=sql), metadata=metadata
        )
        return reply.pair

    async def listed(metadata: Any = None) -> dict[str, tuple[str, str]]:
        reply = await running.stub.ListConfirmedPairs(
            pb.ListConfirmedPairsRequest(tenant_id=who), metadata=metadata
        )
        return {p.pair_id: (p.question, p.sql) for p in reply.pairs}

    alices = await teach(GERMANY, GERMANY_SQL, ALICE)
    bobs = await teach(GERMANY, "SELECT 1 AS companies", BOB)
    fresh = await teach("How many companies are in France?", "SELECT 2 AS companies", BOB)
    for pair in (bobs, fresh):  # the same reply whether or not alice taught it first
        assert (pair.taught_by, pair.use_count, pair.source) == (
            "bob", 0, pb.CONFIRMED_PAIR_SOURCE_TAUGHT
        )  # fmt: skip
    assert bobs.pair_id != alices.pair_id
    assert await listed(ALICE) == {alices.pair_id: (GERMANY, alices.sql)}
    assert set(await listed(BOB)) == {bobs.pair_id, fresh.pair_id}
    # Its teacher replaces its own (the same pair), no one else's.
    again = await teach(GERMANY, GERMANY_SQL, BOB)
    assert again.pair_id == bobs.pair_id and again.sql != bobs.sql
    assert await listed(ALICE) == {alices.pair_id: (GERMANY, alices.sql)}
    # A service key's teaching is its own too; it lists every pair.
    service = await _teach(running.stub, who)
    assert service.taught_by == ""
    assert set(await listed()) == {alices.pair_id, bobs.pair_id, fresh.pair_id, service.pair_id}


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(FEEDBACK)
async def test_a_principal_is_answered_as_if_no_other_principal_had_taught_anything(running):
    """alice's pair is hers: bob's question is answered exactly as in a tenant where
    nobody taught it (no reused pair, the same statement), his HELPFUL rating stores his
    own pair as it would there, and alice's pair counts none of bob's questions."""
    who, nobody = tenant(), tenant()
    alices = (
        await running.stub.TeachSql(
            pb.TeachSqlRequest(tenant_id=who, question=GERMANY, sql="SELECT 7 AS companies"),
            metadata=ALICE,
        )
    ).pair
    replies = {}
    for where in (who, nobody):
        replies[where] = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id=where, question=GERMANY), metadata=BOB
        )
    assert replies[who].outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    assert not replies[who].HasField("confirmed_pair")
    assert not replies[who].citations
    assert replies[who].result.sql == replies[nobody].result.sql
    assert _rows(replies[who].result) == _rows(replies[nobody].result)
    assert replies[who].interpretation == replies[nobody].interpretation
    rated = {}
    for where in (who, nobody):
        rated[where] = await running.stub.SubmitFeedback(
            pb.SubmitFeedbackRequest(
                tenant_id=where,
                answer_id=replies[where].answer_id,
                rating=pb.FEEDBACK_RATING_HELPFUL,
            ),
            metadata=BOB,
        )
    assert rated[who].pair.taught_by == rated[nobody].pair.taught_by == "bob"
    assert rated[who].pair.sql == rated[nobody].pair.sql
    listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
    uses = {p.pair_id: p.use_count for p in listed.pairs}
    assert uses == {alices.pair_id: 0, rated[who].pair.pair_id: 0}


@pytest.mark.rpc(ASK)
@pytest.mark.rpc(LIST)
async def test_a_principal_is_not_told_how_often_others_reused_a_shared_pair(running):
    """A service key's pair is reused for every principal; its count of uses, listed to
    bob, would tell him how often others asked: he sees 0, a service key the count."""
    who = tenant()
    service = await _teach(running.stub, who)
    for _ in range(2):
        reply = await running.stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id=who, question="How many companies are in France?"),
            metadata=ALICE,
        )
        assert reply.confirmed_pair.pair_id == service.pair_id

    async def uses(metadata: Any = None) -> list[int]:
        reply = await running.stub.ListConfirmedPairs(
            pb.ListConfirmedPairsRequest(tenant_id=who), metadata=metadata
        )
        return [p.use_count for p in reply.pairs]

    assert await uses() == [2]
    assert await uses(BOB) == [0]


@pytest.mark.rpc(DELETE)
async def test_a_principal_deletes_only_its_own_pairs(running):
    who = tenant()
    alices = (
        await running.stub.TeachSql(
            pb.TeachSqlRequest(tenant_id=who, question=GERMANY, sql=GERMANY_SQL),
            metadata=ALICE,
        )
    ).pair
    services = await _teach(running.stub, who, "How many companies are in France?",
                            "SELECT count(*) FROM companies WHERE country = 'France'")  # fmt: skip
    # Another principal's pair: exactly as a missing one.
    missing = str(uuid.uuid4())
    for pair_id in (alices.pair_id, missing):
        code, _, reason, _ = await _error(
            running.stub.DeleteConfirmedPair(
                pb.DeleteConfirmedPairRequest(tenant_id=who, pair_id=pair_id), metadata=BOB
            )
        )
        assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "CONFIRMED_PAIR_NOT_FOUND")
    # A service key's pair is listed to bob but is not his to delete.
    code, _, reason, _ = await _error(
        running.stub.DeleteConfirmedPair(
            pb.DeleteConfirmedPairRequest(tenant_id=who, pair_id=services.pair_id),
            metadata=BOB,
        )
    )
    assert (code, reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "CONFIRMED_PAIR_TAUGHT_BY_ANOTHER",
    )
    await running.stub.DeleteConfirmedPair(
        pb.DeleteConfirmedPairRequest(tenant_id=who, pair_id=alices.pair_id), metadata=ALICE
    )
    listed = await running.stub.ListConfirmedPairs(pb.ListConfirmedPairsRequest(tenant_id=who))
    assert [p.pair_id for p in listed.pairs] == [services.pair_id]


@pytest.mark.rpc(FEEDBACK)
async def test_feedback_on_another_principals_answer_is_not_found_and_pairs_name_the_giver(
    running,
):
    who = tenant()
    answer = await running.stub.AskQuestion(
        pb.AskQuestionRequest(tenant_id=who, question=GERMANY), metadata=ALICE
    )
    assert answer.answer_id
    code, _, reason, _ = await _error(
        running.stub.SubmitFeedback(
            pb.SubmitFeedbackRequest(
                tenant_id=who, answer_id=answer.answer_id, rating=pb.FEEDBACK_RATING_HELPFUL
            ),
            metadata=BOB,
        )
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "ANSWER_NOT_FOUND")
    mine = await running.stub.SubmitFeedback(
        pb.SubmitFeedbackRequest(
            tenant_id=who, answer_id=answer.answer_id, rating=pb.FEEDBACK_RATING_HELPFUL
        ),
        metadata=ALICE,
    )
    assert mine.pair.taught_by == "alice"
